package lockstore

import (
	"database/sql"
	"strings"
)

// Children attached after the install (PostgreSQL). A write straight into
// an inheritance child fires the child's triggers only, and a child made
// by a migration after the install (CREATE TABLE … INHERITS, ALTER TABLE
// … INHERIT, a partition created or attached) has none: its held rows
// would be open to every writer until the next install. Where the
// installing role may (a superuser: PostgreSQL lets no one else create
// event triggers), the install adds an event trigger that runs at the end
// of every CREATE TABLE and ALTER TABLE: each table the command made or
// changed, and each table below it, that inherits from a table this guard
// covers and lacks the guard's triggers gets them in the same transaction,
// its functions copied from its nearest guarded ancestor's under the names
// the next install gives them, the same functions and triggers. Only
// the owner of a guarded table can give it a child, so the event trigger
// serves migrations, not a defence against attackers; without it
// (an install by a role that is not a superuser), the child is guarded at
// the next install (docs/guard.md).

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

// ddlEventTrigger is the event trigger's name: event triggers are named
// per database, so it carries the lock table's schema too.
func (s *postgresStore) ddlEventTrigger(schema string) string {
	return s.guardPrefix() + "_ddl_" + guardName(s.lockName(), schema)
}

// mayCreateEventTriggers reports whether the connected role is a superuser.
func mayCreateEventTriggers(c Conn) (bool, error) {
	var super bool
	_, err := c.Query(`SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user`, nil,
		func(r *sql.Rows) error { return r.Scan(&super) })
	return super, err
}

// ddlSQL creates the event trigger's function and the event trigger, in
// schema (the lock table's, unquoted).
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
	fn := pgQuote(schema) + "." + pgQuote(s.guardPrefix()+"_ddl")
	r := strings.NewReplacer("{fn}", fn, "{upd}", sqlLiteral(s.guardPrefix()+"_upd"), "{names}", strings.Join(names, ", "),
		"{schema}", sqlLiteral(schema), "{prefix}", sqlLiteral(s.guardPrefix()+"_"), "{lockname}", sqlLiteral(s.lockName()),
		"{lt}", sqlLiteral(pgQuote(schema)+"."+s.table), "{event}", clause(func(tg pgTrigger) string { return tg.event }),
		"{rest}", clause(func(tg pgTrigger) string { return tg.rest }), "{suffix}", clause(func(tg pgTrigger) string { return tg.suffix }),
		"{evt}", pgQuote(s.ddlEventTrigger(schema)), "{evtname}", sqlLiteral(s.ddlEventTrigger(schema)))
	return []string{r.Replace(`CREATE OR REPLACE FUNCTION {fn}() RETURNS event_trigger LANGUAGE plpgsql ` + pgOwnRights + ` AS $offlinelock$
DECLARE
	child oid;
	parent oid;
	t record;
	fn text;
BEGIN
	IF to_regclass({lt}) IS NULL THEN -- no lock table, no guard to extend: this trigger goes (the next install makes it again)
		EXECUTE format('DROP EVENT TRIGGER IF EXISTS %I', {evtname});
		RETURN;
	END IF;
	FOR child IN
		WITH RECURSIVE d(oid) AS (
			SELECT c.objid FROM pg_event_trigger_ddl_commands() c WHERE c.classid = 'pg_class'::regclass AND c.objsubid = 0
			UNION SELECT i.inhrelid FROM pg_inherits i JOIN d ON i.inhparent = d.oid)
		SELECT d.oid FROM d JOIN pg_class r ON r.oid = d.oid
		WHERE r.relkind IN ('r', 'p') AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = d.oid AND g.tgname = {upd})
	LOOP
		WITH RECURSIVE u(oid, depth) AS (
			SELECT i.inhparent, 1 FROM pg_inherits i WHERE i.inhrelid = child
			UNION SELECT i.inhparent, u.depth + 1 FROM pg_inherits i JOIN u ON i.inhrelid = u.oid)
		SELECT u.oid INTO parent FROM u JOIN pg_trigger g ON g.tgrelid = u.oid AND g.tgname = {upd}
			JOIN pg_proc f ON f.oid = g.tgfoid JOIN pg_namespace n ON n.oid = f.pronamespace
		WHERE n.nspname = {schema} ORDER BY u.depth LIMIT 1;
		CONTINUE WHEN parent IS NULL;
		FOR t IN SELECT g.tgname, f.prosrc FROM pg_trigger g JOIN pg_proc f ON f.oid = g.tgfoid
			WHERE g.tgrelid = parent AND g.tgname IN ({names}) ORDER BY g.tgname
		LOOP
			fn := format('%I.%I', {schema}, {prefix} || substr(encode(sha256(convert_to({lockname}, 'UTF8') || '\x00'::bytea ||
				convert_to(lower((SELECT relname FROM pg_class WHERE oid = child)), 'UTF8')), 'hex'), 1, 10) || {suffix});
			EXECUTE format('CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS %L', fn, t.prosrc);
			EXECUTE format('CREATE TRIGGER %I %s ON %s %s EXECUTE PROCEDURE %s()', t.tgname, {event}, child::regclass, {rest}, fn);
		END LOOP;
	END LOOP;
END
$offlinelock$`), r.Replace(`REVOKE ALL ON FUNCTION {fn}() FROM PUBLIC`),
		r.Replace(`DROP EVENT TRIGGER IF EXISTS {evt}`),
		r.Replace(`CREATE EVENT TRIGGER {evt} ON ddl_command_end WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE') EXECUTE PROCEDURE {fn}()`)}
}
