package lockstore

import (
	"database/sql"
	"strconv"
	"strings"
)

// Children attached after the install (PostgreSQL). A write straight into
// an inheritance child fires the child's triggers only, and a child made
// by a migration after the install (CREATE TABLE … INHERITS, ALTER TABLE
// … INHERIT, a partition created or attached) has none: its held rows
// would be open to every writer until the next install. Where the
// installing role may (a superuser: PostgreSQL lets no one else create
// event triggers), the install adds its worker (ddlSQL) and makes sure of
// the database's one event trigger, offlinelock_ddl, which runs at the end
// of every CREATE TABLE, ALTER TABLE and CREATE SCHEMA and calls the
// worker of each guard an ancestor of the command's tables carries.
//
// One event trigger for every guard, not one per guard: PostgreSQL reads
// the list of event triggers before it calls them, so where one guard's
// function was dropped (RemoveGuard, DROP SCHEMA … CASCADE) while another
// one of the list ran, the DDL failed ("cache lookup failed for
// function"). The one event trigger's function is never dropped by the
// plugin (the last RemoveGuard drops the event trigger and leaves it), and
// it looks each worker up when it calls it, so a worker dropped meanwhile
// is skipped.
//
// The worker runs as a superuser on anyone's DDL, so it trusts nothing a
// writer can make: an ancestor counts only if it has the child's owner
// and each of its four triggers runs the function this guard's install
// made for it (its exact name, in the lock table's schema, owned by the
// worker's owner); temporary tables are skipped; the child's triggers run
// a copy of those functions' bodies under the name the next install gives
// them (or, where that name is another function's, the ancestor's own),
// so no text a writer chose is ever compiled. A child of ancestors guarded
// for different records, or owned by another role than its guarded
// ancestor, is left to the next install, with a warning. Without the
// event trigger (an install by a role that is not a superuser), a child is
// guarded at the next install (docs/guard.md).

// pgTrigger is one of a guarded table's four statement triggers: its
// name's suffix, its event (before ON <table>), and the clause after the
// table's name.
type pgTrigger struct{ suffix, event, rest string }

// pgStatementTriggers are the four, in the order the install creates them.
func pgStatementTriggers() []pgTrigger {
	return []pgTrigger{
		{"_ins", "AFTER INSERT", "REFERENCING NEW TABLE AS offlinelock_new FOR EACH STATEMENT"},
		{"_upd", "AFTER UPDATE", "REFERENCING OLD TABLE AS offlinelock_old NEW TABLE AS offlinelock_new FOR EACH STATEMENT"},
		{"_del", "AFTER DELETE", "REFERENCING OLD TABLE AS offlinelock_old FOR EACH STATEMENT"},
		{"_trunc", "BEFORE TRUNCATE", "FOR EACH STATEMENT"},
	}
}

// ddlWorker is this guard's function that guards the children a DDL
// command made: the event trigger calls it with the command's tables.
func (s *postgresStore) ddlWorker(schema string) string {
	return pgQuote(schema) + "." + pgQuote(s.guardPrefix()+"_ddl")
}

// mayCreateEventTriggers reports whether the connected role is a superuser.
func mayCreateEventTriggers(c Conn) (bool, error) {
	var super bool
	_, err := c.Query(`SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user`, nil,
		func(r *sql.Rows) error { return r.Scan(&super) })
	return super, err
}

