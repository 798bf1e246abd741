package lockstore

import "database/sql"

// TablePrivileges names the grants a role lacks on the plugin's own tables
// beside the lock table (PostgreSQL), so db.Use names them up front.
type TablePrivileges interface {
	// MissingTablePrivileges is a GRANT for each existing table this role may
	// not use fully, and for its id sequence without USAGE.
	MissingTablePrivileges(c Conn, tables []string) ([]string, error)
}

func (s *postgresStore) MissingTablePrivileges(c Conn, tables []string) ([]string, error) {
	c = s.observed(c)
	there, err := queryStrings(c, `SELECT t FROM unnest($1::text[]) t WHERE pg_catalog.to_regclass(t) IS NOT NULL`, tables)
	if err != nil || len(there) == 0 {
		return nil, err
	}
	var missing []string
	_, err = c.Query(`SELECT 'GRANT SELECT, INSERT, UPDATE, DELETE ON ' || t FROM unnest($1::text[]) t
			WHERE NOT (has_table_privilege(t, 'SELECT') AND has_table_privilege(t, 'INSERT') AND has_table_privilege(t, 'UPDATE') AND has_table_privilege(t, 'DELETE'))
		UNION ALL SELECT 'GRANT USAGE ON SEQUENCE ' || q FROM unnest($1::text[]) t, pg_catalog.pg_get_serial_sequence(t, 'id') q
			WHERE q IS NOT NULL AND NOT has_sequence_privilege(q, 'USAGE')`, []any{there}, func(r *sql.Rows) error {
		var g string
		err := r.Scan(&g)
		missing = append(missing, g)
		return err
	})
	return missing, err
}
