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
	state, err := pgState(c, stmts)
	return state == GuardOK, err
}

// pgState is the state of what stmts create: GuardOK when every function
// and trigger is in place as they create it, else the first difference
// found (GuardDropped, GuardDisabled, GuardReplaced).
func pgState(c Conn, stmts []string) (string, error) {
	for _, q := range stmts {
		state := GuardOK
		var err error
		if m := pgFunctionDef.FindStringSubmatch(q); m != nil {
			state, err = pgFunctionState(c, m[1]+"("+argTypes(m[2])+")", m[3])
		} else if m := pgTriggerDef.FindStringSubmatch(q); m != nil {
			state, err = pgTriggerState(c, m[1], m[2])
		}
		if err != nil || state != GuardOK {
			return state, err
		}
	}
	return GuardOK, nil
}

// TableState reports the state of plan's triggers and of the routines
// they call.
func (s *postgresStore) TableState(c Conn, plan GuardPlan) (string, error) {
	c = s.observed(c)
	schema, err := s.schema(c)
	if err != nil {
		return "", err
	}
	stmts := append(s.routineSQL(pgQuote(schema)), s.grantOrderSQL(pgQuote(schema))...)
	return pgState(c, append(stmts, s.triggerSQL(pgQuote(schema), plan)...))
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

func pgFunctionState(c Conn, signature, body string) (string, error) {
	state := GuardDropped
	_, err := c.Query(`SELECT CASE WHEN coalesce(p.prosrc = $2 AND p.prosecdef AND p.proconfig = ARRAY['search_path=pg_catalog, pg_temp'], false) THEN 'ok' ELSE 'replaced' END
		FROM pg_catalog.pg_proc p WHERE p.oid = pg_catalog.to_regprocedure($1)`,
		[]any{signature, body}, func(r *sql.Rows) error { return r.Scan(&state) })
	return state, err
}

func pgTriggerState(c Conn, name, table string) (string, error) {
	state := GuardDropped
	_, err := c.Query(`SELECT CASE WHEN t.tgenabled IN ('O', 'A') THEN 'ok' ELSE 'disabled' END FROM pg_catalog.pg_trigger t
		WHERE t.tgrelid = pg_catalog.to_regclass($2) AND t.tgname = $1`,
		[]any{strings.Trim(name, `"`), table}, func(r *sql.Rows) error { return r.Scan(&state) })
	return state, err
}
