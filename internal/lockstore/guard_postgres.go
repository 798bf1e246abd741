package lockstore

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"
)

// The guard on PostgreSQL (docs/guard.md): per table, AFTER statement
// triggers whose transition tables spell every written key, checked in one
// call, and a BEFORE TRUNCATE trigger. The writer is the transaction-local
// offlinelock.session (identity.go).

// guardSQLState is the SQLSTATE of a guard's refusal, on both servers.
const guardSQLState = "OL423"

func (s *postgresStore) Quote(ident string) string { return pgQuote(ident) }

func (s *postgresStore) Backslash() string { return "chr(92)" }

func (s *postgresStore) ShareRow() string { return " FOR SHARE" }

// pgQuote quotes an identifier, each part of a schema-qualified one.
func pgQuote(ident string) string {
	parts := strings.Split(ident, ".")
	for i, p := range parts {
		parts[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return strings.Join(parts, ".")
}

// lockName is the lock table's name, unquoted.
func (s *postgresStore) lockName() string { return strings.Trim(s.table, `"`) }

// guardPrefix names every object of this lock table's guard.
func (s *postgresStore) guardPrefix() string { return "ol" + guardName(s.lockName()) }

func (s *postgresStore) Spell(k KeyKind, expr, colType string) string {
	text := "(" + expr + ")::text"
	switch k {
	case KindUUID:
		if colType == "uuid" {
			return text
		}
		return `(SELECT CASE WHEN length(h) = 32 THEN concat_ws('-', substr(h, 1, 8), substr(h, 9, 4), substr(h, 13, 4), substr(h, 17, 4), substr(h, 21, 12)) ELSE h END ` +
			`FROM (SELECT lower(replace(replace(replace(btrim(` + text + `), '-', ''), '{', ''), '}', '')) AS h) offlinelock_u)`
	case KindBytes:
		if colType == "bytea" {
			return "encode(" + expr + ", 'hex')"
		}
	case KindFold:
		return "lower(" + text + ")"
	case KindChar:
		return "rtrim(" + text + ", ' ')"
	}
	return text
}

// schema is the schema the guard's routines live in: the lock table's.
func (s *postgresStore) schema(c Conn) (string, error) {
	var name string
	q := `SELECT n.nspname FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace WHERE t.oid = to_regclass($1)`
	if c.fresh() { // the plan makes the lock table, where CREATE TABLE would
		q = `SELECT current_schema() WHERE $1::text IS NOT NULL`
	}
	_, err := c.Query(q, []any{s.table}, func(r *sql.Rows) error { return r.Scan(&name) })
	if err == nil && name == "" {
		err = errors.New("the lock table " + s.table + " does not exist")
	}
	return name, err
}

// installLock serialises installs and removals of this lock table's guard:
// SHARE UPDATE EXCLUSIVE needs update rights, and grants never wait for it.
func (s *postgresStore) installLock(c Conn) error {
	_, err := c.Exec(`LOCK TABLE ` + s.table + ` IN SHARE UPDATE EXCLUSIVE MODE`)
	return err
}

// ensureOrderRows inserts the order rows of plan's resources where this
// role may (an application role trusts the owner's install).
func (s *postgresStore) ensureOrderRows(c Conn, lt string, plan GuardPlan) error {
	resources := planResources(plan)
	if len(resources) == 0 {
		return nil
	}
	var may bool
	if c.plan == nil { // a plan's order table is the plan's to fill
		if _, err := c.Query(`SELECT to_regclass($1) IS NOT NULL AND has_table_privilege($1, 'INSERT')`, []any{s.orderTable(lt)},
			func(r *sql.Rows) error { return r.Scan(&may) }); err != nil || !may {
			return err
		}
	}
	_, err := c.Exec(s.orderRowsSQL(lt), resources)
	return err
}

// pgBoundedTx runs fn in c's transaction, or a new one, with its lock
// waits bounded: DDL waits for the table's writers (and other nodes'
// installs), which must delay the caller, never hang it.
func pgBoundedTx(c Conn, fn func(Conn) error) error {
	return c.inTx(func(c Conn) error {
		if _, err := c.Exec(`SET LOCAL lock_timeout = '5s'`); err != nil {
			return err
		}
		return fn(c)
	})
}

// orderTableExists says whether lt's order table is there.
func (s *postgresStore) orderTableExists(c Conn, lt string) (bool, error) {
	var ok bool
	_, err := c.Query(`SELECT to_regclass($1) IS NOT NULL`, []any{s.orderTable(lt)}, func(r *sql.Rows) error { return r.Scan(&ok) })
	return ok, err
}

func (s *postgresStore) InstallGuardRoutine(c Conn) error {
	c = s.observed(c)
	return pgBoundedTx(c, func(c Conn) error {
		if err := s.installLock(c); err != nil {
			return err
		}
		schema, err := s.schema(c)
		if err != nil {
			return err
		}
		if err := refuseOpenSchemas(c, schema); err != nil {
			return err
		}
		protocol, err := s.checkProtocol(c)
		if err != nil {
			return err
		}
		if _, err := s.guardKeyIn(c, `INSERT INTO `+pgQuote(schema)+`.`+s.catalog+` (name, spec) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`); err != nil {
			return err
		}
		stmts := append(s.routineSQL(pgQuote(schema)), s.grantOrderSQL(pgQuote(schema))...)
		// in place: nothing to create (a role that may not is verifying)
		lt := pgQuote(schema) + "." + s.table
		ok, err := pgInstalled(c, lt, stmts)
		if !ok && err == nil {
			// A newer build's routines (and its order table): theirs to change.
			ok, err = s.newerRevision(c)
		}
		if ok && err == nil {
			ok, err = s.orderTableExists(c, lt)
		}
		stmts = append(s.orderTableSQL(lt), stmts...)
		for _, q := range pgOwned(stmts) {
			if ok || err != nil {
				break
			}
			_, err = c.Exec(q)
		}
		if err == nil && !ok {
			err = s.recordProtocol(c, protocol, s.catalogUpsert(schema))
		}
		if err == nil && c.plan == nil {
			s.ordered.Store(true)
		}
		return err
	})
}

// Equal: PostgreSQL needs no probe (guard_probe_mysql.go).
func (s *postgresStore) Equal(KeyKind, string, string, string) (string, bool) { return "", false }

// catalogUpsert writes a catalog row's spec, (name, spec) as ?.
func (s *postgresStore) catalogUpsert(schema string) string {
	return `INSERT INTO ` + pgQuote(schema) + `.` + s.catalog + ` (name, spec) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec`
}

// refuseOpenSchemas fails the install where every role may create in the
// lock table's schema or one on the search_path: any role could then plant
// functions the install would run with its rights.
func refuseOpenSchemas(c Conn, lockSchema string) error {
	open, err := queryStrings(c, `SELECT n.nspname::text FROM pg_catalog.pg_namespace n
		WHERE (n.nspname OPERATOR(pg_catalog.=) ANY (pg_catalog.current_schemas(false)) OR n.nspname OPERATOR(pg_catalog.=) $1::name)
			AND pg_catalog.has_schema_privilege('public', n.oid, 'CREATE') ORDER BY 1`, lockSchema)
	if err != nil || len(open) == 0 {
		return err
	}
	quoted := make([]string, len(open))
	for i, n := range open {
		quoted[i] = pgQuote(n)
	}
	return errors.New("every role may create objects in schema " + strings.Join(open, ", ") +
		" (PUBLIC has CREATE there, as on public before PostgreSQL 15), so any role could make the functions the guard's install names, " +
		"or functions and operators its queries would pick, and run them with the installing role's rights: " +
		"REVOKE CREATE ON SCHEMA " + strings.Join(quoted, ", ") + " FROM PUBLIC")
}

// routineSQL is the shared routines: refuse (one record's refusal, naming
// its holder) and truncate.
func (s *postgresStore) routineSQL(schema string) []string {
	r := strings.NewReplacer("{refuse}", schema+"."+pgQuote(s.guardPrefix()+"_refuse"),
		"{trunc}", schema+"."+pgQuote(s.guardPrefix()+"_truncate"),
		"{lt}", schema+"."+s.table, "{ltname}", sqlLiteral(schema+"."+s.table), "{state}", guardSQLState, "{me}", pgWriter(schema+"."+s.catalog),
		"{hides}", refusalHidesHolder(schema+"."+s.catalog))
	const raise = `RAISE EXCEPTION USING ERRCODE = '{state}', TABLE = res, DETAIL = h.lock_id,
		MESSAGE = 'offlinelock: ' || res || ' ' || h.lock_id || ' is locked by ' || CASE WHEN {hides} THEN 'another session' ELSE
			CASE WHEN h.user_name = '' THEN 'another session' ELSE h.user_name END ||
			' since ' || to_char(h.acquired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' until ' || to_char(h.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' (UTC)' END,
		HINT = 'the holder releases it, or an operator calls ForceRelease, before another session writes it';`
	return []string{r.Replace(`CREATE OR REPLACE FUNCTION {refuse}(res text, id text) RETURNS void LANGUAGE plpgsql ` + pgOwnRights + ` AS $offlinelock$
DECLARE
	h record;
BEGIN
	SELECT l.lock_id, l.session, l.user_name, l.acquired_at, l.expires_at INTO h FROM {lt} l
	WHERE l.resource = res AND l.lock_id = id AND l.expires_at > clock_timestamp() AND l.session IS DISTINCT FROM {me}
		AND (l.holder = '' AND l.access = 'write' OR l.holder <> '')
	ORDER BY l.holder LIMIT 1;
	IF FOUND THEN
		` + raise + `
	END IF;
END
$offlinelock$`), r.Replace(`CREATE OR REPLACE FUNCTION {trunc}(res text) RETURNS void LANGUAGE plpgsql ` + pgOwnRights + ` AS $offlinelock$
DECLARE
	h record;
BEGIN
	IF to_regclass({ltname}) IS NULL THEN
		RETURN;
	END IF;
	SELECT l.lock_id, l.session, l.user_name, l.acquired_at, l.expires_at INTO h FROM {lt} l
	WHERE l.resource = res AND l.expires_at > clock_timestamp() AND (l.holder <> '' OR l.access = 'write')
		AND l.session IS DISTINCT FROM {me}
	LIMIT 1;
	IF FOUND THEN
		` + raise + `
	END IF;
END
$offlinelock$`), r.Replace(`REVOKE ALL ON FUNCTION {refuse}(text, text) FROM PUBLIC`), r.Replace(`REVOKE ALL ON FUNCTION {trunc}(text) FROM PUBLIC`)}
}

// pgOwnRights runs a guard function with its owner's rights and a fixed
// search_path, so no writer's function or temporary table decides what the
// guard sees (docs/guard.md, Its own names).
const pgOwnRights = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"

// pgRevoke closes a trigger function to PUBLIC: EXECUTE is checked only by
// CREATE TRIGGER, and a writer's own table could run it with its casts.
func pgRevoke(fn string) string { return "REVOKE ALL ON FUNCTION " + fn + "() FROM PUBLIC" }

// pgDeclareWriter declares raw (the identity), who (its verified claim),
// me (the writer's session) and proof (the last fence's), read once a call.
func pgDeclareWriter() string {
	return `DECLARE
	raw text := current_setting('offlinelock.session', true);
	who text;
	me text;
	proof text := nullif(current_setting('offlinelock.proof', true), '');
`
}

// pgVerifyWriter begins a trigger's body by checking the writer's claim.
func pgVerifyWriter(catalog string) string {
	return `	IF raw IS NOT NULL THEN
		who := ` + pgVerified(catalog, "raw") + `;
		me := substr(who, 3);
	END IF;
`
}

// pgVerified is the claim ('f:…' or 's:…') in raw when its signature
// (hex SHA-256 of key||claim) matches the guard's key; else NULL, and the
// writer writes as nobody.
func pgVerified(catalog, raw string) string {
	return "(CASE WHEN " + raw + " ~ '^[fs]:.*/[0-9a-f]{64}$' THEN (SELECT left(" + raw + ", -65) FROM " + catalog + " k WHERE k.name = " +
		sqlLiteral(guardKeyName) + " AND encode(sha256(convert_to(k.spec || left(" + raw + ", -65), 'UTF8')), 'hex') = right(" + raw + ", 64)) END)"
}

// pgProofLock is the lock table's part of a proof (FenceCondition).
func pgProofLock(lock string) string { return strconv.Itoa(len(lock)) + ":" + lock }

// pgProved is true when the transition tables hold only the proved record's rows.
func pgProved(lock string, records []GuardRecord, rows []string) string {
	var alts []string
	for _, row := range rows {
		alias := row[:len("offlinelock_")+1]
		var differs []string
		for _, rec := range records {
			prefix := strconv.Itoa(len(rec.Resource)) + ":" + rec.Resource
			differs = append(differs, "("+sqlLiteral(pgProofLock(lock))+" || octet_length(me) || ':' || me || "+sqlLiteral(prefix)+" || "+rec.Key(alias)+") IS DISTINCT FROM proof")
		}
		alts = append(alts, "SELECT 1 FROM "+row+" "+alias+" WHERE "+strings.Join(differs, " OR "))
	}
	return "proof IS NOT NULL AND left(who, 2) = 'f:' AND NOT EXISTS (" + strings.Join(alts, " UNION ALL ") + ")"
}

// pgWriter is the writer's verified session in the guard's SQL, or NULL.
func pgWriter(catalog string) string {
	return "substr(" + pgVerified(catalog, "current_setting('offlinelock.session', true)") + ", 3)"
}

// pgHeld is true of a key row l held by a session other than me.
func pgHeld(lt string) string {
	return `(l.access = 'write' AND l.expires_at > clock_timestamp() AND l.session IS DISTINCT FROM me OR l.access = 'read' AND EXISTS (SELECT 1 FROM ` + lt +
		` r WHERE r.resource = l.resource AND r.lock_id = l.lock_id AND r.holder <> '' AND r.expires_at > clock_timestamp() AND r.session IS DISTINCT FROM me))`
}

// pgTrigger is one of a table's statement triggers.
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

// triggerSQL is plan's trigger functions and triggers, replaced in one
// transaction. A fenced write ('f:') reads key rows unlocked; any other
// holds them FOR SHARE in lock_id order; keys are probed as = ANY arrays.
func (s *postgresStore) triggerSQL(schema string, plan GuardPlan) []string {
	base := s.guardPrefix() + "_" + guardName(s.lockName(), strings.ToLower(plan.Table))
	refuse := schema + "." + pgQuote(s.guardPrefix()+"_refuse")
	trunc := schema + "." + pgQuote(s.guardPrefix()+"_truncate")
	lt := schema + "." + s.table
	checks := func(rows ...string) string { return s.triggerChecks(lt, refuse, plan.Records, rows) }
	var tr strings.Builder
	seen := map[string]bool{}
	for _, rec := range plan.Records {
		if !seen[rec.Resource] {
			seen[rec.Resource] = true
			tr.WriteString("\tPERFORM " + trunc + "(" + sqlLiteral(rec.Resource) + ");\n")
		}
	}
	table := pgQuote(plan.Table)
	bodies := map[string]string{"_ins": checks("offlinelock_new"), "_upd": checks("offlinelock_old", "offlinelock_new"),
		"_del": checks("offlinelock_old"), "_trunc": tr.String()}
	var out []string
	for _, tg := range pgStatementTriggers() {
		fn := schema + "." + pgQuote(base+tg.suffix)
		name := pgQuote(s.guardPrefix() + tg.suffix)
		out = append(out, `CREATE OR REPLACE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql `+pgOwnRights+` AS $offlinelock$
`+pgDeclareWriter()+`BEGIN
`+pgVerifyWriter(schema+"."+s.catalog)+``+bodies[tg.suffix]+`	RETURN NULL;
END
$offlinelock$`, pgRevoke(fn), "DROP TRIGGER IF EXISTS "+name+" ON "+table,
			"CREATE TRIGGER "+name+" "+tg.event+" ON "+table+" "+tg.rest+" EXECUTE PROCEDURE "+fn+"()")
	}
	if plan.Partitioned {
		out = append(out, s.partitionRowSQL(schema, plan, base, refuse)...)
	}
	return out
}

// triggerChecks is a statement trigger's check of its transition tables.
func (s *postgresStore) triggerChecks(lt, refuse string, records []GuardRecord, rows []string) string {
	held := pgHeld(lt)
	var fenced, locked strings.Builder
	for _, rec := range records {
		var sel []string
		for _, row := range rows {
			alias := row[:len("offlinelock_")+1] // offlinelock_n, offlinelock_o: NEW and OLD are PL/pgSQL's
			sel = append(sel, "SELECT "+rec.Key(alias)+" FROM "+row+" "+alias)
		}
		res := sqlLiteral(rec.Resource)
		keys := "l.resource = " + res + " AND l.holder = '' AND l.lock_id = ANY(ARRAY(" + strings.Join(sel, " UNION ALL ") + "))"
		fenced.WriteString("\t\tPERFORM " + refuse + "(" + res + ", l.lock_id) FROM " + lt + " l WHERE " + keys + " AND " + held + ";\n")
		keys = "l.resource = " + res + " AND l.holder = '' AND l.lock_id = ANY(" + pgOrderKeys + ")"
		probe := "\t\tPERFORM " + refuse + "(" + res + ", l.lock_id) FROM (SELECT l.* FROM " + lt + " l WHERE " + keys +
			" ORDER BY l.lock_id FOR SHARE) l WHERE " + held + ";\n"
		before, after := s.guardOrder(lt, res, strings.Join(sel, " UNION ALL "), probe) // the order (guard_order_postgres.go), around the probe
		locked.WriteString(before + probe + after)
	}
	return `	IF ` + pgProved(s.lockName(), records, rows) + ` THEN
		RETURN NULL; -- only what the plugin's fence proved (FenceCondition)
	ELSIF to_regclass(` + sqlLiteral(lt) + `) IS NULL THEN
		RETURN NULL; -- no lock table, no locks
	ELSIF left(who, 2) = 'f:' THEN
` + fenced.String() + `	ELSE
` + locked.String() + `	END IF;
`
}

// partitionRowSQL is a partitioned table's row trigger, cloned onto every
// partition: a partition attached since the last install has no statement
// triggers, so this refuses each held row until the next install.
func (s *postgresStore) partitionRowSQL(schema string, plan GuardPlan, base, refuse string) []string {
	var olds, news strings.Builder
	for _, rec := range plan.Records {
		res := sqlLiteral(rec.Resource)
		olds.WriteString("\t\tPERFORM " + refuse + "(" + res + ", " + rec.Key("OLD") + ");\n")
		news.WriteString("\t\tPERFORM " + refuse + "(" + res + ", " + rec.Key("NEW") + ");\n")
	}
	fn := schema + "." + pgQuote(base+"_row")
	name := pgQuote(s.guardPrefix() + "_row")
	return []string{`CREATE OR REPLACE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql ` + pgOwnRights + ` AS $offlinelock$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = TG_RELID AND tgname = ` + sqlLiteral(s.guardPrefix()+"_upd") + `) THEN
		RETURN NULL; -- a partition guarded by statement triggers of its own
	END IF;
	IF TG_OP <> 'INSERT' THEN
` + olds.String() + `	END IF;
	IF TG_OP <> 'DELETE' THEN
` + news.String() + `	END IF;
	RETURN NULL;
END
$offlinelock$`, pgRevoke(fn), "DROP TRIGGER IF EXISTS " + name + " ON " + pgQuote(plan.Table),
		"CREATE TRIGGER " + name + " AFTER INSERT OR UPDATE OR DELETE ON " + pgQuote(plan.Table) + " FOR EACH ROW EXECUTE PROCEDURE " + fn + "()"}
}

// pgBusinessTableWait bounds an install's wait for a business table (issue 48).
const pgBusinessTableWait = "1s"

func (s *postgresStore) GuardTable(c Conn, plan GuardPlan) error {
	c = s.observed(c)
	return pgBoundedTx(c, func(c Conn) error {
		if err := s.installLock(c); err != nil {
			return err
		}
		if _, err := s.checkProtocol(c); err != nil {
			return err
		}
		schema, err := s.schema(c)
		if err != nil {
			return err
		}
		if newer, err := s.newerRevision(c); err != nil || newer {
			return err // a newer build's guard: it is theirs to change
		}
		stmts := s.triggerSQL(pgQuote(schema), plan)
		version := s.triggersVersion(stmts)
		// The order rows first, on every install (a new order table has none).
		if err := s.ensureOrderRows(c, pgQuote(schema)+"."+s.table, plan); err != nil {
			return err
		}
		have, err := s.GuardedTables(c)
		if err != nil {
			return err
		}
		if have[strings.ToLower(plan.Table)] == version {
			if ok, err := pgInstalled(c, pgQuote(schema)+"."+s.table, stmts); err != nil || ok {
				return err // in place, by definition, not by its comment alone
			}
		}
		fn := pgQuote(schema) + "." + pgQuote(s.guardPrefix()+"_"+guardName(s.lockName(), strings.ToLower(plan.Table))+"_upd")
		stmts = append(stmts, "COMMENT ON FUNCTION "+fn+"() IS "+sqlLiteral("offlinelock guard "+version))
		// Locked first, in DROP TRIGGER's mode where there is one to drop (two
		// installs deadlocked otherwise), else CREATE TRIGGER's, which lets readers on.
		mode := "SHARE ROW EXCLUSIVE"
		var there bool
		if _, err := c.Query(`SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t WHERE t.tgrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)::pg_catalog.oid
				AND t.tgname LIKE $2)`, []any{pgQuote(plan.Table), s.guardPrefix() + `\_%`}, func(r *sql.Rows) error { return r.Scan(&there) }); err != nil {
			return err
		}
		if there {
			mode = "ACCESS EXCLUSIVE"
		}
		// Past 1 s the install fails and the background repair tries again.
		stmts = append([]string{"SET LOCAL lock_timeout = '" + pgBusinessTableWait + "'", "LOCK TABLE " + pgQuote(plan.Table) + " IN " + mode + " MODE"}, stmts...)
		for _, q := range pgOwned(stmts) {
			if _, err := c.Exec(q); err != nil {
				return err
			}
		}
		return s.recordRevision(c, s.catalogUpsert(schema))
	})
}

// GuardedTables: the tables carrying this guard, by their UPDATE function's version.
func (s *postgresStore) GuardedTables(c Conn) (map[string]string, error) {
	c = s.observed(c)
	out := map[string]string{}
	// Only this lock table's schema: another tenant's guard is not this one's.
	_, err := c.Query(`SELECT lower(c.relname), max(coalesce(obj_description(t.tgfoid, 'pg_proc'), '')) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		JOIN pg_proc f ON f.oid = t.tgfoid
		WHERE t.tgname IN ($1, $2, $3, $4) AND f.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass($5)) GROUP BY 1 HAVING count(*) = 4`,
		[]any{s.guardPrefix() + "_ins", s.guardPrefix() + "_upd", s.guardPrefix() + "_del", s.guardPrefix() + "_trunc", s.table},
		func(r *sql.Rows) error {
			var table, comment string
			if err := r.Scan(&table, &comment); err != nil {
				return err
			}
			out[table] = strings.TrimPrefix(comment, "offlinelock guard ")
			return nil
		})
	return out, err
}

func (s *postgresStore) RemoveGuard(c Conn) error {
	c = s.observed(c)
	return pgBoundedTx(c, func(c Conn) error {
		prefix := s.guardPrefix() + `\_%`
		// IF EXISTS: a dropped table took its triggers. Only this schema's, and
		// only triggers running this guard's functions.
		const own = `(SELECT relnamespace FROM pg_class WHERE oid = to_regclass($2))`
		// Each table locked in one order, in DROP TRIGGER's mode, before its first
		// drop: two removals at once deadlocked otherwise. Dropped tables are skipped.
		drops, err := queryStrings(c, `SELECT q FROM (SELECT DISTINCT n.nspname, r.relname, 0 AS step, format('DO $offlinelock$BEGIN LOCK TABLE %I.%I IN ACCESS EXCLUSIVE MODE; '
				'EXCEPTION WHEN undefined_table THEN NULL; END$offlinelock$', n.nspname, r.relname) AS q
			FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid JOIN pg_namespace n ON n.oid = r.relnamespace JOIN pg_proc f ON f.oid = t.tgfoid
			WHERE t.tgname LIKE $1 AND f.proname LIKE $1 AND t.tgparentid = 0 AND f.pronamespace = `+own+`
			UNION ALL SELECT n.nspname, r.relname, 1, format('DROP TRIGGER IF EXISTS %I ON %I.%I', t.tgname, n.nspname, r.relname)
			FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid JOIN pg_namespace n ON n.oid = r.relnamespace JOIN pg_proc f ON f.oid = t.tgfoid
			WHERE t.tgname LIKE $1 AND f.proname LIKE $1 AND t.tgparentid = 0 AND f.pronamespace = `+own+`) d ORDER BY nspname, relname, step, q`, prefix, s.table)
		if err != nil {
			return err
		}
		// CASCADE: a trigger made since the list above goes with its function.
		functions, err := queryStrings(c, `SELECT format('DROP FUNCTION IF EXISTS %s', p.oid::regprocedure) || CASE WHEN p.prorettype = 'trigger'::regtype THEN ' CASCADE' ELSE '' END
			FROM pg_proc p WHERE p.proname LIKE $1 AND p.pronamespace = `+own, prefix, s.table)
		if err != nil {
			return err
		}
		drops = append(drops, functions...)
		schema, err := s.schema(c)
		if err != nil {
			return err
		}
		drops = append(drops, "DROP TABLE IF EXISTS "+s.orderTable(pgQuote(schema)+"."+s.table))
		for _, q := range drops {
			if _, err := c.Exec(q); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *postgresStore) QualifiedName(c Conn, table string) (string, error) {
	c = s.observed(c)
	var name string
	_, err := c.Query(`SELECT format('%I.%I', n.nspname, t.relname) FROM pg_catalog.pg_class t JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
		WHERE t.oid = pg_catalog.to_regclass($1) AND t.relpersistence <> 't'`,
		[]any{pgQuote(table)}, func(r *sql.Rows) error { return r.Scan(&name) })
	if err == nil && name == "" {
		err = errors.New("offlinelock: guarding: the table " + table + " is not a table of this database (or a temporary table hides it)")
	}
	return name, err
}

func (s *postgresStore) ColumnTypes(c Conn, table string) (map[string]string, error) {
	c = s.observed(c)
	return queryPairs(c, `SELECT lower(a.attname), format_type(a.atttypid, NULL) FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, pgQuote(table))
}

// Inheritors: table's partitions and children at every depth, and whether
// it is partitioned.
func (s *postgresStore) Inheritors(c Conn, table string) ([]string, bool, error) {
	c = s.observed(c)
	var partitioned bool
	if _, err := c.Query(`SELECT relkind = 'p' FROM pg_catalog.pg_class WHERE oid = pg_catalog.to_regclass($1)`, []any{pgQuote(table)},
		func(r *sql.Rows) error { return r.Scan(&partitioned) }); err != nil {
		return nil, false, err
	}
	children, err := queryStrings(c, `WITH RECURSIVE d(oid) AS (SELECT inhrelid FROM pg_catalog.pg_inherits WHERE inhparent = pg_catalog.to_regclass($1)
		UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid)
		SELECT c.relname FROM d JOIN pg_catalog.pg_class c ON c.oid = d.oid WHERE c.relkind IN ('r', 'p') ORDER BY 1`, pgQuote(table))
	return children, partitioned, err
}

// CascadesInto: PostgreSQL fires the child's triggers for foreign-key actions.
func (s *postgresStore) CascadesInto(Conn, string) ([]GuardCascade, error) { return nil, nil }

// GuardRefusal recognises the guard's SQLSTATE; the message names the record.
func (s *postgresStore) GuardRefusal(err error, resources []string) (GuardRefusal, bool) {
	var se interface{ SQLState() string }
	if !errors.As(err, &se) || se.SQLState() != guardSQLState {
		return GuardRefusal{}, false
	}
	return parseRefusal(se.(error).Error(), resources), true
}