// ddlSQL creates this guard's worker, in schema (the lock table's,
// unquoted): called by the event trigger (installDDLTrigger) with the
// tables a DDL command made or changed, it gives each of them, and each
// table below them, that lacks this guard's triggers and inherits from a
// table this guard covers, that table's guard.
func (s *postgresStore) ddlSQL(schema string) []string {
	var names []string
	for _, tg := range pgStatementTriggers() {
		names = append(names, sqlLiteral(s.guardPrefix()+tg.suffix))
	}
	clause := func(part func(pgTrigger) string) string {
		out := "CASE t.tgname"
		for _, tg := range pgStatementTriggers() {
			out += " WHEN " + sqlLiteral(s.guardPrefix()+tg.suffix) + " THEN " + sqlLiteral(part(tg))
		}
		return out + " END"
	}
	// guardName(lock table, lower(table)) in SQL; decode, not a '\x00'
	// literal, which a session with standard_conforming_strings off would
	// fail to compile, failing all of its DDL.
	hash := func(relname string) string {
		return "substr(encode(sha256(convert_to(" + sqlLiteral(s.lockName()) + ", 'UTF8') || decode('00', 'hex') || convert_to(lower(" + relname + "::text), 'UTF8')), 'hex'), 1, 10)"
	}
	r := strings.NewReplacer("{fn}", s.ddlWorker(schema), "{upd}", sqlLiteral(s.guardPrefix()+"_upd"), "{names}", strings.Join(names, ", "),
		"{schema}", sqlLiteral(schema), "{prefix}", sqlLiteral(s.guardPrefix()+"_"),
		"{lt}", sqlLiteral(pgQuote(schema)+"."+s.table), "{event}", clause(func(tg pgTrigger) string { return tg.event }),
		"{rest}", clause(func(tg pgTrigger) string { return tg.rest }),
		"{prefixlen}", strconv.Itoa(len(s.guardPrefix())+1), "{hashanc}", hash("a.relname"), "{hashchild}", hash("child.relname"))
	return []string{r.Replace(`CREATE OR REPLACE FUNCTION {fn}(objs oid[]) RETURNS void LANGUAGE plpgsql ` + pgOwnRights + ` AS $offlinelock$
DECLARE
	me oid := (SELECT oid FROM pg_roles WHERE rolname = current_user);
	child record;
	t record;
	picked oid;
	kinds bigint;
	target text;
	fnoid oid;
BEGIN
	IF to_regclass({lt}) IS NULL THEN -- no lock table, no guard to extend
		RETURN;
	END IF;
	FOR child IN
		WITH RECURSIVE d(oid) AS (
			SELECT unnest(objs)
			UNION SELECT i.inhrelid FROM pg_inherits i JOIN d ON i.inhparent = d.oid)
		SELECT r.oid, r.relname, r.relowner FROM d JOIN pg_class r ON r.oid = d.oid
		WHERE r.relkind IN ('r', 'p') AND r.relpersistence <> 't'
			AND (SELECT count(*) FROM pg_trigger g WHERE g.tgrelid = r.oid AND g.tgname IN ({names})) < 4
	LOOP
		-- A guarded ancestor: same owner as the child, and each of its four
		-- triggers runs the function this guard's install made for it
		-- (its name, this schema, this function's owner).
		WITH RECURSIVE u(oid, depth) AS (
			SELECT i.inhparent, 1 FROM pg_inherits i WHERE i.inhrelid = child.oid
			UNION SELECT i.inhparent, u.depth + 1 FROM pg_inherits i JOIN u ON i.inhrelid = u.oid),
		g AS (SELECT u.oid, u.depth FROM u JOIN pg_class a ON a.oid = u.oid
			WHERE a.relowner = child.relowner AND (SELECT count(*) FROM pg_trigger tg JOIN pg_proc f ON f.oid = tg.tgfoid
				JOIN pg_namespace n ON n.oid = f.pronamespace
				WHERE tg.tgrelid = u.oid AND tg.tgname IN ({names}) AND n.nspname = {schema} AND f.proowner = me
					AND f.proname = {prefix} || {hashanc} || substr(tg.tgname, {prefixlen})) = 4)
		SELECT (array_agg(g.oid ORDER BY g.depth))[1],
			count(DISTINCT (SELECT f.prosrc FROM pg_trigger tg JOIN pg_proc f ON f.oid = tg.tgfoid WHERE tg.tgrelid = g.oid AND tg.tgname = {upd}))
			INTO picked, kinds FROM g;
		IF picked IS NULL THEN
			-- A guarded ancestor refused only for its owner: say so, rather than leave the child unguarded in silence.
			IF EXISTS (WITH RECURSIVE u(oid) AS (
					SELECT i.inhparent FROM pg_inherits i WHERE i.inhrelid = child.oid
					UNION SELECT i.inhparent FROM pg_inherits i JOIN u ON i.inhrelid = u.oid)
				SELECT 1 FROM u JOIN pg_trigger g ON g.tgrelid = u.oid AND g.tgname = {upd} JOIN pg_class a ON a.oid = u.oid
				WHERE a.relowner <> child.relowner) THEN
				RAISE WARNING 'offlinelock: % is owned by another role than its guarded parent: it is guarded at the next install (offlinelock guard install)', child.oid::regclass;
			END IF;
			CONTINUE;
		END IF;
		IF kinds > 1 THEN
			RAISE WARNING 'offlinelock: % inherits from tables guarded for different records: it is guarded at the next install (offlinelock guard install)', child.oid::regclass;
			CONTINUE;
		END IF;
		FOR t IN SELECT tg.tgname, tg.tgfoid, f.prosrc FROM pg_trigger tg JOIN pg_proc f ON f.oid = tg.tgfoid
			WHERE tg.tgrelid = picked AND tg.tgname IN ({names}) ORDER BY tg.tgname
		LOOP
			CONTINUE WHEN EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = child.oid AND g.tgname = t.tgname);
			-- The child's own function, under the name the next install
			-- gives it; where another function has that name (a table of
			-- the same name elsewhere), the ancestor's own.
			target := {prefix} || {hashchild} || substr(t.tgname, {prefixlen});
			SELECT p.oid INTO fnoid FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			WHERE n.nspname = {schema} AND p.proname = target AND p.pronargs = 0;
			IF fnoid IS NULL THEN
				BEGIN
					EXECUTE format('CREATE FUNCTION %I.%I() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS %L', {schema}, target, t.prosrc);
					EXECUTE format('REVOKE ALL ON FUNCTION %I.%I() FROM PUBLIC', {schema}, target);
					SELECT p.oid INTO fnoid FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
					WHERE n.nspname = {schema} AND p.proname = target AND p.pronargs = 0;
				EXCEPTION WHEN duplicate_function THEN -- made meanwhile by someone else
					fnoid := t.tgfoid;
				END;
			ELSIF NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.oid = fnoid AND p.proowner = me AND p.prosrc = t.prosrc AND p.prorettype = 'trigger'::regtype) THEN
				fnoid := t.tgfoid;
			END IF;
			EXECUTE format('CREATE TRIGGER %I %s ON %s %s EXECUTE PROCEDURE %s()', t.tgname, {event}, child.oid::regclass, {rest}, fnoid::regproc);
		END LOOP;
	END LOOP;
END
$offlinelock$`), r.Replace(`REVOKE ALL ON FUNCTION {fn}(oid[]) FROM PUBLIC`)}
}

