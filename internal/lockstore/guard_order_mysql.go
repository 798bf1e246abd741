package lockstore

import (
	"database/sql"
	"strconv"
	"strings"
)

// The order table (docs/guard.md, "Its moment against a grant"): at READ
// COMMITTED a write of a record without a key row locks nothing, so every
// unfenced guarded write reads its record's bucket row LOCK IN SHARE MODE,
// and the insert of a missing key row reads it FOR UPDATE first (a BEFORE
// INSERT trigger on the lock table).

// mysqlOrderBuckets is each resource's bucket rows: a grant waits for an
// open write of another record of its table with a chance of one in this.
const mysqlOrderBuckets = 1024

// orderTable is the order table's name, quoted.
func (s *mysqlStore) orderTable() string { return s.Quote(s.lockName() + "_order") }

// mysqlBucket is the bucket of record (res, id), SQL expressions of the
// same bytes on both sides (a trigger's key, the lock table's row): 22
// bits of the resource's CRC32 above 10 bits of the record's.
func mysqlBucket(res, id string) string {
	return "(((CRC32(" + res + ") & 4194303) << 10) | (CRC32(CONCAT(" + res + ", X'00', " + id + ")) & " + strconv.Itoa(mysqlOrderBuckets-1) + "))"
}

// orderRowsSQL inserts the bucket rows of resources (as many ? as
// resources), made before a guarded table's triggers read them.
func (s *mysqlStore) orderRowsSQL(resources int) string {
	r := strings.TrimSuffix(strings.Repeat("SELECT CAST(? AS BINARY) AS r UNION ALL ", resources), " UNION ALL ")
	return `INSERT IGNORE INTO ` + s.orderTable() + ` (b) WITH RECURSIVE d(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 31)
SELECT ((CRC32(x.r) & 4194303) << 10) | (a.n * 32 + c.n) FROM (` + r + `) x, d a, d c`
}

// orderedProbe takes the record's bucket row shared, before the probe of
// the key row, through the seal (a TEMPORARY table lacks it: 1176 refuses).
func (s *mysqlStore) orderedProbe() string {
	return "SET @offlinelock_n = (SELECT COUNT(*) FROM " + s.orderTable() + " IGNORE INDEX (" + sealPlaceholder + ") WHERE b = " +
		mysqlBucket("@offlinelock_res", "@offlinelock_k") + mysqlShare + "); "
}

// ensureOrderRows inserts the order table's rows of plan's resources,
// where this user may (1142: it may not; 1146: no order table yet, which
// the routine's install makes).
func (s *mysqlStore) ensureOrderRows(c Conn, plan GuardPlan) error {
	resources := planResources(plan)
	if len(resources) == 0 {
		return nil
	}
	args := make([]any, len(resources))
	for i, r := range resources {
		args[i] = r
	}
	n, err := c.Exec(s.orderRowsSQL(len(resources)), args...)
	if code := mysqlCode(err); code == 1142 || code == 1146 {
		return nil
	}
	if err != nil || (n == 0 && c.plan == nil) || s.galera.Load() {
		return err
	}
	return s.settleLive(c) // the new rows' live is unknown
}

// orderSQL creates the order table, sealed with seal; each guarded
// table's install adds the bucket rows of its resources (orderRowsSQL).
func (s *mysqlStore) orderSQL(seal string) []string {
	return []string{"CREATE TABLE IF NOT EXISTS " + s.orderTable() + " (b BIGINT NOT NULL PRIMARY KEY, " + liveColumn + ", KEY " + s.Quote(seal) + " (b)) ENGINE=InnoDB"}
}

// grantOrderName is the lock table's trigger that orders grants.
func (s *mysqlStore) grantOrderName() string { return s.guardPrefix() + "_grant" }

// grantOrderSQL is that trigger: an insert of a missing key row takes its
// bucket exclusive. The key row's existence is a SELECT COUNT(*) … INTO, a
// consistent read: a subquery would share-lock it and two grants of one
// record would deadlock; FOR UPDATE is refused in its own trigger (1442).
func (s *mysqlStore) grantOrderSQL() string {
	return "CREATE TRIGGER " + s.Quote(s.grantOrderName()) + " BEFORE INSERT ON " + s.table +
		" FOR EACH ROW BEGIN /* offlinelock guard {version} */ DECLARE offlinelock_n BIGINT DEFAULT 0; " +
		"IF NEW.holder = '' THEN SELECT COUNT(*) INTO offlinelock_n FROM " + s.table + " WHERE resource = NEW.resource AND lock_id = NEW.lock_id AND holder = ''; " +
		"IF offlinelock_n = 0 THEN SET offlinelock_n = (SELECT COUNT(*) FROM " + s.orderTable() + " IGNORE INDEX (" + sealPlaceholder + ") WHERE b = " + mysqlBucket("NEW.resource", "NEW.lock_id") + " FOR UPDATE); " +
		"END IF; END IF; END"
}

// grantInsertName is the lock table's trigger after a row is inserted.
func (s *mysqlStore) grantInsertName() string { return s.guardPrefix() + "_grantins" }

