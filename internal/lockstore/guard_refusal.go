package lockstore

// The guard's refusal names the holder and the lock's times unless the
// catalog row guardRefusalName says "record" (an application that must not
// tell other services who edits what). A row, not a routine variant, so
// nodes that disagree do not replace each other's guard.

const guardRefusalName = guardRowPrefix + "guard refusal"

// refusalRecordOnly makes the guard name the record only.
const refusalRecordOnly = "record"

// SetRefusal makes refusals name the record only, or the holder and times too.
func (t *sqlStore) SetRefusal(c Conn, recordOnly bool) error {
	c = t.observed(c)
	if !recordOnly {
		_, err := c.Exec(t.bind(`DELETE FROM `+t.catalog+` WHERE name = ?`), guardRefusalName)
		return err
	}
	return t.Remember(c, []CatalogRow{{Name: guardRefusalName, Spec: []byte(refusalRecordOnly)}})
}

// refusalHidesHolder is true where the catalog says refusals name the record only.
func refusalHidesHolder(catalog string) string {
	return "EXISTS (SELECT 1 FROM " + catalog + " WHERE name = " + sqlLiteral(guardRefusalName) + " AND spec = " + sqlLiteral(refusalRecordOnly) + ")"
}