// ddlTrigger names the database's one event trigger, and its function.
const ddlTrigger = "offlinelock_ddl"

// ddlTriggerBody is the event trigger's function: it calls the worker of
// each guard whose update trigger an ancestor of the command's tables
// carries (a superuser's SECURITY DEFINER function, in that trigger's
// function's schema, named for its guard), with the command's tables. A
// worker dropped after the lookup is skipped, and so is one whose name
// another function shares (with a warning); any other failure fails the
// DDL, as a trigger's would. No backslash or LIKE: a session with
// standard_conforming_strings off compiles it the same.
const ddlTriggerBody = `
DECLARE
	objs oid[];
	w record;
BEGIN
	SELECT array_agg(c.objid) INTO objs FROM pg_event_trigger_ddl_commands() c WHERE c.classid = 'pg_class'::regclass AND c.objsubid = 0;
	IF objs IS NULL THEN
		RETURN;
	END IF;
	FOR w IN
		WITH RECURSIVE d(oid) AS (
			SELECT unnest(objs)
			UNION SELECT i.inhrelid FROM pg_inherits i JOIN d ON i.inhparent = d.oid),
		u(oid) AS (
			SELECT i.inhparent FROM pg_inherits i JOIN d ON i.inhrelid = d.oid
			UNION SELECT i.inhparent FROM pg_inherits i JOIN u ON i.inhrelid = u.oid)
		SELECT DISTINCT p.oid, p.pronamespace, n.nspname, p.proname FROM u
			JOIN pg_trigger t ON t.tgrelid = u.oid AND left(t.tgname, 2) = 'ol' AND right(t.tgname, 4) = '_upd'
			JOIN pg_proc f ON f.oid = t.tgfoid
			JOIN pg_proc p ON p.pronamespace = f.pronamespace AND p.proname = left(t.tgname, -4) || '_ddl'
			JOIN pg_namespace n ON n.oid = p.pronamespace
			JOIN pg_roles r ON r.oid = p.proowner
		WHERE r.rolsuper AND p.prosecdef AND p.prorettype = 'void'::regtype AND p.pronargs = 1 AND p.proargtypes[0] = 'oid[]'::regtype
		ORDER BY p.oid
	LOOP
		-- called by name, which another function of that name (an overload
		-- with a default, made by a role that may create in that schema)
		-- would make ambiguous: that guard's children wait for its next
		-- install, rather than this DDL fail
		IF (SELECT count(*) FROM pg_proc q WHERE q.pronamespace = w.pronamespace AND q.proname = w.proname) > 1 THEN
			RAISE WARNING 'offlinelock: another function is named %.%: a child this command made is guarded at the next install (offlinelock guard install)', w.nspname, w.proname;
			CONTINUE;
		END IF;
		BEGIN
			EXECUTE format('SELECT %I.%I($1)', w.nspname, w.proname) USING objs;
		EXCEPTION WHEN ambiguous_function THEN
			RAISE WARNING 'offlinelock: another function is named %.%: a child this command made is guarded at the next install (offlinelock guard install)', w.nspname, w.proname;
		WHEN OTHERS THEN
			IF EXISTS (SELECT 1 FROM pg_proc WHERE oid = w.oid) THEN
				RAISE;
			END IF; -- removed meanwhile by another session
		END;
	END LOOP;
END
`

