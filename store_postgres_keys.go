package offlinelock

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm/schema"
)

var _ keyColumnChecker = (*postgresStore)(nil)

// CheckKeyColumns refuses a lockable model whose text key column the
// database compares inexactly where the model's key kind spells exactly:
// a nondeterministic (ICU) collation takes "ABC" and "abc", or "é" and
// "e", as one row, by rules only ICU knows, so no spelling of the lock
// table can follow it; citext folds case, which the plugin spells (kindFold)
// only when the model declares it. A table not created yet passes until it
// exists: it has no rows to write.
func (s *postgresStore) CheckKeyColumns(c conn, m *model) error {
	fields, kinds := m.pk, m.kinds
	if m.root != nil {
		fields, kinds = []*schema.Field{m.root.field}, []keyKind{kindOf(m.root.field)}
	}
	textual := func(k keyKind) bool { return k == kindText || k == kindFold || k == kindChar }
	if _, ok := s.keysOK.Load(m.table); ok || !slices.ContainsFunc(kinds, textual) {
		return nil
	}
	type column struct {
		base, collation string
		deterministic   bool
	}
	cols := map[string]column{}
	_, err := c.query(`SELECT lower(a.attname), format_type(coalesce(nullif(t.typbasetype, 0), t.oid), NULL), coalesce(co.collname, ''), coalesce(co.collisdeterministic, true)
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_collation co ON co.oid = a.attcollation
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, []any{pgQuote(m.table)},
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
	for i, f := range fields {
		col, ok := cols[strings.ToLower(f.DBName)]
		switch {
		case !ok || !textual(kinds[i]):
		case !col.deterministic:
			return fmt.Errorf("%w: key column %s.%s has the nondeterministic collation %q, which takes spellings the lock table keeps apart as one row by ICU's rules; "+
				"give the key column a deterministic collation (the default), or, for keys that ignore letter case, declare it gorm:\"type:citext\"",
				ErrInvalid, m.table, f.DBName, col.collation)
		case col.base == "citext" && kinds[i] != kindFold:
			return fmt.Errorf("%w: key column %s.%s is citext, which ignores letter case, but model %s declares it as case-sensitive text; declare it gorm:\"type:citext\"",
				ErrInvalid, m.table, f.DBName, m.name)
		}
	}
	s.keysOK.Store(m.table, true)
	return nil
}