// grantInsertSQL raises the row's live bucket, then probes a key row
// inserted with a lock, so the grant waits for its bucket's writes first.
// After the row: before it, the duplicate-key check share-locks and two
// grants deadlock (TestConcurrentAcquireHasExactlyOneWinner).
func (s *mysqlStore) grantInsertSQL() string {
	return "CREATE TRIGGER " + s.Quote(s.grantInsertName()) + " AFTER INSERT ON " + s.table +
		" FOR EACH ROW BEGIN /* offlinelock guard {version} */ " + liveDecl + s.raiseLive() +
		"IF NEW.holder = '' AND NEW.access <> '' THEN CALL " + s.Quote(s.probeName()) + "(NEW.resource, NEW.lock_id); END IF; END"
}

// installOrder creates the order table and the grant's trigger where they
// are missing or of another version; c holds the guard's DDL lock.
func (s *mysqlStore) installOrder(c Conn) error {
	// Only what is missing: a role that may not create it (the
	// application's, in a least-privileged deployment) finds it in place.
	seal, err := s.sealName(c)
	if err != nil {
		return err
	}
	var n, sealed, wide, live int64
	if _, err := c.Query(`SELECT COUNT(*), COUNT(INDEX_NAME), (SELECT COUNT(*) FROM information_schema.COLUMNS o WHERE o.TABLE_SCHEMA = DATABASE() AND o.TABLE_NAME = ?
			AND o.COLUMN_NAME = 'b' AND o.DATA_TYPE = 'bigint'), (SELECT COUNT(*) FROM information_schema.COLUMNS o WHERE o.TABLE_SCHEMA = DATABASE() AND o.TABLE_NAME = ?
			AND o.COLUMN_NAME = 'live')
		FROM information_schema.TABLES t LEFT JOIN information_schema.STATISTICS i
		ON i.TABLE_SCHEMA = t.TABLE_SCHEMA AND i.TABLE_NAME = t.TABLE_NAME AND i.INDEX_NAME = ? WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = ?`,
		[]any{s.lockName() + "_order", s.lockName() + "_order", seal, s.lockName() + "_order"}, func(r *sql.Rows) error { return r.Scan(&n, &sealed, &wide, &live) }); err != nil {
		return err
	}
	if n == 1 && (sealed == 0 || wide == 0) { // made before the seal it carries now, or with buckets shared by every table
		if _, err := c.Exec("DROP TABLE " + s.orderTable()); err != nil {
			return err
		}
		n = 0
	}
	if n != 1 {
		for _, q := range s.orderSQL(seal) {
			if _, err := c.Exec(q); err != nil {
				return err
			}
		}
	} else if live == 0 { // made before live buckets (guard_live_mysql.go): unknown until settled
		if _, err := c.Exec("ALTER TABLE " + s.orderTable() + " ADD COLUMN " + liveColumn); err != nil {
			return err
		}
	}
	if s.galera.Load() {
		return nil // galeraSkipsGrantOrder
	}
	// The triggers call the dispatcher of the probes
	// (guard_probe_mysql.go): it is there before them.
	if err := s.installDispatcher(c); err != nil {
		return err
	}
	if err := s.installLockTableTrigger(c, s.grantOrderName(), s.grantOrderSQL()); err != nil {
		return err
	}
	if err := s.installLockTableTrigger(c, s.probeTriggerName(), s.probeTriggerSQL()); err != nil {
		return err
	}
	if err := s.installLockTableTrigger(c, s.grantInsertName(), s.grantInsertSQL()); err != nil {
		return err
	}
	// Only once the triggers raise live may a bucket's be settled.
	return s.settleLive(c)
}

// installLockTableTrigger puts the lock table's trigger name, made by
// stmt, in place where it is not.
func (s *mysqlStore) installLockTableTrigger(c Conn, name, stmt string) error {
	version := guardVersion(stmt)
	state, err := s.triggersState(c, []string{name}, version)
	if err != nil || state == GuardOK || state == GuardHidden {
		return err
	}
	stmts, _, err := s.sealedViews(c, []string{stmt}, true)
	if err != nil {
		return err
	}
	q := strings.Replace(stmts[0], "{version}", version, 1)
	if s.mariadb.Load() {
		q = "CREATE OR REPLACE" + strings.TrimPrefix(q, "CREATE")
	} else if _, err := c.Exec("DROP TRIGGER IF EXISTS " + s.Quote(name)); err != nil {
		return err
	}
	_, err = c.Exec(q)
	return err
}

// galeraSkipsGrantOrder: Galera nodes now and then failed to load the lock
// table's triggers (1064), so they are not installed there (docs/guard.md).

// orderState is the grant trigger's state (triggersState).
func (s *mysqlStore) orderState(c Conn) (string, error) {
	if s.galera.Load() {
		return GuardOK, nil // galeraSkipsGrantOrder
	}
	state, err := s.triggersState(c, []string{s.grantOrderName()}, guardVersion(s.grantOrderSQL()))
	if err != nil || state != GuardOK {
		return state, err
	}
	if state, err := s.triggersState(c, []string{s.probeTriggerName()}, guardVersion(s.probeTriggerSQL())); err != nil || state != GuardOK {
		return state, err
	}
	return s.triggersState(c, []string{s.grantInsertName()}, guardVersion(s.grantInsertSQL()))
}
