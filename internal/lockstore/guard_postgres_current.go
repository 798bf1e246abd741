package lockstore

import (
	"database/sql"
	"errors"
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

// pgForeignTriggers is SQL that is true where a trigger other than hook
// (or a partition's clone of it) runs the function fnoid: a trigger
// planted while the function was open to PUBLIC (before its EXECUTE was
// revoked) goes on firing it, since only CREATE TRIGGER checks EXECUTE.
// A function no trigger of stmts runs (a routine) has none to check.
func pgForeignTriggers(fnoid string, hook pgHook, ok bool) string {
	if !ok {
		return "false"
	}
	return `EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g WHERE g.tgfoid OPERATOR(pg_catalog.=) ` + fnoid + ` AND g.tgparentid OPERATOR(pg_catalog.=) 0
		AND NOT (g.tgname OPERATOR(pg_catalog.=) ` + sqlLiteral(hook.name) + `::pg_catalog.name AND g.tgrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(` + sqlLiteral(hook.table) + `)::pg_catalog.oid))`
}

// pgInstalled reports whether every function and trigger stmts create is
// in place as they create it; lt is the lock table, qualified.
func pgInstalled(c Conn, lt string, stmts []string) (bool, error) {
	state, err := pgState(c, lt, stmts)
	return state == GuardOK, err
}

// pgOwned is stmts, each function they create then given to the role that
// runs them and closed to every other role. A superuser's CREATE OR
// REPLACE of a function another role made first (a role that may create
// in the schema, which can tell the guard's names) keeps that role as its
// owner, who could then rewrite what the guard runs, and keeps its
// grants; a role that is not a superuser fails on it instead. Closed: a
// trigger fires its function without EXECUTE, which only CREATE TRIGGER
// checks, so a role with EXECUTE could hang a guard function, which runs
// with its owner's rights, on a table of its own whose columns have types
// of its own, with casts of its own the function would run; a function
// such a trigger still runs (hung while the function was open, before
// this version) is dropped with it and made again.
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

// pgState is the state of what stmts create: GuardOK when every function
// and trigger is in place as they create it, else the first difference
// found (GuardDropped, GuardDisabled, GuardReplaced). A function counts as
// in place only if a superuser owns it, or the owner of lt (the lock
// table, qualified), or a role of that owner's group or whose group that
// owner is in (a deployment's login role and its owner role), and no
// other role may execute it (pgOwned).
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

// TableState reports the state of plan's triggers and of the routines
// they call.
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

// pgFunctionConfig is the proconfig a function q creates has: its own
// search_path (pgOwnRights) and, for the grant's trigger, its lock_timeout
// (pgGrantWait).
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
