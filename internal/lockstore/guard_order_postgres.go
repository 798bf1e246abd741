package lockstore

import (
	"strconv"
	"strings"
)

// Ordering a guarded write and a grant of the same record (PostgreSQL). A
// free record has no key row, so the guard's FOR SHARE on it holds
// nothing; a row of the order table per bucket of records orders the two
// instead: a guarded write locks it FOR SHARE for each record it wrote
// that has no key row (after its probe, then probes those again); a grant
// that inserts a key row locks it FOR UPDATE, in a trigger on the lock
// table, so it waits for the writes still open and a write that starts
// later waits for the grant and then sees it. Keys are folded into
// pgOrderBuckets buckets per resource, so that no statement locks more
// than that many of these rows per table, whatever it writes. The order
// table is closed to every role but the guard's owner: only the guard's
// functions and the lock table's writers (orderRequest) can lock its rows
// (issue 47: advisory locks, which it replaces, any role could hold).
// Row locks end with their transaction, which PgBouncer's transaction
// pooling keeps.

// pgOrderBuckets is how many order rows a resource's records fold into
// (a power of two). A statement never takes more than the shared lock
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

// pgBucket is the order table's key of record (res, id), both SQL text
// expressions: 25 bits of the resource's hash above 6 bits of the id's,
// so that each table (each resource) has buckets of its own: a service's
// open bulk write of one table never delays a grant of another (two
// resources share buckets with a chance of 2^-25), and within one table
// two records share a bucket with a chance of 1 in pgOrderBuckets. A
// trigger's constant resource costs nothing per row (hashtext is
// immutable: the planner folds hashtext('<resource>') once).
func pgBucket(res, id string) string {
	return "((hashtext(" + res + ") & 33554431) * " + strconv.Itoa(pgOrderBuckets) + " + (hashtext(" + id + ") & " + strconv.Itoa(pgOrderBuckets-1) + "))"
}

// orderTable is the order table of lt (the lock table, qualified): one
// row per bucket of each guarded resource, owned by the guard's owner and
// closed to every other role, so that no one but the guard's functions
// (which run with its owner's rights) and the lock table's writers
// (through its grant trigger, orderRequest) can lock its rows. Advisory
// locks, which it replaces, any role that may connect could take, their
// keys computed from the lock table's name or read from pg_locks.
func (s *postgresStore) orderTable(lt string) string {
	return strings.TrimSuffix(lt, s.table) + pgQuote(s.lockName()+"_order")
}

// orderTableSQL creates the order table, closed to PUBLIC.
func (s *postgresStore) orderTableSQL(lt string) []string {
	ot := s.orderTable(lt)
	return []string{`CREATE TABLE IF NOT EXISTS ` + ot + ` (k integer PRIMARY KEY)`, `REVOKE ALL ON TABLE ` + ot + ` FROM PUBLIC`}
}

// orderRowsSQL inserts the bucket rows of the resources $1 (a text[]),
// which a guarded table's plan names, before its triggers exist.
func (s *postgresStore) orderRowsSQL(lt string) string {
	return `INSERT INTO ` + s.orderTable(lt) + ` (k) SELECT DISTINCT ` + pgBucket("r", "g::text") + ` FROM unnest($1::text[]) r, generate_series(0, ` +
		strconv.Itoa(pgOrderBuckets-1) + `) g ON CONFLICT DO NOTHING`
}

// orderShares is a scalar subquery a guard's trigger function runs: it
// locks FOR SHARE, in bucket order, the bucket rows of the records keys
// (a SELECT of resource and id text) names, and counts them.
func (s *postgresStore) orderShares(lt, keys string) string {
	return "(SELECT count(*) FROM (SELECT 1 FROM " + s.orderTable(lt) + " o WHERE o.k IN (SELECT " + pgBucket("r", "i") +
		" FROM (" + keys + ") offlinelock_k(r, i)) ORDER BY o.k FOR SHARE OF o) offlinelock_o)"
}

// orderRequest is the CTE (offlinelock_order, one column n) by which a
// grant of several keys takes their buckets exclusive, in bucket order,
// before any key row: it inserts a request row per bucket into the lock
// table, which the grant trigger turns into a lock of the bucket row and
// then drops (RETURN NULL: nothing is written). The lock table's writers
// may insert; no one else may. keys is a SELECT of resource and id text.
func (s *postgresStore) orderRequest(keys string) string {
	return `offlinelock_oreq AS (INSERT INTO ` + s.table + ` (` + lockColumns + `) SELECT '', b::text, '', 'order', '', '', '', 0, clock_timestamp(), clock_timestamp()
	FROM (SELECT DISTINCT ` + pgBucket("r", "i") + ` AS b FROM (` + keys + `) offlinelock_k(r, i)) offlinelock_b ORDER BY b RETURNING 1),
offlinelock_order AS (SELECT count(*) AS n FROM offlinelock_oreq)`
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
	after = "\t\tIF EXISTS (" + keyless + ") THEN\n\t\t\tPERFORM " + s.orderShares(lt, keyless) + ";\n\t" + probe +
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
	IF NEW.resource = '' THEN -- a grant's request for a bucket (orderRequest): locked, nothing written
		IF NEW.access = 'order' THEN
			PERFORM 1 FROM ` + s.orderTable(lt) + ` o WHERE o.k = NEW.lock_id::integer FOR UPDATE;
		END IF;
		RETURN NULL;
	END IF;
	IF NEW.access = '' OR NEW.holder <> '' OR EXISTS (SELECT 1 FROM ` + lt + ` l WHERE l.resource = NEW.resource AND l.lock_id = NEW.lock_id AND l.holder = '') THEN
		RETURN NEW; -- a key row that exists orders its grants itself: a writer holds it FOR SHARE
	END IF;
	PERFORM 1 FROM ` + s.orderTable(lt) + ` o WHERE o.k = ` + pgBucket("NEW.resource", "NEW.lock_id") + ` FOR UPDATE;
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
	_, err := c.Exec("WITH "+s.orderRequest("SELECT * FROM unnest($1::text[], $2::text[])")+" SELECT n FROM offlinelock_order", resources, ids)
	return err
}
