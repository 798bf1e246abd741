package lockstore

import (
	"database/sql"
	"errors"
	"regexp"
	"strings"
)

// A PostgreSQL guard's state is read from its definitions, not a version
// comment: each function must have the same body, owner's rights and
// search_path, each trigger must exist enabled; anything else is repaired.

var (
	pgFunctionDef = regexp.MustCompile(`(?s)^CREATE OR REPLACE FUNCTION (\S+?)\((.*?)\) RETURNS .*? AS \$offlinelock\$(.*)\$offlinelock\$$`)
	pgTriggerDef  = regexp.MustCompile(`^CREATE TRIGGER (\S+) \S+ (?:\S+ )*?ON (\S+) `)
	pgTriggerFn   = regexp.MustCompile(`EXECUTE PROCEDURE (\S+)\(\)$`)
)

// pgHook is the trigger stmts hang on a function: its name and table.
type pgHook struct{ name, table string }

// pgHooks maps each function stmts hang a trigger on to that trigger.
func pgHooks(stmts []string) map[string]pgHook {
	out := map[string]pgHook{}
	for _, q := range stmts {
		if m, f := pgTriggerDef.FindStringSubmatch(q), pgTriggerFn.FindStringSubmatch(q); m != nil && f != nil {
			out[f[1]] = pgHook{strings.Trim(m[1], `"`), m[2]}
		}
	}
	return out
}

// pgForeignTriggers is true where a trigger other than hook runs fnoid (one
// planted while the function was open to PUBLIC).
func pgForeignTriggers(fnoid string, hook pgHook, ok bool) string {
	if !ok {
		return "false"
	}
	return `EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g WHERE g.tgfoid OPERATOR(pg_catalog.=) ` + fnoid + ` AND g.tgparentid OPERATOR(pg_catalog.=) 0
		AND NOT (g.tgname OPERATOR(pg_catalog.=) ` + sqlLiteral(hook.name) + `::pg_catalog.name AND g.tgrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(` + sqlLiteral(hook.table) + `)::pg_catalog.oid))`
}

// pgInstalled reports whether everything stmts create is in place.
func pgInstalled(c Conn, lt string, stmts []string) (bool, error) {
	state, err := pgState(c, lt, stmts)
	return state == GuardOK, err
}

// pgOwned is stmts with each function given to the running role and closed
// to others: a superuser's CREATE OR REPLACE keeps another creator as owner,
// and EXECUTE would let a role hang the function on its own table. A
// function a foreign trigger still runs is dropped and made again.
func pgOwned(stmts []string) []string {
	hooks := pgHooks(stmts)
	var out []string
	for _, q := range stmts {
		m := pgFunctionDef.FindStringSubmatch(q)
		if m == nil {
			out = append(out, q)
			continue
		}
		sig := m[1] + "(" + argTypes(m[2]) + ")"
		if hook, ok := hooks[m[1]]; ok { // a function others hung triggers on is made anew, with a new oid, and theirs go
			out = append(out, `DO $offlinelock$BEGIN
	IF `+pgForeignTriggers(`pg_catalog.to_regprocedure(`+sqlLiteral(sig)+`)::pg_catalog.oid`, hook, true)+` THEN
		EXECUTE `+sqlLiteral("DROP FUNCTION "+sig+" CASCADE")+`;
	END IF;
END$offlinelock$`)
		}
		out = append(out, q, "ALTER FUNCTION "+sig+" OWNER TO CURRENT_USER", "REVOKE ALL ON FUNCTION "+sig+" FROM PUBLIC",
			`DO $offlinelock$DECLARE g record; BEGIN
	FOR g IN SELECT DISTINCT a.grantee FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid OPERATOR(pg_catalog.=) `+sqlLiteral(sig)+`::pg_catalog.regprocedure::pg_catalog.oid AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
			AND a.grantee OPERATOR(pg_catalog.<>) 0 LOOP -- PUBLIC's went above
		EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM %s CASCADE', `+sqlLiteral(sig)+`, g.grantee::pg_catalog.regrole);
	END LOOP;
END$offlinelock$`)
	}
	return out
}

