package lockstore

import (
	"database/sql"
	"strings"
)

// The privileges an install or removal needs, checked before any change
// (MySQL's DDL commits as it goes), each lack named with its grant.

// mysqlInstallPrivileges are what an install uses on the database.
var mysqlInstallPrivileges = []string{"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "TRIGGER", "CREATE VIEW", "CREATE ROUTINE", "ALTER ROUTINE"}

// mysqlRemovePrivileges are what a removal uses.
var mysqlRemovePrivileges = []string{"SELECT", "TRIGGER", "DROP", "ALTER ROUTINE"}

// MissingGuardPrivileges names what this user lacks on the database (or
// globally) to install, or remove, the guard; table grants do not count.
func (s *mysqlStore) MissingGuardPrivileges(c Conn, _ []string, remove bool) ([]string, error) {
	c = s.observed(c)
	want := mysqlInstallPrivileges
	if remove {
		want = mysqlRemovePrivileges
	}
	var user, role, db string
	if _, err := c.Query(`SELECT CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), ''''),
		COALESCE(CONCAT('''', CURRENT_ROLE(), ''''), ''), DATABASE()`, nil, func(r *sql.Rows) error {
		return r.Scan(&user, &role, &db)
	}); err != nil {
		return nil, err
	}
	have := map[string]bool{}
	_, err := c.Query(`SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE IN (?, ?)
		UNION SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE IN (?, ?) AND TABLE_SCHEMA = ?`,
		[]any{user, role, user, role, db}, func(r *sql.Rows) error {
			var p string
			err := r.Scan(&p)
			have[p] = true
			return err
		})
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, p := range want {
		if !have[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	return []string{"the " + strings.Join(missing, ", ") + " privileges on database " + db +
		" (GRANT " + strings.Join(missing, ", ") + " ON " + s.Quote(db) + ".* TO " + user + ")"}, nil
}

// MissingGuardPrivileges names what this role lacks to install (or remove)
// the guard: CREATE on the lock table's schema, and ownership of each table,
// the lock table and, on removal, the guard's functions and order table.
func (s *postgresStore) MissingGuardPrivileges(c Conn, tables []string, remove bool) ([]string, error) {
	c = s.observed(c)
	var missing []string
	add := func(r *sql.Rows) error {
		var m string
		err := r.Scan(&m)
		missing = append(missing, m)
		return err
	}
	quoted := []string{s.table}
	for _, t := range tables {
		quoted = append(quoted, pgQuote(t))
	}
	_, err := c.Query(`SELECT format('ownership of table %s (ALTER TABLE %s OWNER TO %I, or GRANT %I TO %I)', t, t, current_user, r.rolname, current_user)
		FROM unnest($1::text[]) t JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass(t) JOIN pg_catalog.pg_roles r ON r.oid = c.relowner
		WHERE NOT pg_catalog.pg_has_role(c.relowner, 'USAGE')`, []any{quoted}, add)
	if err != nil {
		return nil, err
	}
	if remove {
		_, err = c.Query(`SELECT format('ownership of %s %s (GRANT %I TO %I)', CASE WHEN o.kind = 'f' THEN 'function' ELSE 'table' END, o.name, r.rolname, current_user)
			FROM (SELECT 'f' AS kind, p.oid::regprocedure::text AS name, p.proowner AS owner FROM pg_catalog.pg_proc p WHERE p.proname LIKE $1
					AND p.pronamespace = (SELECT t.relnamespace FROM pg_catalog.pg_class t WHERE t.oid = pg_catalog.to_regclass($3))
				UNION ALL SELECT 't', c.oid::regclass::text, c.relowner FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($2)) o
			JOIN pg_catalog.pg_roles r ON r.oid = o.owner WHERE NOT pg_catalog.pg_has_role(o.owner, 'USAGE') ORDER BY 1`,
			[]any{strings.ReplaceAll(s.guardPrefix(), "_", `\_`) + `\_%`, s.orderTable(s.table), s.table}, add)
		return missing, err
	}
	_, err = c.Query(`SELECT format('CREATE on schema %I (GRANT CREATE ON SCHEMA %I TO %I)', n, n, current_user)
		FROM (SELECT coalesce((SELECT n.nspname FROM pg_catalog.pg_class t JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
			WHERE t.oid = pg_catalog.to_regclass($1)), current_schema()) AS n) s WHERE NOT has_schema_privilege(n, 'CREATE')`, []any{s.table}, add)
	return missing, err
}
