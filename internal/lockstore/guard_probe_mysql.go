package lockstore

import (
	"slices"
	"strings"
)

// Prepared transactions (MariaDB). A guarded write holds its order (the
// shared lock on its record's key row or bucket) to its commit, except in
// an XA transaction: XA PREPARE releases the shared locks of a transaction
// that changed rows (measured on 10.11, at READ COMMITTED and REPEATABLE
// READ), so a write let through before a grant could commit after it,
// into a record its holder loaded. No trigger can tell it runs inside XA.
// What a prepared transaction keeps is the exclusive locks of the rows it
// wrote. So a grant, once it holds its order (its key row locked, or its
// bucket taken for a key row it inserts), reads the record's rows in
// every table of its aggregate with a locking read (the probe), which
// waits 1 s at most (SET STATEMENT innodb_lock_wait_timeout = 1 FOR: a
// routine may not say NOWAIT, 1314, and a session setting changed in a
// routine would outlive an error, which no handler sees): a row still
// locked then is a prepared write's, and the grant is refused as being
// written (1205, ErrBeingWritten). By then the grant has waited (2 s at
// most) for the writes that held its order; what it waits for here is a
// commit still releasing its row locks (not waiting at all refused grants
// in that moment), or a prepared write. A write that started after the
// grant took its order, holds its row and waits for the grant's key row
// makes a deadlock, which InnoDB breaks at once: one of the two fails
// (1213), the grant as being written.
//
// The probe is a procedure per guarded table (its plan's records, each a
// locking read of the rows that belong to the record), installed with the
// table's triggers, and a dispatcher that calls every table's, made anew
// from the procedures in place at each install. The lock table's grant
// trigger calls it for a key row it inserts with a lock, and its update
// trigger for a key row that changes hands (another session, another
// access, or a lock taken anew). Reads by an index where the key's kind
// allows one (Equal), else by scan. Not on Galera, which has no XA (and
// whose nodes now and then failed to load the lock table's triggers).

// probeName is the dispatcher; tableProbeName a table's probe.
func (s *mysqlStore) probeName() string { return s.guardPrefix() + "_probe" }

func (s *mysqlStore) tableProbeName(table string) string {
	return s.guardPrefix() + "_p" + guardName(s.lockName(), strings.ToLower(table))
}

// probeTriggerName is the lock table's update trigger.
func (s *mysqlStore) probeTriggerName() string { return s.guardPrefix() + "_grantupd" }

// Equal: MariaDB compares an integer column with a number made of the
// key's text through the column's index; other kinds spell keys in more
// than one way, and are read by scan.
func (s *mysqlStore) Equal(k KeyKind, expr, id, colType string) (string, bool) {
	if k != KindInt {
		return "", false
	}
	return expr + " = CAST(" + id + " AS DECIMAL(65,0))", true
}

// probeBody is the table's probe: for each record of plan, a locking read
// of the table's rows that belong to (res, id). It reads every column
// (cols, the table's): a read that an index covers locks the index's
// entry only, which a write of another column leaves alone; one that
// needs the row locks the row itself.
func (s *mysqlStore) probeBody(plan GuardPlan, cols []string) string {
	var reads []string
	row := make([]string, len(cols))
	for i, c := range cols {
		row[i] = "offlinelock_r." + s.Quote(c)
	}
	all := "COUNT(CONCAT_WS(',', " + strings.Join(row, ", ") + "))"
	for _, rec := range plan.Records {
		joins, cond := "", "CONVERT("+rec.Key("offlinelock_r")+" USING binary) = id"
		if rec.Match != nil {
			joins, cond = rec.Match("offlinelock_r", "id")
		}
		reads = append(reads, "IF res = "+sqlLiteral(rec.Resource)+" THEN SET STATEMENT innodb_lock_wait_timeout = 1 FOR SELECT "+all+" INTO n FROM "+
			joins+s.Quote(plan.Table)+" offlinelock_r WHERE "+cond+mysqlShare+"; END IF;")
	}
	return `(res VARBINARY(512), id VARBINARY(1020))
COMMENT '{version}'
READS SQL DATA
BEGIN
	DECLARE n BIGINT DEFAULT 0;
	DECLARE EXIT HANDLER FOR 1146 BEGIN END; -- the table is gone: none of its rows to wait for
	` + strings.Join(reads, "\n\t") + `
END`
}

// dispatcherBody calls every table probe of names.
func (s *mysqlStore) dispatcherBody(names []string) string {
	calls := make([]string, 0, len(names))
	for _, n := range names {
		calls = append(calls, "CALL "+s.Quote(n)+"(res, id);")
	}
	return `(res VARBINARY(512), id VARBINARY(1020))
COMMENT '{version}'
READS SQL DATA
BEGIN
	` + strings.Join(append(calls, "DO 0;"), "\n\t") + `
END`
}

// probeColumns are table's columns, by name.
func (s *mysqlStore) probeColumns(c Conn, table string) ([]string, error) {
	return queryStrings(c, `SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY COLUMN_NAME`, table)
}

