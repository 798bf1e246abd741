package lockstore

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"

	"gorm.io/gorm"
)

// The guard on MySQL/MariaDB (docs/guard.md): row triggers call a shared
// procedure that reads the record's key row LOCK IN SHARE MODE and SIGNALs
// OL423 when another session holds it. Foreign key actions fire no
// triggers, so a parent checks the children its actions change.

// installLockName is the named lock that serialises the guard's installs:
// keyed by the guard's key (MySQL limits names to 64 characters).
func installLockName(key string) string {
	h := sha256.Sum256([]byte("offlinelock install\x00" + key))
	return "offlinelock:guard:" + hex.EncodeToString(h[:16])
}

func (s *mysqlStore) Quote(ident string) string {
	return "`" + strings.ReplaceAll(ident, "`", "``") + "`"
}

func (s *mysqlStore) Backslash() string { return "CHAR(92 USING utf8mb4)" }

func (s *mysqlStore) ShareRow() string { return mysqlShare }

func (s *mysqlStore) lockName() string { return strings.Trim(s.table, "`") }

func (s *mysqlStore) guardPrefix() string { return "ol" + guardName(s.lockName()) }

func (s *mysqlStore) Spell(k KeyKind, expr, colType string) string {
	binary := strings.Contains(colType, "binary") || strings.Contains(colType, "blob")
	text := "CONVERT(" + expr + " USING utf8mb4)"
	switch k {
	case KindInt:
		if !integerType(colType) {
			expr = "(" + expr + ")" // the same text; no live bucket by the column's bits (integerKey)
		}
		return "CAST(" + expr + " AS CHAR)"
	case KindUUID:
		h := "LOWER(REPLACE(REPLACE(REPLACE(TRIM(" + text + "), '-', ''), '{', ''), '}', ''))"
		if binary {
			h = "IF(LENGTH(" + expr + ") = 16, LOWER(HEX(" + expr + ")), " + h + ")"
		}
		return "(SELECT IF(LENGTH(h) = 32, CONCAT_WS('-', SUBSTR(h, 1, 8), SUBSTR(h, 9, 4), SUBSTR(h, 13, 4), SUBSTR(h, 17, 4), SUBSTR(h, 21, 12)), h) " +
			"FROM (SELECT " + h + " AS h) offlinelock_u)"
	case KindBytes:
		return "LOWER(HEX(" + expr + "))"
	case KindFold:
		return "LOWER(" + text + ")"
	case KindChar:
		return "TRIM(TRAILING ' ' FROM " + text + ")"
	}
	return text
}

// sessionMarkSQL is the session's max_join_size mark (sessionMark in Go):
// 2^59 plus 55 bits of SHA-256(guard key || session), never a limit a
// statement could reach, made only by a client that can read the key.
const sessionMarkSQL = "(CONV(LEFT(SHA2(CONCAT({k}, {s}), 256), 14), 16, 10) & 18446744073709551614 | 576460752303423488)"

