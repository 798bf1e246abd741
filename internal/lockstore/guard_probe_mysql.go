package lockstore

import (
	"slices"
	"strings"
)

// The probe (MariaDB; docs/guard.md, "Prepared transactions"): XA PREPARE
// releases a write's shared locks but keeps its row locks, so a grant,
// once it holds its order, reads its record's rows in every table of the
// aggregate with a locking read bounded to 1 s; a row still locked is a
// prepared write's, and the grant is refused as being written. A procedure
// per guarded table, and a dispatcher made anew at each install. Not on
// Galera (no XA).

// probeName is the dispatcher; tableProbeName a table's probe.
func (s *mysqlStore) probeName() string { return s.guardPrefix() + "_probe" }

func (s *mysqlStore) tableProbeName(table string) string {
	return s.guardPrefix() + "_p" + guardName(s.lockName(), strings.ToLower(table))
}

// probeTriggerName is the lock table's update trigger.
func (s *mysqlStore) probeTriggerName() string { return s.guardPrefix() + "_grantupd" }

// Equal: an integer column is read by its index; other kinds spell keys in
// more than one way, and are read by scan.
func (s *mysqlStore) Equal(k KeyKind, expr, id, colType string) (string, bool) {
	if k != KindInt {
		return "", false
	}
	return expr + " = CAST(" + id + " AS DECIMAL(65,0))", true
}

// probeBody is the table's probe: a locking read of each record's rows.
// It reads every column, so that the row, not only an index entry, is locked.
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

// expiredWrite: a take-over probes only where the Write lock expired
// liveSlack or more ago; sooner, the old holder's save may be in flight,
// and ordinary writes read the key row FOR UPDATE instead, which XA
// PREPARE keeps (docs/guard.md, "Prepared transactions").
const expiredWrite = "(OLD.access <> 'write' OR OLD.expires_at + " + liveSlack + " <= " + mysqlClock + ")"

// probeTriggerSQL is the lock table's update trigger: a key row granted
// that was free, in read mode or expiredWrite is probed, after the row
// (grantInsertSQL says why) and after raising its live bucket.
func (s *mysqlStore) probeTriggerSQL() string {
	return "CREATE TRIGGER " + s.Quote(s.probeTriggerName()) + " AFTER UPDATE ON " + s.table +
		" FOR EACH ROW BEGIN /* offlinelock guard {version} */ " + liveDecl + s.raiseLive() +
		"IF NEW.holder = '' AND NEW.access <> '' AND " + expiredWrite + " AND NOT (NEW.session <=> OLD.session AND NEW.access <=> OLD.access AND NEW.acquired_at <=> OLD.acquired_at) THEN " +
		"CALL " + s.Quote(s.probeName()) + "(NEW.resource, NEW.lock_id); END IF; END"
}