// ddlTriggerTags are the commands the event trigger runs after.
const ddlTriggerTags = `'CREATE TABLE', 'ALTER TABLE', 'CREATE SCHEMA'`

// installDDLTrigger makes sure the database's event trigger is in place,
// enabled and running a superuser's function of ddlTriggerBody; where it
// is not, it makes that function and points the event trigger at it. The
// function goes in schema public where there is one, else in schema (the
// lock table's, unquoted): dropping a schema drops its functions and
// their event trigger, and a tenant's schema (schema-per-tenant) is
// dropped with its tenant, public seldom. Installs of every lock table
// take the same advisory lock first, so two never race to make it.
func installDDLTrigger(c Conn, schema string) error {
	if _, err := c.Exec(`SELECT pg_advisory_xact_lock(hashtext('offlinelock:ddl'))`); err != nil {
		return err
	}
	var ok bool
	_, err := c.Query(`SELECT e.evtenabled IN ('O', 'A') AND e.evtevent = 'ddl_command_end' AND e.evttags = ARRAY[`+ddlTriggerTags+`]
			AND p.prosrc = $2 AND p.prosecdef AND p.proconfig = ARRAY['search_path=pg_catalog, pg_temp'] AND r.rolsuper
		FROM pg_catalog.pg_event_trigger e JOIN pg_catalog.pg_proc p ON p.oid = e.evtfoid JOIN pg_catalog.pg_roles r ON r.oid = p.proowner
		WHERE e.evtname = $1`, []any{ddlTrigger, ddlTriggerBody}, func(r *sql.Rows) error { return r.Scan(&ok) })
	if err != nil || ok {
		return err
	}
	if _, err := c.Query(`SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname = 'public'`, nil,
		func(r *sql.Rows) error { return r.Scan(&schema) }); err != nil {
		return err
	}
	fn := pgQuote(schema) + "." + pgQuote(ddlTrigger) + "()"
	for _, q := range []string{
		`CREATE OR REPLACE FUNCTION ` + fn + ` RETURNS event_trigger LANGUAGE plpgsql ` + pgOwnRights + ` AS $offlinelock$` + ddlTriggerBody + `$offlinelock$`,
		`ALTER FUNCTION ` + fn + ` OWNER TO CURRENT_USER`, // a function of that name someone else made is this one's now
		`REVOKE ALL ON FUNCTION ` + fn + ` FROM PUBLIC`,
		`DROP EVENT TRIGGER IF EXISTS ` + pgQuote(ddlTrigger),
		`CREATE EVENT TRIGGER ` + pgQuote(ddlTrigger) + ` ON ddl_command_end WHEN TAG IN (` + ddlTriggerTags + `) EXECUTE PROCEDURE ` + fn,
	} {
		if _, err := c.Exec(q); err != nil {
			return err
		}
	}
	return nil
}

// removeDDLTrigger drops the event trigger once no guard's worker is
// left, and leaves its function: a DDL running meanwhile in another
// session may have read the event trigger already and still call it.
func removeDDLTrigger(c Conn) error {
	if _, err := c.Exec(`SELECT pg_advisory_xact_lock(hashtext('offlinelock:ddl'))`); err != nil {
		return err
	}
	_, err := c.Exec(`DO $offlinelock$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc p WHERE left(p.proname, 2) = 'ol' AND right(p.proname, 4) = '_ddl'
		AND p.prorettype = 'void'::regtype AND p.pronargs = 1 AND p.proargtypes[0] = 'oid[]'::regtype) THEN
		DROP EVENT TRIGGER IF EXISTS ` + pgQuote(ddlTrigger) + `;
	END IF;
END $offlinelock$`)
	return err
}
