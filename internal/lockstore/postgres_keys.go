package lockstore

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// CheckKeyColumns refuses a text key column the database compares
// inexactly where the key kind spells exactly: a nondeterministic collation
// merges rows by ICU's rules; citext folds case (KindFold only if declared).
// A table not created yet passes.
func (s *postgresStore) CheckKeyColumns(c Conn, m KeyColumns) error {
	c = s.observed(c)
	if _, ok := s.keysOK.Load(m.Table); ok || !slices.ContainsFunc(m.Kinds, KeyKind.textual) {
		return nil
	}
	type column struct {
		base, collation string
		deterministic   bool
	}
	cols := map[string]column{}
	_, err := c.Query(`SELECT lower(a.attname), format_type(coalesce(nullif(t.typbasetype, 0), t.oid), NULL), coalesce(co.collname, ''), coalesce(co.collisdeterministic, true)
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_collation co ON co.oid = a.attcollation
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, []any{pgQuote(m.Table)},
		func(r *sql.Rows) error {
			var name string
			var col column
			err := r.Scan(&name, &col.base, &col.collation, &col.deterministic)
			cols[name] = col
			return err
		})
	if err != nil || len(cols) == 0 {
		return err
	}
	for i, name := range m.Columns {
		col, ok := cols[strings.ToLower(name)]
		switch {
		case !ok || !m.Kinds[i].textual():
		case !col.deterministic:
			return fmt.Errorf("%w: key column %s.%s has the nondeterministic collation %q, which takes spellings the lock table keeps apart as one row by ICU's rules; "+
				"give the key column a deterministic collation (the default), or, for keys that ignore letter case, declare it gorm:\"type:citext\"",
				ErrInvalid, m.Table, name, col.collation)
		case col.base == "citext" && m.Kinds[i] != KindFold:
			return fmt.Errorf("%w: key column %s.%s is citext, which ignores letter case, but model %s declares it as case-sensitive text; declare it gorm:\"type:citext\"",
				ErrInvalid, m.Table, name, m.Model)
		}
	}
	s.keysOK.Store(m.Table, true)
	return nil
}
