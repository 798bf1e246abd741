package lockstore

import "database/sql"

// TablePrivileges is a store that names the grants a role lacks on the
// tables beside the lock table that the plugin's features write (the
// notes table), so that db.Use names them rather than the first TakeOver
// failing with a bare "permission denied". PostgreSQL only: on MySQL and
// MariaDB the application's documented grant is on the whole database.
type TablePrivileges interface {
	// MissingTablePrivileges returns a GRANT for each of tables (quoted
	// names) that exists and that this role may not SELECT, INSERT,
	// UPDATE and DELETE, and for its serial id sequence without USAGE.
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
