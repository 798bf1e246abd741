package lockstore

import (
	"database/sql"
	"strconv"
	"strings"
)

// Ordering a guarded write and a grant of the same record (MariaDB, MySQL).
// The guard's LOCK IN SHARE MODE read of a record's key row orders a write
// against a grant only where it locks something: a key row that exists, or
// (REPEATABLE READ) the gap where a missing one would go. At READ COMMITTED
// InnoDB takes no gap locks, so a write of a record that has no key row
// held nothing, and a grant could be given while the write was still open
// (the lost update the guard is there to prevent). A client chooses its
// isolation level (and @@tx_isolation does not show a level set with SET
// TRANSACTION), so the guard cannot tell when it is safe to skip this.
//
// So, as on PostgreSQL (guard_order_postgres.go), a row
// per bucket of records in the order table (<lock table>_order) orders
// them: every write the guard checks without a fence reads its record's
// bucket row LOCK IN SHARE MODE before it probes the key row, and holds it
// until its transaction ends; an insert of a missing key row (the first
// step of a grant of a record that has none) reads the bucket FOR UPDATE
// first, in a BEFORE INSERT trigger on the lock table, so it waits for the
// writes still open, and a write that starts later waits for the grant's
// transaction and then sees its key row. A grant of a record whose key row
// exists takes no bucket: writers hold that row. Locking reads, not
// writes: on Galera they stay on their node and certify nothing.
//
// The cost is a grant that waits for an open write of another record of
// its bucket, and one indexed read per row a writer writes.

// mysqlOrderBuckets is how many bucket rows each resource (each lockable
// table) has in the order table: the chance that a grant waits for an
// open write of another record of its table is one in this; a record of
// another table shares none (but where two resources' CRC32s agree in 22
// bits: one in 4 million).
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

// orderedProbe is the trigger's statement that takes its record's bucket
// row shared, before the probe of the key row. It reads the order table as
// the probe reads the lock table, through the seal (an index of the same
// random name): a session's TEMPORARY table of its name lacks it, and the
// read fails (1176, a refusal) rather than reading that.
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
// bucket exclusive. Whether the key row exists is a SELECT COUNT(*) …
// INTO, which inside a trigger is a consistent read: a subquery there
// would read it LOCK IN SHARE MODE, and two grants of one record, each
// holding that shared lock and then wanting the row exclusive, would
// deadlock; FOR UPDATE of the lock table is refused in its own trigger
// (1442). (A client's sql_select_limit can hide the count from it; the
// trigger then takes the bucket it did not need, which only waits. A first
// form with a NOT FOUND handler was now and then not parsed on Galera's
// nodes, 1064, when they opened the table.) It reads the order table
// through the seal: whoever inserts into the lock table must not hide it.
func (s *mysqlStore) grantOrderSQL() string {
	return "CREATE TRIGGER " + s.Quote(s.grantOrderName()) + " BEFORE INSERT ON " + s.table +
		" FOR EACH ROW BEGIN /* offlinelock guard {version} */ DECLARE offlinelock_n BIGINT DEFAULT 0; " +
		"IF NEW.holder = '' THEN SELECT COUNT(*) INTO offlinelock_n FROM " + s.table + " WHERE resource = NEW.resource AND lock_id = NEW.lock_id AND holder = ''; " +
		"IF offlinelock_n = 0 THEN SET offlinelock_n = (SELECT COUNT(*) FROM " + s.orderTable() + " IGNORE INDEX (" + sealPlaceholder + ") WHERE b = " + mysqlBucket("NEW.resource", "NEW.lock_id") + " FOR UPDATE); " +
		"END IF; END IF; END"
}

// grantInsertName is the lock table's trigger after a row is inserted.
func (s *mysqlStore) grantInsertName() string { return s.guardPrefix() + "_grantins" }

// grantInsertSQL is that trigger: it raises the row's live bucket
// (raiseLive), then probes a key row inserted with a lock (the probe,
// guard_probe_mysql.go), in that order, so that the grant waits for the
// writes its bucket orders before it reads their rows. After the row, not
// before: a write statement in a trigger before the row leaves the
// statement's own duplicate-key check of the lock table taking a shared
// lock, and two grants of one record then deadlock as each upgrades it
// (TestConcurrentAcquireHasExactlyOneWinner).
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

// galeraSkipsGrantOrder: on a Galera node the grant's trigger is not
// installed. In CI, nodes now and then failed to load the lock table's
// triggers while sessions opened it (1064, "has an error in its body",
// "Query was empty", at shifting places), which no run of one server
// showed. There a grant is not ordered against an open READ COMMITTED
// write of a record that never had a key row (docs/guard.md).

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