func (s *mysqlStore) InstallGuardRoutine(c Conn) error {
	c = s.observed(c)
	return s.withGuardLock(c, func(c Conn) error {
		protocol, err := s.checkProtocol(c)
		if err != nil {
			return err
		}
		if err := s.probeGuardClock(c); err != nil {
			return err
		}
		if newer, err := s.newerRevision(c); err != nil || newer {
			// A newer build's routines: theirs to change. The fence keeps
			// its own check (fenceFn), which needs no routine of a version.
			s.fenceFn.Store(false)
			return err
		}
		key, err := s.guardKeyIn(c, `INSERT IGNORE INTO `+s.catalog+` (name, spec) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		seal, err := s.sealIndex(c)
		if err != nil {
			return err
		}
		body := s.checkBody(seal, key)
		if err := s.installRoutine(c, "PROCEDURE", s.guardPrefix()+"_check", body); err != nil {
			return err
		}
		if err := s.installOrder(c); err != nil {
			return err
		}
		// The fence function only saves the fence a statement: without it
		// (a privilege the procedure did not need), the fence keeps its own.
		fenced := s.installRoutine(c, "FUNCTION", s.fenceName(), s.fenceBody(key)) == nil
		if c.plan != nil {
			return s.recordProtocol(c, protocol, `INSERT INTO `+s.catalog+` (name, spec) VALUES (?, ?) ON DUPLICATE KEY UPDATE spec = VALUES(spec)`)
		}
		s.fenceFn.Store(fenced)
		if state, err := s.routineState(c, "PROCEDURE", s.guardPrefix()+"_check", body); err != nil || state != GuardOK {
			return err // in place but hidden from this user: the owner records the protocol
		}
		return s.recordProtocol(c, protocol, s.catalogUpsert())
	})
}

// checkBody is the guard's procedure: it refuses a write of record (res,
// id) another session holds. IGNORE INDEX (seal) fails (1176) on a
// session's TEMPORARY table of the lock table's name. The read is LOCK IN
// SHARE MODE except for fenced writes (the keyed blank), which the plugin
// checks again before commit; an expired Write lock is read FOR UPDATE
// (expiredWrite).
func (s *mysqlStore) checkBody(seal, key string) string {
	pk := mysqlPK + " IGNORE INDEX (" + s.Quote(seal) + ")"
	mine := func(col string) string {
		return strings.NewReplacer("{k}", sqlLiteral(key), "{s}", col).Replace(sessionMarkSQL)
	}
	return `(res VARBINARY(512), id VARBINARY(1020))
COMMENT '{version}'
READS SQL DATA
offlinelock: BEGIN
	DECLARE a VARCHAR(5) DEFAULT NULL;
	DECLARE s VARBINARY(1020);
	DECLARE u VARCHAR(255) CHARACTER SET utf8mb4;
	DECLARE since, until DATETIME(6);
	DECLARE me BIGINT UNSIGNED DEFAULT @@session.max_join_size & 18446744073709551614;
	DECLARE fenced BOOL DEFAULT @offlinelock_fenced <=> 1; -- the trigger's reading of the keyed blank
	DECLARE msg VARCHAR(128) CHARACTER SET utf8mb4;
	` + mysqlGuardClockDecl + `
	DECLARE EXIT HANDLER FOR 1146 BEGIN END; -- no lock table, no locks
	DECLARE EXIT HANDLER FOR 1176 SIGNAL SQLSTATE '` + guardSQLState + `' SET MESSAGE_TEXT = 'offlinelock: the lock table is hidden by a temporary table';
	DECLARE CONTINUE HANDLER FOR NOT FOUND SET a = NULL;
	IF id IS NULL THEN
	LEAVE offlinelock;
	END IF;
	` + mysqlGuardClockSet + `
	IF fenced THEN -- the plugin checks this write again, row-locked, before commit
		SELECT access, session, user_name, acquired_at, expires_at INTO a, s, u, since, until FROM ` + s.table + pk + `
			WHERE resource = res AND lock_id = id AND holder = '';
	ELSE -- the guard is the fence: the key row stays as it is until the transaction ends
		SELECT access, session, user_name, acquired_at, expires_at INTO a, s, u, since, until FROM ` + s.table + pk + `
			WHERE resource = res AND lock_id = id AND holder = '' ` + mysqlShare + `;
	END IF;
	IF a = 'read' THEN
		SET a = NULL;
		SELECT 'read', session, user_name, acquired_at, expires_at INTO a, s, u, since, until FROM ` + s.table + pk + `
			WHERE resource = res AND lock_id = id AND holder <> '' AND expires_at > clock AND ` + mine("session") + ` <> me
			ORDER BY holder LIMIT 1 ` + mysqlShare + `;
	ELSEIF a = 'write' AND (until <= clock OR ` + mine("s") + ` = me) THEN
	IF until <= clock AND NOT fenced THEN -- expired: keep the key row past XA PREPARE (expiredWrite)
		SELECT access INTO a FROM ` + s.table + pk + `
			WHERE resource = res AND lock_id = id AND holder = '' FOR UPDATE;
	END IF;
	SET a = NULL;
	ELSEIF a <> 'write' THEN
	SET a = NULL;
	END IF;
	IF a IS NOT NULL THEN
	SET msg = LEFT(CONCAT('offlinelock: ', CONVERT(res USING utf8mb4), ' ', CONVERT(id USING utf8mb4), ' is locked by ',
		IF(` + refusalHidesHolder(s.catalog) + `, 'another session',
			CONCAT(IF(u = '', 'another session', u), ' until ', DATE_FORMAT(until, '%Y-%m-%d %H:%i:%s'), ' (UTC)'))), 128);
	SIGNAL SQLSTATE '` + guardSQLState + `' SET MESSAGE_TEXT = msg;
	END IF;
END`
}

// sealIndex names the lock table's seal: its expires_at index, renamed
// once to a name with 64 random bits (docs/guard.md).
func (s *mysqlStore) sealIndex(c Conn) (string, error) {
	name, err := s.sealName(c)
	if err != nil || name != "" {
		return name, err
	}
	prefix := s.guardPrefix() + "_seal_"
	b := make([]byte, 8)
	rand.Read(b)
	name = prefix + hex.EncodeToString(b)
	_, err = c.Exec("ALTER TABLE " + s.table + " RENAME INDEX " + s.index("expires") + " TO " + s.Quote(name))
	if c.plan != nil {
		c.plan.seal = name
	}
	return name, err
}

// sealName is the seal's name (sealIndex), or "" before the first install.
func (s *mysqlStore) sealName(c Conn) (string, error) {
	if c.plan != nil && c.plan.seal != "" {
		return c.plan.seal, nil // made by the plan, not renamed
	}
	have, err := queryStrings(c, `SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME LIKE ? ORDER BY INDEX_NAME LIMIT 1`,
		s.lockName(), strings.ReplaceAll(s.guardPrefix()+"_seal_", "_", `\_`)+"%")
	return strings.Join(have, ""), err
}

// installRoutine creates routine name of kind (PROCEDURE or FUNCTION) with
// body; one already in place stays, since replacing it fails its callers
// meanwhile (1305).
func (s *mysqlStore) installRoutine(c Conn, kind, name, body string) error {
	state, err := s.routineState(c, kind, name, body)
	if err != nil || state == GuardOK || state == GuardHidden {
		return err
	}
	body = strings.Replace(body, "{version}", "offlinelock guard "+guardVersion(body), 1)
	stmts := []string{"DROP " + kind + " IF EXISTS " + s.Quote(name), "CREATE " + kind + " " + s.Quote(name) + body}
	if s.mariadb.Load() {
		stmts = []string{"CREATE OR REPLACE " + kind + " " + s.Quote(name) + body}
	}
	for _, q := range stmts {
		if _, err := c.Exec(q); err != nil {
			if state == GuardDropped && Denied(err) {
				// Not shown to this user may be in place all the same.
				if denied := s.executeDenied(c, kind, name); denied != nil {
					return denied
				}
			}
			return err
		}
	}
	return nil
}

// routineState compares routine name's definition with body, not only its
// version, which a no-op replacement could keep; a hidden one is GuardHidden.
func (s *mysqlStore) routineState(c Conn, kind, name, body string) (string, error) {
	version := "offlinelock guard " + guardVersion(body)
	want := strings.Replace(body, "{version}", version, 1)
	if i := strings.Index(want, "READS SQL DATA\n"); i >= 0 {
		want = want[i+len("READS SQL DATA\n"):]
	}
	state := GuardDropped
	_, err := c.Query(`SELECT ROUTINE_COMMENT, ROUTINE_DEFINITION FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = ? AND ROUTINE_NAME = ?`,
		[]any{kind, name}, func(r *sql.Rows) error {
			var comment string
			var def sql.NullString
			if err := r.Scan(&comment, &def); err != nil {
				return err
			}
			switch {
			case !def.Valid:
				state = GuardHidden
			case comment == version && def.String == want:
				state = GuardOK
			default:
				state = GuardReplaced
			}
			return nil
		})
	return state, err
}

// TableState: plan's triggers by their version, and the guard's routines
// by their definitions, as a newer revision's count as in place (seenAs).
// MySQL cannot disable a trigger.
func (s *mysqlStore) TableState(c Conn, plan GuardPlan) (string, error) {
	c = s.observed(c)
	state, err := s.tableState(c, plan)
	if err != nil {
		return "", err
	}
	return s.seenAs(c, state)
}

func (s *mysqlStore) tableState(c Conn, plan GuardPlan) (string, error) {
	if _, err := s.checkProtocol(c); errors.Is(err, ErrGuardProtocol) {
		return GuardNewer, nil
	} else if err != nil {
		return "", err
	}
	key, err := s.GuardKey(c)
	if err != nil || key == "" {
		return GuardDropped, err
	}
	hidden := false
	for _, r := range [][2]string{{"PROCEDURE", s.guardPrefix() + "_check"}, {"FUNCTION", s.fenceName()}} {
		seal, err := s.sealName(c)
		if err != nil || seal == "" {
			return GuardDropped, err
		}
		body := s.checkBody(seal, key)
		if r[0] == "FUNCTION" {
			body = s.fenceBody(key)
		}
		if state, err := s.routineState(c, r[0], r[1], body); err != nil || state != GuardOK && state != GuardHidden {
			return state, err
		} else if state == GuardHidden {
			hidden = true
		}
	}
	if state, err := s.orderState(c); err != nil || state != GuardOK && state != GuardHidden {
		return state, err
	} else if state == GuardHidden {
		hidden = true
	}
	// A hidden routine says nothing of the table: its triggers are read all
	// the same, so a table without them is never taken as guarded.
	names, stmts := s.triggerSQL(plan, key)
	state, err := s.triggersState(c, names, s.triggersVersion(stmts))
	if err != nil || state != GuardOK && state != GuardHidden {
		return state, err
	}
	if hidden || state == GuardHidden {
		return GuardHidden, nil // the views' names may be hidden as well
	}
	if _, ok, err := s.sealedViews(c, stmts, false); err != nil || !ok {
		return GuardDropped, err
	}
	return s.probeState(c, plan)
}

// triggersState: GuardOK where every trigger of names carries version, else
// the first that does not, or GuardHidden. The filter on EVENT_OBJECT_SCHEMA
// keeps MariaDB to this schema (on TRIGGER_SCHEMA it waited 40 s behind
// another database's DDL).
func (s *mysqlStore) triggersState(c Conn, names []string, version string) (string, error) {
	hidden := false
	for _, name := range names {
		state := GuardDropped
		_, err := c.Query(`SELECT ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND TRIGGER_NAME = ?`,
			[]any{name}, func(r *sql.Rows) error {
				var body sql.NullString
				if err := r.Scan(&body); err != nil {
					return err
				}
				switch m := guardVersionMark.FindStringSubmatch(body.String); {
				case !body.Valid:
					state = GuardHidden
				case m != nil && m[1] == version:
					state = GuardOK
				default:
					state = GuardReplaced
				}
				return nil
			})
		if err != nil || state != GuardOK && state != GuardHidden {
			return state, err
		}
		hidden = hidden || state == GuardHidden
	}
	if hidden {
		return GuardHidden, nil
	}
	return GuardOK, nil
}

// withGuardLock serialises the guard's DDL between nodes by a named lock
// (DDL commits implicitly), keyed so that no one else can hold it up.
func (s *mysqlStore) withGuardLock(c Conn, fn func(Conn) error) error {
	return c.db.Connection(func(tx *gorm.DB) error {
		cc := NewConn(tx, c.ctx).on(c.obs)
		cc.plan = c.plan
		key, err := s.guardKeyIn(cc, `INSERT IGNORE INTO `+s.catalog+` (name, spec) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		name := installLockName(key)
		var got sql.NullInt64
		if _, err := cc.Query(`SELECT GET_LOCK(?, 5)`, []any{name}, func(r *sql.Rows) error { return r.Scan(&got) }); err != nil {
			return err
		}
		if got.Int64 != 1 {
			return errors.New("offlinelock: another node's install of the guard held its install lock past 5 s; retry")
		}
		defer cc.Exec(`SELECT RELEASE_LOCK(?)`, name)
		// New writes of the table queue behind DDL waiting for a metadata lock.
		if _, err := cc.Exec(`SET SESSION lock_wait_timeout = 5`); err != nil {
			return err
		}
		defer cc.Exec(`SET SESSION lock_wait_timeout = DEFAULT`)
		return fn(cc)
	})
}

// mysqlTrigger writes the bodies of one table's guard triggers on
// MariaDB.
type mysqlTrigger struct {
	s    *mysqlStore
	proc string // the guard procedure, quoted
	pk   string // the proof key (proofKey)
}

// probe reads the key row as the procedure would (through the seal, LOCK IN
// SHARE MODE unless fenced) and calls it only where there is one: a CALL
// costs more than the row's write. The locking probe is a scalar subquery,
// which a client's sql_select_limit does not reach; the fenced one must not
// lock, so it is a SELECT … INTO, run only under the keyed blank (no
// limit). offlinelock_n starts at 1: anything unforeseen calls the procedure.
func (t mysqlTrigger) probe(share string) string {
	from := " FROM " + t.s.table + " IGNORE INDEX (" + sealPlaceholder + ")" +
		" WHERE resource = @offlinelock_res AND lock_id = @offlinelock_k AND holder = ''"
	if share == "" {
		return "SELECT COUNT(*) INTO @offlinelock_n" + from + ";"
	}
	return "SET @offlinelock_n = (SELECT COUNT(*)" + from + share + ");"
}

// call checks the record (res, key): probed, and the procedure called
// when its key row is there, unless the write carries the holder's proof.
func (t mysqlTrigger) call(res, key string) string {
	s := t.s
	return "IF " + s.unproved(t.pk, sqlLiteral(res), key) + " THEN SET @offlinelock_res = " + sqlLiteral(res) + ", @offlinelock_k = CAST(" + key + " AS BINARY), @offlinelock_n = 1; " +
		"BEGIN DECLARE EXIT HANDLER FOR 1146 SET @offlinelock_n = 0; " +
		"DECLARE EXIT HANDLER FOR 1176 SIGNAL SQLSTATE '" + guardSQLState + "' SET MESSAGE_TEXT = '" + hiddenByTemporary + "'; " +
		"IF @offlinelock_fenced THEN " + t.probe("") + " ELSE " + s.orderedProbe() + t.probe(mysqlShare) + " END IF; END; " +
		"IF @offlinelock_n > 0 THEN CALL " + t.proc + "(@offlinelock_res, @offlinelock_k); END IF; END IF;"
}

// children checks the records of the child rows a foreign-key action of
// cc changes, found by the parent's old key.
func (t mysqlTrigger) children(cc GuardCascade, rec GuardRecord) string {
	s := t.s
	child := cc.ChildName
	if child == "" {
		child = s.Quote(cc.Child)
	}
	// sql_select_limit reaches the loop's cursor, not a subquery's count:
	// fewer rows visited than counted is a refusal.
	children := " FROM " + child + " offlinelock_c WHERE offlinelock_c." + s.Quote(cc.Column) + " = OLD." + s.Quote(cc.ParentColumn)
	return "SET offlinelock_seen = 0; IF @offlinelock_fenced THEN SELECT COUNT(*) INTO offlinelock_m" + children + "; " +
		"ELSE SET offlinelock_m = (SELECT COUNT(*)" + children + "); END IF; " +
		"FOR offlinelock_r IN (SELECT " + rec.Key("offlinelock_c") + " AS k" + children + ") DO SET offlinelock_seen = offlinelock_seen + 1; " +
		t.call(rec.Resource, "offlinelock_r.k") + " END FOR; " +
		"IF offlinelock_seen < offlinelock_m THEN SIGNAL SQLSTATE '" + guardSQLState + "' SET MESSAGE_TEXT = 'offlinelock: sql_select_limit hides rows from the guard: write without it'; END IF;"
}

// triggerSQL is the guard's triggers of plan's table: their names and
// their CREATE statements.
func (s *mysqlStore) triggerSQL(plan GuardPlan, guardKey string) (names []string, stmts []string) {
	t := mysqlTrigger{s: s, proc: s.Quote(s.guardPrefix() + "_check"), pk: proofKey(guardKey)}
	base := s.guardPrefix() + "_" + guardName(s.lockName(), strings.ToLower(plan.Table))
	// In a procedure sql_select_limit reads as its default: the trigger
	// hands the blank on in a variable set before every CALL. User variables,
	// each set before it is read, spare a declared variable's cost per row.
	fenced := "SET @offlinelock_fenced = @@session.sql_select_limit = " + fencedBlank(guardKey) + "; "
	declare := "DECLARE offlinelock_m, offlinelock_seen BIGINT; " + fenced
	var ins, upd, del []string
	var insGate, updGate, delGate liveGate
	for _, rec := range plan.Records {
		res, same := sqlLiteral(rec.Resource), rec.Key("NEW")+" <=> "+rec.Key("OLD")
		ins = append(ins, t.call(rec.Resource, rec.Key("NEW")))
		upd = append(upd, t.call(rec.Resource, rec.Key("OLD")),
			"IF NOT ("+same+") THEN "+t.call(rec.Resource, rec.Key("NEW"))+" END IF;")
		del = append(del, t.call(rec.Resource, rec.Key("OLD")))
		insGate.add(s, res, rec.Key("NEW"), "")
		// A write that moves the record takes the whole path: MariaDB would
		// run a bucket read for NEW even where the key stays.
		updGate.add(s, res, rec.Key("OLD"), sameKey(rec.Key("NEW"), rec.Key("OLD")))
		delGate.add(s, res, rec.Key("OLD"), "")
	}
	var cascadedDel, cascadedUpd []string // BEFORE UPDATE: the children still hold the old key
	for _, cc := range plan.Cascades {
		for _, rec := range cc.Records {
			check := t.children(cc, rec)
			if cc.OnDelete != "" {
				cascadedDel = append(cascadedDel, check)
			}
			if cc.OnUpdate != "" {
				cascadedUpd = append(cascadedUpd, "IF NOT (NEW."+s.Quote(cc.ParentColumn)+" <=> OLD."+s.Quote(cc.ParentColumn)+") THEN "+check+" END IF;")
			}
		}
	}
	gated := func(calls []string, gate liveGate, cascades []string) []string {
		return s.gatedBody(fenced, declare, calls, gate, cascades)
	}
	table := s.Quote(plan.Table)
	// INSERT and UPDATE are checked AFTER (the row as stored, AUTO_INCREMENT
	// key included); DELETE and _bc BEFORE, ahead of InnoDB's foreign-key
	// actions. Names keep old suffixes so upgrades replace in place.
	for _, tg := range []struct {
		suffix, timing, event string
		body                  []string
	}{{"_bi", "AFTER", "INSERT", gated(ins, insGate, nil)}, {"_bu", "AFTER", "UPDATE", gated(upd, updGate, nil)},
		{"_bd", "BEFORE", "DELETE", gated(del, delGate, cascadedDel)}, {"_bc", "BEFORE", "UPDATE", gated(nil, liveGate{}, cascadedUpd)}} {
		if len(tg.body) == 0 {
			continue
		}
		names = append(names, base+tg.suffix)
		stmts = append(stmts, "CREATE TRIGGER "+s.Quote(base+tg.suffix)+" "+tg.timing+" "+tg.event+" ON "+table+
			" FOR EACH ROW BEGIN /* offlinelock guard {version} */ "+strings.Join(tg.body, " ")+" END")
	}
	return names, stmts
}

// gatedBody is a trigger's body: the records' checks (calls) after fenced,
// and the cascades' checks after declare. Outside Galera a write whose
// buckets say no lock is live (gate) skips the calls.
func (s *mysqlStore) gatedBody(fenced, declare string, calls []string, gate liveGate, cascades []string) []string {
	var body []string
	checks := "BEGIN " + fenced + strings.Join(calls, " ") + " END;"
	switch {
	case len(calls) == 0:
	case s.galera.Load():
		body = append(body, checks)
	default:
		body = append(body, gate.wrap(checks))
	}
	if len(cascades) > 0 {
		body = append(body, "BEGIN "+declare+strings.Join(cascades, " ")+" END;")
	}
	return body
}

func (s *mysqlStore) GuardTable(c Conn, plan GuardPlan) error {
	c = s.observed(c)
	key, err := s.GuardKey(c)
	if err == nil && key == "" {
		err = errors.New("offlinelock: the guard's key is missing from the catalog: install the guard's routine first")
	}
	if err != nil {
		return err
	}
	names, stmts := s.triggerSQL(plan, key)
	version := s.triggersVersion(stmts)
	return s.withGuardLock(c, func(c Conn) error {
		if _, err := s.checkProtocol(c); err != nil {
			return err
		}
		if newer, err := s.newerRevision(c); err != nil || newer {
			return err // a newer build's guard: it is theirs to change
		}
		// The order's rows, before a trigger reads them, on every install.
		if err := s.ensureOrderRows(c, plan); err != nil {
			return err
		}
		// Every trigger, by name: one dropped beside others in place is
		// put back.
		state, err := s.triggersState(c, names, version)
		if err == nil && state != GuardOK && state != GuardHidden {
			// A table in use holds the DDL up 1 s at most; then it is retried.
			_, err = c.Exec(`SET SESSION lock_wait_timeout = 1`)
		}
		if err == nil && state == GuardOK {
			err = s.installProbe(c, plan) // where a version before the probes installed the triggers
		}
		if err != nil || state == GuardOK || state == GuardHidden {
			return err
		}
		stmts, ok, err := s.sealedViews(c, stmts, true)
		if err == nil && !ok {
			err = errors.New("offlinelock: the lock table has no seal: install the guard's routine first")
		}
		if err != nil {
			return err
		}
		for i, q := range stmts {
			q = strings.Replace(q, "{version}", version, 1)
			if s.mariadb.Load() {
				q = "CREATE OR REPLACE" + strings.TrimPrefix(q, "CREATE")
			} else if _, err := c.Exec("DROP TRIGGER IF EXISTS " + s.Quote(names[i])); err != nil {
				return err
			}
			if _, err := c.Exec(q); err != nil {
				return err
			}
		}
		if err := s.installProbe(c, plan); err != nil {
			return err
		}
		return s.recordRevision(c, s.catalogUpsert())
	})
}

// catalogUpsert writes a catalog row's spec, (name, spec) as ?.
func (s *mysqlStore) catalogUpsert() string {
	return `INSERT INTO ` + s.catalog + ` (name, spec) VALUES (?, ?) ON DUPLICATE KEY UPDATE spec = VALUES(spec)`
}

var guardVersionMark = regexp.MustCompile(`offlinelock guard ([0-9a-f]+)`)

// GuardedTables: the tables carrying a trigger of this guard, with the
// version the oldest of their triggers carries.
func (s *mysqlStore) GuardedTables(c Conn) (map[string]string, error) {
	c = s.observed(c)
	out := map[string]string{}
	_, err := c.Query(`SELECT LOWER(EVENT_OBJECT_TABLE), ACTION_STATEMENT FROM information_schema.TRIGGERS
		WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE ? ORDER BY TRIGGER_NAME`,
		[]any{s.guardPrefix() + `\_%`}, func(r *sql.Rows) error {
			var table string
			var body sql.NullString
			if err := r.Scan(&table, &body); err != nil {
				return err
			}
			if table == strings.ToLower(s.lockName()) {
				return nil // the grant's order trigger (guard_order_mysql.go)
			}
			v := ""
			if !body.Valid {
				v = GuardHidden
			} else if m := guardVersionMark.FindStringSubmatch(body.String); m != nil {
				v = m[1]
			}
			if old, ok := out[table]; ok && old != v {
				v = "mixed"
			}
			out[table] = v
			return nil
		})
	return out, err
}

func (s *mysqlStore) RemoveGuard(c Conn) error {
	c = s.observed(c)
	return s.withGuardLock(c, func(c Conn) error {
		names, err := queryStrings(c, `SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE ?`,
			s.guardPrefix()+`\_%`)
		if err != nil {
			return err
		}
		for _, n := range names {
			if _, err := c.Exec("DROP TRIGGER IF EXISTS " + s.Quote(n)); err != nil {
				return err
			}
		}
		views, err := queryStrings(c, `SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ?`,
			s.guardPrefix()+`\_v%`)
		if err != nil {
			return err
		}
		for _, v := range views {
			if _, err := c.Exec("DROP VIEW IF EXISTS " + s.Quote(v)); err != nil {
				return err
			}
		}
		if _, err := c.Exec("DROP TABLE IF EXISTS " + s.orderTable()); err != nil {
			return err
		}
		s.fenceFn.Store(false)
		if _, err := c.Exec("DROP FUNCTION IF EXISTS " + s.Quote(s.fenceName())); err != nil {
			return err
		}
		probes, err := s.tableProbes(c)
		if err != nil {
			return err
		}
		for _, p := range append(probes, s.probeName(), s.guardPrefix()+"_check") {
			if _, err := c.Exec("DROP PROCEDURE IF EXISTS " + s.Quote(p)); err != nil {
				return err
			}
		}
		return nil
	})
}

// QualifiedName is a placeholder for a sealed view of table (sealedViews):
// a TEMPORARY table hides a base table of its name inside triggers too,
// not a view it cannot name (docs/guard.md).
func (s *mysqlStore) QualifiedName(_ Conn, table string) (string, error) {
	return sealedOpen + table + sealedClose, nil
}

const sealedOpen, sealedClose = "\x00offlinelock view:", "\x00"

// sealPlaceholder stands for the seal's name in the triggers' text, so
// their version is the same on every node.
const sealPlaceholder = "\x00offlinelock seal\x00"

var sealedRef = regexp.MustCompile("\x00offlinelock view:([^\x00]+)\x00")

// sealedViews resolves stmts' placeholders to views and the seal; with
// create it makes missing views, without a missing one leaves ok false.
func (s *mysqlStore) sealedViews(c Conn, stmts []string, create bool) (out []string, ok bool, err error) {
	names := map[string]string{}
	seal, err := s.sealName(c)
	if err != nil || seal == "" {
		return stmts, false, err // the routine's install makes it first
	}
	for _, q := range stmts {
		for _, m := range sealedRef.FindAllStringSubmatch(q, -1) {
			if _, done := names[m[1]]; done {
				continue
			}
			if v, ok := c.plan.view(m[1]); ok {
				names[m[1]] = v
				continue
			}
			prefix := s.guardPrefix() + "_v" + guardName(s.lockName(), strings.ToLower(m[1])) + "_"
			have, err := queryStrings(c, `SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ? ORDER BY TABLE_NAME LIMIT 1`,
				strings.ReplaceAll(prefix, "_", `\_`)+"%")
			if err != nil {
				return nil, false, err
			}
			name := strings.Join(have, "")
			if name == "" {
				if !create {
					return stmts, false, nil
				}
				b := make([]byte, 8)
				rand.Read(b)
				name = prefix + hex.EncodeToString(b)
				if _, err := c.Exec("CREATE VIEW " + s.Quote(name) + " AS SELECT * FROM " + s.Quote(m[1])); err != nil {
					return nil, false, err
				}
				c.plan.madeView(m[1], s.Quote(name))
			}
			names[m[1]] = s.Quote(name)
		}
	}
	out = make([]string, len(stmts))
	for i, q := range stmts {
		out[i] = sealedRef.ReplaceAllStringFunc(q, func(ref string) string { return names[sealedRef.FindStringSubmatch(ref)[1]] })
		out[i] = strings.ReplaceAll(out[i], sealPlaceholder, s.Quote(seal))
	}
	return out, true, nil
}

func (s *mysqlStore) ColumnTypes(c Conn, table string) (map[string]string, error) {
	c = s.observed(c)
	return queryPairs(c, `SELECT LOWER(COLUMN_NAME), LOWER(COLUMN_TYPE) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`, table)
}

// Inheritors: MySQL has neither partitions with tables of their own nor
// inheritance.
func (s *mysqlStore) Inheritors(Conn, string) ([]string, bool, error) { return nil, false, nil }

// CascadesInto lists the foreign keys of child table whose ON DELETE or
// ON UPDATE action changes its rows: InnoDB runs them without triggers.
func (s *mysqlStore) CascadesInto(c Conn, table string) ([]GuardCascade, error) {
	c = s.observed(c)
	var out []GuardCascade
	// Filtered on schema and table name, so MariaDB opens only this table.
	_, err := c.Query(`SELECT k.CONSTRAINT_NAME, k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME, k.COLUMN_NAME,
			IF(rc.DELETE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT'), rc.DELETE_RULE, ''), IF(rc.UPDATE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT'), rc.UPDATE_RULE, ''),
			(SELECT COUNT(*) FROM information_schema.KEY_COLUMN_USAGE k2 WHERE k2.TABLE_SCHEMA = DATABASE() AND k2.TABLE_NAME = ?
				AND k2.CONSTRAINT_NAME = k.CONSTRAINT_NAME)
		FROM information_schema.KEY_COLUMN_USAGE k
		JOIN information_schema.REFERENTIAL_CONSTRAINTS rc ON rc.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND rc.CONSTRAINT_NAME = k.CONSTRAINT_NAME
		WHERE k.TABLE_SCHEMA = DATABASE() AND k.TABLE_NAME = ? AND k.REFERENCED_TABLE_NAME IS NOT NULL AND k.ORDINAL_POSITION = 1
			AND rc.CONSTRAINT_SCHEMA = DATABASE() AND rc.TABLE_NAME = ?
			AND (rc.DELETE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT') OR rc.UPDATE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT'))
		ORDER BY k.CONSTRAINT_NAME`,
		[]any{table, table, table}, func(r *sql.Rows) error {
			var cc GuardCascade
			err := r.Scan(&cc.Constraint, &cc.Parent, &cc.ParentColumn, &cc.Column, &cc.OnDelete, &cc.OnUpdate, &cc.Columns)
			out = append(out, cc)
			return err
		})
	return out, err
}

// guardRefusal recognises the guard's SIGNAL: SQLSTATE OL423, and the
// message names the record (cut at 128 characters, MySQL's limit).
func (s *mysqlStore) GuardRefusal(err error, resources []string) (GuardRefusal, bool) {
	me, ok := mysqlErrorOf(err)
	if !ok || me.sqlState != guardSQLState {
		return GuardRefusal{}, false
	}
	return parseRefusal(me.message, resources), true
}
