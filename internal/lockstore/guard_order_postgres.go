package lockstore

import (
	"hash/fnv"
	"strconv"
)

// Ordering a guarded write and a grant of the same record (PostgreSQL). A
// free record has no key row, so the guard's FOR SHARE on it holds
// nothing; a transaction-level advisory lock per record orders the two
// instead: a guarded write takes it shared for each record it wrote that
// has no key row (after its probe, then probes those again); a grant that
// inserts a key row takes it exclusive, in a trigger on the lock table, so
// it waits for the writes still open and a write that starts later waits for
// the grant and then sees it. Keys are folded into pgOrderBuckets buckets
// per lock table, so that no transaction ever holds more than that many
// of these locks, whatever it writes (the shared lock table has
// max_locks_per_transaction × max_connections slots for everyone).
// Transaction-level locks only: session-level ones would outlive a
// transaction behind PgBouncer's transaction pooling.

// pgOrderBuckets is how many advisory locks a lock table's records fold
// into (a power of two). A statement never takes more than the shared lock
// table's average share of a transaction (max_locks_per_transaction, 64 by
// default), however many rows it writes; measured, a 1000-row UPDATE pays
// about a third less for 64 buckets than for 1024. The cost: two records of
// one bucket are ordered as one, so a grant also waits for an open write
// of the other, or another grant of it, until their transactions end
// (grants are mostly one-statement transactions: Acquire, a load).
const pgOrderBuckets = 64

// pgOrderSkip is the SQLSTATE of the raise that undoes the old-snapshot
// probe's insert (pgSnapshotCheck); it never reaches a client.
const pgOrderSkip = "OL000"

// orderClass is the first int4 of the advisory locks: the lock table's.
func (s *postgresStore) orderClass() string {
	h := fnv.New32a()
	h.Write([]byte("offlinelock:order:" + s.lockName()))
	return strconv.Itoa(int(int32(h.Sum32())))
}

// pgBucket is the second int4 of the advisory lock of record (res, id),
// both SQL text expressions: 25 bits of the resource's hash above 6 bits
// of the id's, so that each table (each resource) has buckets of its own:
// a service's open bulk write of one table never delays a grant of
// another (two resources share buckets with a chance of 2^-25), and
// within one table two records share a bucket with a chance of 1 in
// pgOrderBuckets. A trigger's constant resource costs nothing per row
// (hashtext is immutable: the planner folds hashtext('<resource>') once).
func pgBucket(res, id string) string {
	return "((hashtext(" + res + ") & 33554431) * " + strconv.Itoa(pgOrderBuckets) + " + (hashtext(" + id + ") & " + strconv.Itoa(pgOrderBuckets-1) + "))"
}

// orderLocks is a scalar subquery that takes fn (pg_advisory_xact_lock or
// _shared) on the buckets of the records keys (a SELECT of resource and
// id text) names, in bucket order, so that two statements never take two
// buckets in opposite orders; it counts them.
func (s *postgresStore) orderLocks(fn, keys string) string {
	return "(SELECT count(*) FROM (SELECT " + fn + "(" + s.orderClass() + ", b) FROM (SELECT DISTINCT " + pgBucket("r", "i") +
		" AS b FROM (" + keys + ") offlinelock_k(r, i) ORDER BY 1 OFFSET 0) offlinelock_b) offlinelock_o)"
}

// pgOrderKeys is the variable of guardOrder's block: the keys of one
// record kind that the statement wrote, read once from the transition
// tables for the order locks, the probe and the old-snapshot check.
const pgOrderKeys = "offlinelock_k"

// guardOrder is a trigger's block for one record kind of a guarded table,
// around its probe (which reads the keys from pgOrderKeys and holds the
// key rows it finds FOR SHARE: those order any grant, takeover or release
// of their records by themselves). After the probe, the records with no
// key row take their order locks shared, and are probed again: a grant
// committed between the two is seen. Taking the order locks after the row
// locks, and only for records without a key row, keeps a write of held
// records from waiting for a grant that waits for its key rows. Then
// pgSnapshotCheck. sel is the records' keys, one SELECT.
func (s *postgresStore) guardOrder(lt, res, sel, probe string) (before, after string) {
	keyless := "SELECT " + res + ", k FROM unnest(" + pgOrderKeys + ") offlinelock_s(k) WHERE k IS NOT NULL AND NOT EXISTS (SELECT 1 FROM " + lt +
		" m WHERE m.resource = " + res + " AND m.lock_id = k AND m.holder = '')"
	before = "\t\tDECLARE " + pgOrderKeys + " text[] := ARRAY(" + sel + "); BEGIN\n"
	after = "\t\tIF EXISTS (" + keyless + ") THEN\n\t\t\tPERFORM " + s.orderLocks("pg_advisory_xact_lock_shared", keyless) + ";\n\t" + probe +
		"\t\tEND IF;\n\t\tIF current_setting('transaction_isolation') <> 'read committed' THEN\n\t\t\t" + pgSnapshotCheck(lt, res) + "\n\t\tEND IF;\n\t\tEND;\n"
	return before, after
}

