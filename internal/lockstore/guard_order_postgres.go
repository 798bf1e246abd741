package lockstore

import (
	"strconv"
	"strings"
)

// Ordering a guarded write and a grant of a free record (PostgreSQL,
// docs/guard.md): a free record has no key row to hold FOR SHARE, so a row
// of the order table per bucket of records orders the two: a write shares
// it for each record without a key row, a grant's key-row insert takes it
// FOR UPDATE in a trigger. Only the guard's owner may lock these rows.

// pgOrderBuckets is how many order rows a resource's records fold into (a
// power of two): a statement stays within max_locks_per_transaction however
// many rows it writes, at the cost of a grant waiting for an open write of
// another record in its bucket.
const pgOrderBuckets = 64

// pgOrderSkip is the SQLSTATE that undoes pgSnapshotCheck's insert.
const pgOrderSkip = "OL000"

// pgBucket is the order table's key of record (res, id): 25 bits of the
// resource's hash above 6 of the id's, so each table has buckets of its own.
func pgBucket(res, id string) string {
	return "((hashtext(" + res + ") & 33554431) * " + strconv.Itoa(pgOrderBuckets) + " + (hashtext(" + id + ") & " + strconv.Itoa(pgOrderBuckets-1) + "))"
}

// orderTable is the order table of lt: one row per bucket of each guarded
// resource, closed to every role but the guard's owner.
func (s *postgresStore) orderTable(lt string) string {
	return strings.TrimSuffix(lt, s.table) + pgQuote(s.lockName()+"_order")
}

// orderTableSQL creates the order table, closed to PUBLIC.
func (s *postgresStore) orderTableSQL(lt string) []string {
	ot := s.orderTable(lt)
	return []string{`CREATE TABLE IF NOT EXISTS ` + ot + ` (k integer PRIMARY KEY)`, `REVOKE ALL ON TABLE ` + ot + ` FROM PUBLIC`}
}

// orderRowsSQL inserts every bucket row of the resources $1 (a text[]): g
// is the bucket's number itself, which pgBucket reaches by the id's hash.
func (s *postgresStore) orderRowsSQL(lt string) string {
	return `INSERT INTO ` + s.orderTable(lt) + ` (k) SELECT (hashtext(r) & 33554431) * ` + strconv.Itoa(pgOrderBuckets) + ` + g FROM unnest($1::text[]) r, generate_series(0, ` +
		strconv.Itoa(pgOrderBuckets-1) + `) g ON CONFLICT DO NOTHING`
}

// orderShares locks FOR SHARE, in bucket order, the buckets of keys (a
// SELECT of resource and id text) and counts them.
func (s *postgresStore) orderShares(lt, keys string) string {
	return "(SELECT count(*) FROM (SELECT 1 FROM " + s.orderTable(lt) + " o WHERE o.k IN (SELECT " + pgBucket("r", "i") +
		" FROM (" + keys + ") offlinelock_k(r, i)) ORDER BY o.k FOR SHARE OF o) offlinelock_o)"
}

// orderRequest is the CTE (offlinelock_order) by which a grant of several
// keys takes their buckets exclusive, in order, before any key row: request
// rows the grant trigger turns into bucket locks and discards.
func (s *postgresStore) orderRequest(keys string) string {
	return `offlinelock_oreq AS (INSERT INTO ` + s.table + ` (` + lockColumns + `) SELECT '', b::text, '', 'order', '', '', '', 0, clock_timestamp(), clock_timestamp()
	FROM (SELECT DISTINCT ` + pgBucket("r", "i") + ` AS b FROM (` + keys + `) offlinelock_k(r, i)) offlinelock_b ORDER BY b RETURNING 1),
offlinelock_order AS (SELECT count(*) AS n FROM offlinelock_oreq)`
}

// pgOrderKeys holds one record kind's written keys, read once.
const pgOrderKeys = "offlinelock_k"

// guardOrder wraps a record kind's probe: after it, the records with no key
// row take their order locks shared and are probed again, so a grant
// committed between the two is seen; then pgSnapshotCheck. Order locks come
// after row locks so a write of held records never waits on a grant.
func (s *postgresStore) guardOrder(lt, res, sel, probe string) (before, after string) {
	keyless := "SELECT " + res + ", k FROM unnest(" + pgOrderKeys + ") offlinelock_s(k) WHERE k IS NOT NULL AND NOT EXISTS (SELECT 1 FROM " + lt +
		" m WHERE m.resource = " + res + " AND m.lock_id = k AND m.holder = '')"
	before = "\t\tDECLARE " + pgOrderKeys + " text[] := ARRAY(" + sel + "); BEGIN\n"
	after = "\t\tIF EXISTS (" + keyless + ") THEN\n\t\t\tPERFORM " + s.orderShares(lt, keyless) + ";\n\t" + probe +
		"\t\tEND IF;\n\t\tIF current_setting('transaction_isolation') <> 'read committed' THEN\n\t\t\t" + pgSnapshotCheck(lt, res) + "\n\t\tEND IF;\n\t\tEND;\n"
	return before, after
}

// pgSnapshotCheck refuses with 40001 a write whose snapshot cannot see a key
// row committed since (INSERT … ON CONFLICT DO NOTHING raises it); a row it
// inserts is undone with its subtransaction.
func pgSnapshotCheck(lt, res string) string {
	return "BEGIN INSERT INTO " + lt + " (" + lockColumns + ") SELECT DISTINCT " + res + ", k, '', '', '', '', '', 0, clock_timestamp(), clock_timestamp() FROM unnest(" + pgOrderKeys +
		") offlinelock_s(k) WHERE k IS NOT NULL ON CONFLICT DO NOTHING; RAISE SQLSTATE '" + pgOrderSkip + "'; EXCEPTION WHEN SQLSTATE '" + pgOrderSkip + "' THEN NULL; END;"
}

// pgGrantWait bounds a grant's wait for its record's open writes; past it
// the grant is ErrBeingWritten.
const pgGrantWait = "2s"

// grantOrderSQL is the lock table's trigger that orders a grant after its
// record's open writes: an inserted key row takes the bucket exclusive; an
// existing one needs none (writers share it); an empty access grants nothing.
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

// orderKeys takes the exclusive order locks of keys, in bucket order, in c's
// transaction, so two grants never wait on each other in opposite orders.
func (s *postgresStore) orderKeys(c Conn, keys []Key) error {
	resources, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		resources[i], ids[i] = k.Resource, k.ID
	}
	_, err := c.Exec("WITH "+s.orderRequest("SELECT * FROM unnest($1::text[], $2::text[])")+" SELECT n FROM offlinelock_order", resources, ids)
	return err
}