// tableProbes are the names of the table probes in place.
func (s *mysqlStore) tableProbes(c Conn) ([]string, error) {
	return queryStrings(c, `SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'PROCEDURE'
		AND ROUTINE_NAME LIKE ? AND ROUTINE_NAME <> ? ORDER BY ROUTINE_NAME`, strings.ReplaceAll(s.guardPrefix()+"_p", "_", `\_`)+"%", s.probeName())
}

// installProbe puts plan's table probe in place and makes the dispatcher
// call it; c holds the guard's DDL lock.
func (s *mysqlStore) installProbe(c Conn, plan GuardPlan) error {
	if s.galera.Load() {
		return nil
	}
	cols, err := s.probeColumns(c, plan.Table)
	if err != nil {
		return err
	}
	body, ok, err := s.sealedBody(c, s.probeBody(plan, cols), true)
	if err != nil || !ok {
		return err
	}
	if err := s.installRoutine(c, "PROCEDURE", s.tableProbeName(plan.Table), body); err != nil {
		return err
	}
	if c.plan != nil { // printed, not run: the dispatcher must call it all the same
		c.plan.probes = append(c.plan.probes, s.tableProbeName(plan.Table))
	}
	return s.installDispatcher(c)
}

// installDispatcher makes the dispatcher call the table probes in place,
// and those a plan made (printed, not run: not there yet).
func (s *mysqlStore) installDispatcher(c Conn) error {
	names, err := s.tableProbes(c)
	if err != nil {
		return err
	}
	if c.plan != nil {
		for _, n := range c.plan.probes {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return s.installRoutine(c, "PROCEDURE", s.probeName(), s.dispatcherBody(names))
}

// sealedBody resolves the sealed names in a routine's body (sealedViews);
// without create, a view missing leaves ok false.
func (s *mysqlStore) sealedBody(c Conn, body string, create bool) (string, bool, error) {
	out, ok, err := s.sealedViews(c, []string{body}, create)
	if err != nil || !ok {
		return "", false, err
	}
	return out[0], true, nil
}

// probeState is the state of plan's probe: its procedure as installProbe
// makes it, called by the dispatcher.
func (s *mysqlStore) probeState(c Conn, plan GuardPlan) (string, error) {
	if s.galera.Load() {
		return GuardOK, nil
	}
	cols, err := s.probeColumns(c, plan.Table)
	if err != nil {
		return "", err
	}
	body, ok, err := s.sealedBody(c, s.probeBody(plan, cols), false)
	if err != nil || !ok {
		return GuardDropped, err
	}
	state, err := s.routineState(c, "PROCEDURE", s.tableProbeName(plan.Table), body)
	if err != nil || state != GuardOK {
		return state, err
	}
	names, err := s.tableProbes(c)
	if err != nil {
		return "", err
	}
	return s.routineState(c, "PROCEDURE", s.probeName(), s.dispatcherBody(names))
}

// expiredWrite: how a prepared write made while a Write lock was expired
// is ordered before the lock is taken again. The take-over cannot simply
// probe: the rows locked then may be the old holder's save in flight,
// which its fence fails at commit once the lock has moved (the seed's
// paused save), and which the grant must not wait for. So it depends on
// how long ago the lock expired:
//
//   - Less than liveSlack ago, the record's bucket is still live (a grant
//     raises it to the expiry plus liveSlack, settling counts the locks
//     expired within liveSlack, and quieting waits until live is past),
//     so every ordinary write of it runs the guard's procedure. That
//     finds the Write lock expired and reads the key row again FOR
//     UPDATE: an exclusive lock, which XA PREPARE keeps. The take-over's
//     update of the key row waits for it (2 s at most, then refuses as
//     being written). The plugin's fenced writes, the holder's save among
//     them, do not lock the key row.
//   - liveSlack or more ago, the take-over probes, as a first grant does:
//     an old save still in flight that long after its lock expired holds
//     the grant off 1 s and it is refused as being written, until the
//     save ends (its fence fails it).
//
// A read that upgrades a shared lock to an exclusive one can deadlock
// with another writer of the same aggregate doing the same; InnoDB breaks
// it at once (docs/guard.md, "Prepared transactions").
const expiredWrite = "(OLD.access <> 'write' OR OLD.expires_at + " + liveSlack + " <= " + mysqlClock + ")"

// probeTriggerSQL is the lock table's update trigger: a key row that
// was free (or under Read locks), or whose Write lock expired at least
// liveSlack ago (expiredWrite), and is granted is probed once its row is
// locked.
//
// It runs after the row (grantInsertSQL says why), and raises the row's
// live bucket before the probe.
func (s *mysqlStore) probeTriggerSQL() string {
	return "CREATE TRIGGER " + s.Quote(s.probeTriggerName()) + " AFTER UPDATE ON " + s.table +
		" FOR EACH ROW BEGIN /* offlinelock guard {version} */ " + liveDecl + s.raiseLive() +
		"IF NEW.holder = '' AND NEW.access <> '' AND " + expiredWrite + " AND NOT (NEW.session <=> OLD.session AND NEW.access <=> OLD.access AND NEW.acquired_at <=> OLD.acquired_at) THEN " +
		"CALL " + s.Quote(s.probeName()) + "(NEW.resource, NEW.lock_id); END IF; END"
}
