package lockstore

import (
	"database/sql"
	"regexp"
	"strings"
)

// Whether a PostgreSQL guard is in place is read from its definitions, not
// from a version comment a role with the right to replace a function could
// keep: each function the guard's statements create must exist with the
// same body, running with its owner's rights and its own search_path, and
// each trigger must exist and be enabled. Then a role that may not create
// them (a least-privileged application role) verifies instead of
// creating, and a routine replaced by a no-op, or a trigger disabled, is
// repaired by the next install.

var (
	pgFunctionDef = regexp.MustCompile(`(?s)^CREATE OR REPLACE FUNCTION (\S+?)\((.*?)\) RETURNS .*? AS \$offlinelock\$(.*)\$offlinelock\$$`)
	pgTriggerDef  = regexp.MustCompile(`^CREATE TRIGGER (\S+) \S+ (?:\S+ )*?ON (\S+) `)
)

// pgInstalled reports whether every function and trigger stmts create is
// in place as they create it.
func pgInstalled(c Conn, stmts []string) (bool, error) {
	for _, q := range stmts {
		if m := pgFunctionDef.FindStringSubmatch(q); m != nil {
			ok, err := pgFunctionCurrent(c, m[1]+"("+argTypes(m[2])+")", m[3])
			if err != nil || !ok {
				return false, err
			}
		} else if m := pgTriggerDef.FindStringSubmatch(q); m != nil {
			ok, err := pgTriggerEnabled(c, m[1], m[2])
			if err != nil || !ok {
				return false, err
			}
		}
	}
	return true, nil
}

// argTypes is a parameter list's types: "res text, id text" → "text, text".
func argTypes(params string) string {
	var out []string
	for _, p := range strings.Split(params, ",") {
		if f := strings.Fields(p); len(f) > 0 {
			out = append(out, f[len(f)-1])
		}
	}
	return strings.Join(out, ", ")
}

func pgFunctionCurrent(c Conn, signature, body string) (bool, error) {
	ok := false
	_, err := c.Query(`SELECT coalesce(p.prosrc = $2 AND p.prosecdef AND p.proconfig = ARRAY['search_path=pg_catalog, pg_temp'], false)
		FROM pg_catalog.pg_proc p WHERE p.oid = pg_catalog.to_regprocedure($1)`,
		[]any{signature, body}, func(r *sql.Rows) error { return r.Scan(&ok) })
	return ok, err
}

func pgTriggerEnabled(c Conn, name, table string) (bool, error) {
	ok := false
	_, err := c.Query(`SELECT coalesce(t.tgenabled IN ('O', 'A'), false) FROM pg_catalog.pg_trigger t
		WHERE t.tgrelid = pg_catalog.to_regclass($2) AND t.tgname = $1`,
		[]any{strings.Trim(name, `"`), table}, func(r *sql.Rows) error { return r.Scan(&ok) })
	return ok, err
}