// pgSnapshotCheck refuses, with a serialization failure (40001), a write
// whose snapshot (REPEATABLE READ, SERIALIZABLE) cannot see a key row of
// one of its records committed since: an INSERT … ON CONFLICT DO NOTHING
// meeting a row its snapshot cannot see raises 40001 there. A key row the
// snapshot sees passes (the probe judged it; FOR SHARE on one changed since
// raises 40001 itself); for a key with no row, the row it inserts is
// undone at once, with its subtransaction.
func pgSnapshotCheck(lt, res string) string {
	return "BEGIN INSERT INTO " + lt + " (" + lockColumns + ") SELECT DISTINCT " + res + ", k, '', '', '', '', '', 0, clock_timestamp(), clock_timestamp() FROM unnest(" + pgOrderKeys +
		") offlinelock_s(k) WHERE k IS NOT NULL ON CONFLICT DO NOTHING; RAISE SQLSTATE '" + pgOrderSkip + "'; EXCEPTION WHEN SQLSTATE '" + pgOrderSkip + "' THEN NULL; END;"
}

// pgGrantWait bounds a grant's wait for the writes of its record still
// open (the function's own lock_timeout, in force only while it runs):
// past it the grant is refused as ErrBeingWritten, so that a write left
// open, or a role holding the record's bucket, delays a grant by this
// much at most. A caller's context cancels the wait sooner.
const pgGrantWait = "2s"

// grantOrderSQL is the lock table's trigger that orders a grant after the
// writes of its record still open (see above): a key row inserted takes
// the record's order lock exclusive. A key row that exists already (a
// takeover, a lock asked for again) needs none: writers hold it FOR SHARE.
// A row of access ” grants nothing (pgSnapshotCheck inserts such rows).
// The wait is the grant statement's: the caller's context bounds it.
func (s *postgresStore) grantOrderSQL(schema string) []string {
	fn := schema + "." + pgQuote(s.guardPrefix()+"_grant")
	name := s.guardPrefix() + "_grant"
	lt := schema + "." + s.table
	return []string{`CREATE OR REPLACE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql ` + pgOwnRights + ` SET lock_timeout = '` + pgGrantWait + `' AS $offlinelock$
BEGIN
	IF NEW.access = '' OR NEW.holder <> '' OR EXISTS (SELECT 1 FROM ` + lt + ` l WHERE l.resource = NEW.resource AND l.lock_id = NEW.lock_id AND l.holder = '') THEN
		RETURN NEW; -- a key row that exists orders its grants itself: a writer holds it FOR SHARE
	END IF;
	PERFORM pg_advisory_xact_lock(` + s.orderClass() + `, ` + pgBucket("NEW.resource", "NEW.lock_id") + `);
	RETURN NEW;
END
$offlinelock$`, `DROP TRIGGER IF EXISTS ` + pgQuote(name) + ` ON ` + lt,
		`CREATE TRIGGER ` + pgQuote(name) + ` BEFORE INSERT ON ` + lt + ` FOR EACH ROW EXECUTE PROCEDURE ` + fn + `()`}
}

// orderKeys takes the exclusive order locks of keys, in bucket order, in
// c's transaction: a grant of several keys takes them all before its rows
// do one by one (in key order), so that two grants never wait on each
// other's buckets in opposite orders.
func (s *postgresStore) orderKeys(c Conn, keys []Key) error {
	resources, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		resources[i], ids[i] = k.Resource, k.ID
	}
	_, err := c.Exec("SELECT "+s.orderLocks("pg_advisory_xact_lock", "SELECT * FROM unnest($1::text[], $2::text[])"), resources, ids)
	return err
}