// pgState is GuardOK when every function and trigger of stmts is in place,
// else the first difference. A function counts only if owned by a superuser
// or lt's owner (or its group) and closed to other roles (pgOwned).
func pgState(c Conn, lt string, stmts []string) (string, error) {
	hooks := pgHooks(stmts)
	for _, q := range stmts {
		state := GuardOK
		var err error
		if m := pgFunctionDef.FindStringSubmatch(q); m != nil {
			hook, ok := hooks[m[1]]
			state, err = pgFunctionState(c, lt, m[1]+"("+argTypes(m[2])+")", m[3], pgForeignTriggers("p.oid", hook, ok), pgFunctionConfig(q))
		} else if m := pgTriggerDef.FindStringSubmatch(q); m != nil {
			state, err = pgTriggerState(c, m[1], m[2])
		}
		if err != nil || state != GuardOK {
			return state, err
		}
	}
	return GuardOK, nil
}

// TableState reports the state of plan's triggers and routines.
func (s *postgresStore) TableState(c Conn, plan GuardPlan) (string, error) {
	c = s.observed(c)
	state, err := s.tableState(c, plan)
	if err != nil {
		return "", err
	}
	return s.seenAs(c, state)
}

func (s *postgresStore) tableState(c Conn, plan GuardPlan) (string, error) {
	if _, err := s.checkProtocol(c); errors.Is(err, ErrGuardProtocol) {
		return GuardNewer, nil
	} else if err != nil {
		return "", err
	}
	schema, err := s.schema(c)
	if err != nil {
		return "", err
	}
	stmts := append(s.routineSQL(pgQuote(schema)), s.grantOrderSQL(pgQuote(schema))...)
	return pgState(c, pgQuote(schema)+"."+s.table, append(stmts, s.triggerSQL(pgQuote(schema), plan)...))
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

// pgFunctionConfig is a function's expected proconfig: its search_path and,
// for the grant trigger, its lock_timeout.
func pgFunctionConfig(q string) []string {
	config := []string{"search_path=pg_catalog, pg_temp"}
	if strings.Contains(q, " SET lock_timeout = '"+pgGrantWait+"' AS $offlinelock$") {
		config = append(config, "lock_timeout="+pgGrantWait)
	}
	return config
}

func pgFunctionState(c Conn, lt, signature, body, foreign string, config []string) (string, error) {
	state := GuardDropped
	_, err := c.Query(`SELECT CASE WHEN coalesce(p.prosrc = $2 AND p.prosecdef AND p.proconfig = $4::text[]
			AND (o.rolsuper OR EXISTS (SELECT 1 FROM pg_catalog.pg_class t WHERE t.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($3)::oid
				AND (pg_catalog.pg_has_role(p.proowner, t.relowner, 'MEMBER') OR pg_catalog.pg_has_role(t.relowner, p.proowner, 'MEMBER'))))
			AND p.proacl IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_catalog.aclexplode(p.proacl) a WHERE a.grantee OPERATOR(pg_catalog.<>) p.proowner)
			AND NOT `+foreign+`, false)
		THEN 'ok' ELSE 'replaced' END
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_roles o ON o.oid OPERATOR(pg_catalog.=) p.proowner
		WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure($1)::oid`,
		[]any{signature, body, lt, config}, func(r *sql.Rows) error { return r.Scan(&state) })
	return state, err
}

func pgTriggerState(c Conn, name, table string) (string, error) {
	state := GuardDropped
	_, err := c.Query(`SELECT CASE WHEN t.tgenabled IN ('O', 'A') THEN 'ok' ELSE 'disabled' END FROM pg_catalog.pg_trigger t
		WHERE t.tgrelid = pg_catalog.to_regclass($2) AND t.tgname = $1`,
		[]any{strings.Trim(name, `"`), table}, func(r *sql.Rows) error { return r.Scan(&state) })
	return state, err
}
