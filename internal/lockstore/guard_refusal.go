package lockstore

// What the guard's refusal tells. By default its message names the
// record's holder (user name) and the lock's times: what a holder's
// colleague needs to see. Any role whose write is refused reads it, so an
// application that must not tell other services who edits what sets the
// catalog's row guardRefusalName to "record": the guard's routines read it
// when they refuse (never on a write they let through), and the message
// then names the record only ("… is locked by another session"). A row,
// not a variant of the routines: nodes that disagree would otherwise
// replace each other's guard; with a row the last node to start decides.

const guardRefusalName = guardRowPrefix + "guard refusal"

// refusalRecordOnly is the spec of guardRefusalName that makes the guard
// name the record only.
const refusalRecordOnly = "record"

// SetRefusal makes the guard's refusals name the record only (recordOnly)
// or its holder and the lock's times too (the default).
func (t *sqlStore) SetRefusal(c Conn, recordOnly bool) error {
	c = t.observed(c)
	if !recordOnly {
		_, err := c.Exec(t.bind(`DELETE FROM `+t.catalog+` WHERE name = ?`), guardRefusalName)
		return err
	}
	return t.Remember(c, []CatalogRow{{Name: guardRefusalName, Spec: []byte(refusalRecordOnly)}})
}

// refusalHidesHolder is the SQL condition, true where the catalog (its
// name, qualified) says refusals name the record only.
func refusalHidesHolder(catalog string) string {
	return "EXISTS (SELECT 1 FROM " + catalog + " WHERE name = " + sqlLiteral(guardRefusalName) + " AND spec = " + sqlLiteral(refusalRecordOnly) + ")"
}
