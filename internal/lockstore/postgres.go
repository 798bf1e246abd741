package lockstore

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// postgresStore is the lock table on PostgreSQL: ON CONFLICT makes a Write
// lock one statement, and the common loads lock and read in one too.
type postgresStore struct {
	*sqlStore
	// grants are rebuilt when Migrate finds the generation scheme this role can use.
	grants atomic.Pointer[pgGrantSQL]
	walGen atomic.Bool // this role reads the WAL timeline

	heldWrite, heldRead, fenceSQL string      // conditions added to loads and writes, built once
	setIdentity                   string      // postgresSetIdentity of the catalog: a write's identity (SignInsert, SignWhere)
	sweepSQL                      string      // one batch of sweep, bound, built once
	keysOK                        sync.Map    // tables whose key columns checkKeyColumns passed
	ordered                       atomic.Bool // the guard's grant order trigger is installed (guard_order_postgres.go)
	// setIdentityStatement is setIdentity as a statement of its own
	// (IdentityStatement).
	setIdentityStatement string
}

// setIdentityStatement is setIdentity as a statement of its own.
func NewPostgres(table, seq, catalog string, obs Observer) Store {
	s := &postgresStore{sqlStore: &sqlStore{obs: obs, table: table, seq: seq, catalog: catalog,
		clock: "clock_timestamp()", bind: dollarBind, fenceRead: " FOR SHARE",
		timeArg: func(t time.Time) any { return t.UTC() },
		// NewPostgres is the lock table on PostgreSQL (quoted names); obs may be nil.
		filter: func(col string) string { return col + " IS NOT DISTINCT FROM ?" }}}
	s.nextGens = s.nextGenerations
	s.revision.Store(GuardRevision)
	// btree indexes cannot answer IS NOT DISTINCT FROM; the columns are NOT NULL.
	s.setIdentity = postgresSetIdentity(catalog)
	s.setIdentityStatement = "SELECT " + dollarBind(s.setIdentity)
	s.identity = s.setIdentity + ` IS NOT NULL`
	s.walGen.Store(true)
	s.buildGrants()
	s.sweepSQL = s.sweepStatement()
	s.heldWrite = s.heldSQL(`holder = '' AND access = 'write'`)
	s.heldRead = s.heldSQL(`(holder = '' AND access = 'write' OR holder = session)`)
	s.fenceSQL = `(SELECT set_config('offlinelock.proof', ?, true) FROM (SELECT 1 FROM ` + s.table + ` WHERE resource = ? AND lock_id = ? AND holder = '' AND access = 'write' AND ` +
		s.eq("session") + ` AND expires_at > clock_timestamp() FOR SHARE) offlinelock_fence) IS NOT NULL`
	return s
}

// The fence leaves its proof for the guard after the row is locked.
const grantReturning = "resource, lock_id, token, generation, acquired_at, expires_at"

// dollarBind numbers ? placeholders as $1, $2 …; the lock table's SQL
// never contains a literal question mark.
func dollarBind(query string) string { return bindFrom(query, 0) }

// bindFrom numbers ? placeholders from $after+1, for SQL that goes after
// after parameters of another statement's.
func bindFrom(query string, after int) string {
	n := strings.Count(query, "?")
	if n == 0 {
		return query
	}
	b := make([]byte, 0, len(query)+3*n)
	for {
		i := strings.IndexByte(query, '?')
		if i < 0 {
			return string(append(b, query...))
		}
		after++
		b = append(append(append(b, query[:i]...), '$'), strconv.Itoa(after)...)
		query = query[i+1:]
	}
}

func (s *postgresStore) RowLocks() bool { return true }

// Migrate creates what is missing under an advisory lock, since CREATE … IF
// NOT EXISTS alone can race on the catalog.
func (s *postgresStore) Migrate(c Conn) error {
	c = s.observed(c)
	if err := s.checkServer(c); err != nil {
		return err
	}
	return pgBoundedTx(c, func(c Conn) error {
		if _, err := c.Exec(`SELECT pg_advisory_xact_lock(hashtext($1))`, "offlinelock:migrate:"+s.table); err != nil {
			return err
		}
		if ok, err := s.migrated(c); err != nil || ok {
			if err == nil && c.plan == nil {
				err = s.hashTokens(c)
			}
			if err == nil {
				err = s.checkPrivileges(c)
			}
			if err == nil {
				err = s.KeepEpoch(c)
			}
			return err // in place: a role that may not create it verifies
		}
		for _, stmt := range []string{
			`CREATE TABLE IF NOT EXISTS ` + s.catalog + ` (name varchar(128) COLLATE "C" PRIMARY KEY, spec text NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS ` + s.table + ` (
	resource    varchar(128) COLLATE "C" NOT NULL,
	lock_id     varchar(255) COLLATE "C" NOT NULL,
	holder      varchar(255) COLLATE "C" NOT NULL,
	access      varchar(5)   NOT NULL,
	session     varchar(255) COLLATE "C" NOT NULL,
	user_name   varchar(255) NOT NULL,
	token       varchar(64)  NOT NULL,
	generation  bigint       NOT NULL,
	acquired_at timestamptz  NOT NULL,
	expires_at  timestamptz  NOT NULL,
	reason      varchar(300) NOT NULL DEFAULT '',
	PRIMARY KEY (resource, lock_id, holder))`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(s.table, "session") + ` ON ` + s.table + ` (session)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(s.table, "expires") + ` ON ` + s.table + ` (expires_at)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(s.table, "token") + ` ON ` + s.table + ` (token)`,
			`CREATE SEQUENCE IF NOT EXISTS ` + s.seq + ` AS bigint NO CYCLE`,
		} {
			if _, err := c.Exec(stmt); err != nil {
				return fmt.Errorf("offlinelock: creating lock table %s: %w%s", s.table, err, OwnerHint(err))
			}
		}
		if c.plan != nil {
			return nil // made with its reason column, and no token to hash
		}
		err := reasonColumn(c, func() (bool, error) { return s.hasReason(c) }, `ALTER TABLE `+s.table+` ADD COLUMN reason varchar(300) NOT NULL DEFAULT ''`)
		if err != nil {
			return fmt.Errorf("offlinelock: adding the reason column to lock table %s: %w", s.table, err)
		}
		if err := s.hashTokens(c); err != nil {
			return err
		}
		return s.KeepEpoch(c)
	})
}

// migrated reports whether everything Migrate creates is there.
func (s *postgresStore) migrated(c Conn) (bool, error) {
	var n int
	_, err := c.Query(`SELECT count(*) FROM unnest($1::text[]) v(name) WHERE to_regclass(v.name) IS NOT NULL`,
		[]any{[]string{s.catalog, s.table, indexName(s.table, "session"), indexName(s.table, "expires"), indexName(s.table, "token"), s.seq}},
		func(r *sql.Rows) error { return r.Scan(&n) })
	if err != nil || n < 6 {
		return false, err
	}
	return s.hasReason(c)
}

// hasReason reports whether the lock table has its reason column.
func (s *postgresStore) hasReason(c Conn) (bool, error) {
	cols, err := queryStrings(c, `SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'reason' AND NOT attisdropped`, s.table)
	return len(cols) > 0, err
}

// checkPrivileges names the grants a role that found the lock table lacks,
// so that the first Acquire does not fail with a bare "permission denied".
func (s *postgresStore) checkPrivileges(c Conn) error {
	var missing []string
	_, err := c.Query(`SELECT g FROM (VALUES
		($1::text, has_table_privilege($1, 'SELECT') AND has_table_privilege($1, 'INSERT') AND has_table_privilege($1, 'UPDATE') AND has_table_privilege($1, 'DELETE'),
			'GRANT SELECT, INSERT, UPDATE, DELETE ON ' || $1),
		($2::text, has_table_privilege($2, 'SELECT') AND has_table_privilege($2, 'INSERT') AND has_table_privilege($2, 'UPDATE'), 'GRANT SELECT, INSERT, UPDATE ON ' || $2),
		($3::text, has_sequence_privilege($3, 'USAGE'), 'GRANT USAGE ON SEQUENCE ' || $3)) v(o, ok, g) WHERE NOT ok`,
		[]any{s.table, s.catalog, s.seq}, func(r *sql.Rows) error {
			var g string
			err := r.Scan(&g)
			missing = append(missing, g)
			return err
		})
	if err != nil || len(missing) == 0 {
		return err
	}
	return fmt.Errorf("offlinelock: permission denied: this role may not use the lock table as every grant does; as the owner, run: %s TO <this role>",
		strings.Join(missing, " TO <this role>; "))
}

// OwnerHint is what to do when a role may not create the lock table or the guard.
func OwnerHint(err error) string {
	if !Denied(err) {
		return ""
	}
	return " (this database role may not create it: create the lock table and the guard once as their owner, with `offlinelock guard install --dsn <the owner's DSN>` or db.Use run as the owner; docs/guard.md, Roles and grants)"
}

// Denied says whether err is the database's refusal of a privilege.
func Denied(err error) bool {
	if sqlState(err) == "42501" {
		return true
	}
	switch mysqlCode(err) {
	case 1044, 1142, 1143, 1227, 1370, 1419:
		return true
	}
	return false
}

// hashTokens replaces the plain tokens an older version stored by their
// hashes; running it again changes nothing.
func (s *postgresStore) hashTokens(c Conn) error {
	_, err := c.Exec(`UPDATE ` + s.table + ` SET token = encode(sha256(convert_to(token, 'UTF8')), 'hex') WHERE length(token) = ` + strconv.Itoa(tokenLen))
	if err != nil {
		return fmt.Errorf("offlinelock: hashing the tokens of lock table %s: %w", s.table, err)
	}
	return nil
}

// pgGrantSQL is the Write grants' statements for one generation scheme.
type pgGrantSQL struct {
	one, many   string // the Write grants, bound
	manyOrdered string // many taking its order locks first (guard_order_postgres.go)
	oneCTE      string // grantPrefix's grant, unbound
	// prefixes[n] is grantPrefix's SQL after n arguments, for the commonest n.
	prefixes [8]string
}

// buildGrants builds the Write grants' statements for walGen's scheme.
func (s *postgresStore) buildGrants() {
	g := &pgGrantSQL{
		one:  dollarBind(s.writeGrantOne(grantReturning, "?")),
		many: dollarBind(s.writeGrant(grantReturning)),
		manyOrdered: dollarBind(`WITH ` + s.orderRequest("SELECT * FROM unnest(?::text[], ?::text[])") + ` ` +
			strings.Replace(s.writeGrant(grantReturning), " ORDER BY k.ord", " WHERE (SELECT n FROM offlinelock_order) >= 0 ORDER BY k.ord", 1)),
		// GORM's log shows the load's arguments: the hash goes as bytes (<binary>).
		oneCTE: s.writeGrantOne("1", "encode(?::bytea, 'hex')"),
	}
	for n := range g.prefixes {
		g.prefixes[n] = grantPrefixSQL(g.oneCTE, n)
	}
	s.grants.Store(g)
}

// nextGenerations returns n fresh values of the generation sequence.
func (s *postgresStore) nextGenerations(c Conn, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	gens := make([]int64, 0, n)
	_, err := c.Query(`SELECT `+s.generation()+` FROM generate_series(1, $1)`, []any{n}, func(r *sql.Rows) error {
		var g int64
		err := r.Scan(&g)
		gens = append(gens, g)
		return err
	})
	if err == nil && len(gens) != n {
		err = errGenerationCounter
	}
	return gens, err
}

// writeRefresh and writeGrantable are the ON CONFLICT part of every Write
// grant: granting again keeps token, generation and acquisition time and
// never shortens the expiry.
const (
	writeSame    = `l.access = 'write' AND l.session = EXCLUDED.session AND l.expires_at > clock_timestamp()`
	writeRefresh = `
	token       = CASE WHEN ` + writeSame + ` THEN l.token ELSE EXCLUDED.token END,
	generation  = CASE WHEN ` + writeSame + ` THEN l.generation ELSE EXCLUDED.generation END,
	acquired_at = CASE WHEN ` + writeSame + ` THEN l.acquired_at ELSE EXCLUDED.acquired_at END,
	access = 'write', session = EXCLUDED.session, user_name = EXCLUDED.user_name,
	expires_at = GREATEST(EXCLUDED.expires_at, CASE WHEN l.access = 'write' AND l.session = EXCLUDED.session THEN l.expires_at END)`
	writeGrantable = `l.access = '' OR (l.access = 'write' AND (l.session = EXCLUDED.session OR l.expires_at <= clock_timestamp()))`
)

// writeGrant is the Write grant of arrays of keys; ? are the session, user,
// TTL (µs), resources, ids and hashes.
func (s *postgresStore) writeGrant(returning string) string {
	return `INSERT INTO ` + s.table + ` AS l (` + lockColumns + `)
SELECT k.resource, k.lock_id, '', 'write', ?, ?, k.token, ` + s.generation() + `, clock_timestamp(), clock_timestamp() + ? * interval '1 microsecond'
FROM unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS k(resource, lock_id, token, ord) ORDER BY k.ord
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET ` + writeRefresh + `
WHERE ` + writeGrantable + `
RETURNING ` + returning
}

// writeGrantOne is writeGrant for one key (VALUES plans faster than unnest):
// resource, id, session, user, hash and TTL (µs).
func (s *postgresStore) writeGrantOne(returning, hash string) string {
	return `INSERT INTO ` + s.table + ` AS l (` + lockColumns + `)
VALUES (?, ?, '', 'write', ?, ?, ` + hash + `, ` + s.generation() + `, clock_timestamp(), clock_timestamp() + ? * interval '1 microsecond')
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET ` + writeRefresh + `
WHERE ` + writeGrantable + `
RETURNING ` + returning
}

// Grant takes Write locks in one statement per batch; Read locks go through
// the serialised path, which names holders.
func (s *postgresStore) Grant(c Conn, keys []Key, o Owner, access Access, ttl time.Duration) (map[Key]Granted, error) {
	c = s.observed(c)
	var got map[Key]Granted
	var err error
	switch {
	case access == Write: // its order locks ride in its own statement
		got, err = allOrNothing(s.grantWrites(c, keys, o, ttl, s.grantBatch))
	case len(keys) > 1 && s.ordered.Load(): // the order locks first
		err = c.inTx(func(c Conn) error {
			err := s.orderKeys(c, keys)
			if err == nil {
				got, err = allOrNothing(s.decide(c, keys, o, access, ttl))
			}
			return err
		})
	default:
		got, err = allOrNothing(s.decide(c, keys, o, access, ttl))
	}
	return got, BeingWritten(err)
}

func (s *postgresStore) grantBatch(c Conn, keys []Key, o Owner, ttl time.Duration, got map[Key]Granted) error {
	tokens, hashes, err := batchTokens(keys)
	if err != nil {
		return err
	}
	// Only the columns not known already come back; only the statement
	// sent has its arguments built (an Acquire is one key).
	g := s.grants.Load()
	var q string
	var args []any
	if len(keys) == 1 {
		q, args = g.one, []any{keys[0].Resource, keys[0].ID, o.Session, o.User, hashes[keys[0]], ttl.Microseconds()}
	} else {
		resources, ids, sent := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
		for i, k := range keys {
			resources[i], ids[i], sent[i] = k.Resource, k.ID, hashes[k]
		}
		q, args = g.many, []any{o.Session, o.User, ttl.Microseconds(), resources, ids, sent}
		if s.ordered.Load() {
			q, args = g.manyOrdered, []any{resources, ids, o.Session, o.User, ttl.Microseconds(), resources, ids, sent}
		}
	}
	_, err = c.Query(q, args, func(r *sql.Rows) error {
		l := Lock{Access: Write, Owner: o}
		if err := r.Scan(&l.Resource, &l.ID, &l.Token, &l.Generation, &l.AcquiredAt, &l.ExpiresAt); err != nil {
			return err
		}
		l.AcquiredAt, l.ExpiresAt = l.AcquiredAt.UTC(), l.ExpiresAt.UTC()
		got[Key{l.Resource, l.ID}] = grantedRow(l, tokens, hashes)
		return nil
	})
	return err
}

// keyLocksOf is a CTE that row-locks, in (resource, lock_id) order, the key
// rows of the records that rows matching cond touch, as grants do, so no two
// statements wait on each other in opposite orders.
func (s *postgresStore) keyLocksOf(cond string) string {
	return `WITH keys AS (SELECT k.resource, k.lock_id FROM ` + s.table + ` k JOIN (SELECT DISTINCT resource, lock_id FROM ` +
		s.table + ` WHERE ` + cond + `) c ON k.resource = c.resource AND k.lock_id = c.lock_id WHERE k.holder = '' ORDER BY k.resource, k.lock_id FOR UPDATE OF k) `
}

// Drop deletes session's locks on keys with their key rows taken first.
func (s *postgresStore) Drop(c Conn, keys []Key, session string) error {
	c = s.observed(c)
	for _, batch := range chunks(sortKeys(keys)) {
		list, args := keyList(batch)
		q := `WITH keys AS (SELECT resource, lock_id FROM ` + s.table + ` WHERE holder = '' AND (resource, lock_id) IN (VALUES ` + list +
			`) ORDER BY resource, lock_id FOR UPDATE) DELETE FROM ` + s.table + ` WHERE (resource, lock_id) IN (SELECT resource, lock_id FROM keys) AND ` + s.eq("session")
		if _, err := c.Exec(dollarBind(q), append(args, session)...); err != nil {
			return err
		}
	}
	return nil
}

func (s *postgresStore) ReleaseAll(c Conn, session string) (int64, error) {
	c = s.observed(c)
	return c.Exec(s.keyLocksOf(`session = $1`)+
		`DELETE FROM `+s.table+` l USING keys WHERE l.session = $1 AND l.resource = keys.resource AND l.lock_id = keys.lock_id`, session)
}

// Renew locks the key rows in order, then extends the session's rows and
// the read-mode key rows of what it reads.
func (s *postgresStore) Renew(c Conn, session string, ttl time.Duration) (int64, error) {
	c = s.observed(c)
	now, err := s.clockAt(c)
	if err != nil {
		return 0, err
	}
	var n int64
	_, err = c.Query(s.keyLocksOf(`session = $1 AND expires_at > $3`)+`, renewed AS (
	UPDATE `+s.table+` l SET expires_at = GREATEST(l.expires_at, $2) FROM keys
	WHERE l.session = $1 AND l.expires_at > $3 AND l.resource = keys.resource AND l.lock_id = keys.lock_id
	RETURNING l.resource, l.lock_id, l.holder
), readkeys AS (
	UPDATE `+s.table+` l SET expires_at = GREATEST(l.expires_at, $2) FROM (SELECT DISTINCT resource, lock_id FROM renewed WHERE holder <> '') r
	WHERE l.holder = '' AND l.access = 'read' AND l.resource = r.resource AND l.lock_id = r.lock_id
	RETURNING 1
)
SELECT (SELECT count(*) FROM renewed), (SELECT count(*) FROM readkeys)`, []any{session, now.Add(ttl), now}, func(r *sql.Rows) error {
		var k int64
		return r.Scan(&n, &k)
	})
	return n, err
}

// Sweep deletes the expired rows of postgresSweepBatch records at a time,
// found through the expiry index from where the last batch ended (cur), and
// skips records others are changing (SKIP LOCKED). Its own transaction
// commits with synchronous_commit off: a lost batch only leaves expired
// rows, and acquires do not queue behind the sweep's flushes.
func (s *postgresStore) Sweep(c Conn, cur *SweepCursor) (int64, bool, error) {
	c = s.observed(c)
	var n, scanned int64
	batch := func(c Conn) error {
		var last sql.NullTime
		_, err := c.Query(s.sweepSQL, []any{cur.After}, func(r *sql.Rows) error { return r.Scan(&n, &scanned, &last) })
		if last.Valid {
			cur.After = last.Time
		}
		return err
	}
	var err error
	if _, callers := c.db.Statement.ConnPool.(gorm.TxCommitter); callers {
		// In the caller's transaction durability is the caller's.
		err = withSweepPlan(c, batch)
	} else {
		err = c.inTx(func(c Conn) error {
			if _, err := c.Exec(`SELECT set_config('synchronous_commit', 'off', true), ` + sweepPlanSettings); err != nil {
				return err
			}
			return batch(c)
		})
	}
	return n, scanned >= postgresSweepBatch, err
}

// sweepPlanSettings keep the sweep's plan on the expiry index even without
// planner statistics.
const sweepPlanSettings = `set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)`

// withSweepPlan runs fn under sweepPlanSettings, then restores them.
func withSweepPlan(c Conn, fn func(Conn) error) error {
	var bitmap, seq string
	if _, err := c.Query(`SELECT current_setting('enable_bitmapscan'), current_setting('enable_seqscan'), `+sweepPlanSettings, nil,
		func(r *sql.Rows) error { var a, b string; return r.Scan(&bitmap, &seq, &a, &b) }); err != nil {
		return err
	}
	err := fn(c)
	if _, rerr := c.Exec(`SELECT set_config('enable_bitmapscan', $1, true), set_config('enable_seqscan', $2, true)`, bitmap, seq); err == nil {
		err = rerr
	}
	return err
}

// postgresSweepBatch is the rows one sweep statement looks at: small
// batches keep commits, and so acquires' p99, short (BenchmarkSweep).
const postgresSweepBatch = 50

// sweepStatement is one batch: rows deleted, rows looked at, and the latest
// expiry seen (where the next batch starts).
func (s *postgresStore) sweepStatement() string {
	return fmt.Sprintf(`WITH due AS (
	SELECT resource, lock_id, expires_at FROM %[1]s WHERE expires_at >= $1 AND expires_at <= statement_timestamp() ORDER BY expires_at LIMIT %[2]d),
keys AS (
	SELECT resource, lock_id FROM %[1]s WHERE holder = '' AND (resource, lock_id) IN (SELECT resource, lock_id FROM due)
	ORDER BY resource, lock_id FOR UPDATE SKIP LOCKED),
gone AS (
	DELETE FROM %[1]s l USING keys WHERE l.expires_at <= clock_timestamp() AND l.resource = keys.resource AND l.lock_id = keys.lock_id
	RETURNING 1)
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM due), (SELECT max(expires_at) FROM due)`, s.table, postgresSweepBatch)
}

// HeldCondition: the session holds a fresh lock on k. Read-only.
func (s *postgresStore) HeldCondition(k Key, session string, access Access, margin time.Duration) clause.Expression {
	q := s.heldWrite
	if access == Read {
		q = s.heldRead
	}
	return clause.Expr{SQL: q, Vars: []any{k.Resource, k.ID, session, margin.Microseconds()}}
}

// heldSQL is HeldCondition's SQL: the key row (Write) or also a reader row.
func (s *postgresStore) heldSQL(held string) string {
	return `EXISTS (SELECT 1 FROM ` + s.table + ` WHERE resource = ? AND lock_id = ? AND ` + s.eq("session") + ` AND ` + held +
		` AND expires_at > clock_timestamp() + ? * interval '1 microsecond')`
}

// FenceCondition is the folded fence of session's write of k. It leaves a
// proof (each part prefixed by its length) in offlinelock.proof once it
// row-locks the lock, so the guard skips its probe (pgProved); the lock
// table is part of it since several lock tables can guard one table.
func (s *postgresStore) FenceCondition(k Key, session string) clause.Expression {
	lock := strings.Trim(s.table, `"`)
	proof := strconv.Itoa(len(lock)) + ":" + lock + strconv.Itoa(len(session)) + ":" + session + strconv.Itoa(len(k.Resource)) + ":" + k.Resource + k.ID
	return clause.Expr{SQL: s.fenceSQL, Vars: []any{proof, k.Resource, k.ID, session}}
}

// grantCTE names the WITH clause of grantPrefix.
const grantCTE = "offlinelock_grant"

func (s *postgresStore) GrantPrefix(k Key, o Owner, token string, ttl time.Duration, after int) (string, []any) {
	g := s.grants.Load()
	q := ""
	if after < len(g.prefixes) {
		q = g.prefixes[after]
	} else {
		q = grantPrefixSQL(g.oneCTE, after)
	}
	return q, []any{k.Resource, k.ID, o.Session, o.User, tokenDigest(token), ttl.Microseconds()}
}

func grantPrefixSQL(oneCTE string, after int) string {
	return `WITH ` + grantCTE + ` AS (` + bindFrom(oneCTE, after) + `) `
}

func (s *postgresStore) GrantCondition() clause.Expression {
	return clause.Expr{SQL: `EXISTS (SELECT 1 FROM ` + grantCTE + `)`}
}

// FindAndLock finds the keys and locks them all or none in one statement,
// aborting itself (22012) when one is refused. With no key row yet it is a
// plain INSERT (ON CONFLICT costs a fifth more); a row inserted meanwhile
// fails it with 23505, which sends the load down the general path too. It
// is all keys one way or the other: mixing deadlocks overlapping loads.
func (s *postgresStore) FindAndLock(c Conn, keysSQL string, vars []any, column, resource string, o Owner, token string, ttl time.Duration) ([]GrantRow, bool, error) {
	c = s.observed(c)
	hash := tokenHash(token)
	args := append(vars, resource, o.Session, o.User, hash, ttl.Microseconds())
	var grants []GrantRow
	c.answer = sendsToGeneralPath
	_, err := c.Query(s.findAndLockSQL(keysSQL, column, len(vars), s.ordered.Load()), args, func(r *sql.Rows) error {
		var id *string
		var fresh *bool // NULL, with id, in the row that checks the count
		var exp, check any
		if err := r.Scan(&id, &fresh, &exp, &check); err != nil || id == nil {
			return err
		}
		e, err := scanTime(exp)
		grants = append(grants, GrantRow{Key{resource, *id}, *fresh, e})
		return err
	})
	if sendsToGeneralPath(err) {
		return nil, true, nil
	}
	return grants, false, err
}

// sendsToGeneralPath tells FindAndLock's errors that are its answer.
func sendsToGeneralPath(err error) bool {
	state := sqlState(err)
	return state == "22012" || state == "23505"
}

// findAndLockSQL is FindAndLock's statement; its arguments follow keysSQL's n.
func (s *postgresStore) findAndLockSQL(keysSQL, column string, n int, ordered bool) string {
	arg := func(i int) string { return "$" + strconv.Itoa(n+i) }
	// The scalar subquery is probed per key by the primary key; the cast to
	// "C" keeps the index usable whatever the key column's collation.
	keys := `offlinelock_keys AS (SELECT k.lock_id, (SELECT true FROM ` + s.table + ` e WHERE e.resource = ` + arg(1) + ` AND e.lock_id = k.lock_id AND e.holder = '' LIMIT 1) AS taken
	FROM (SELECT DISTINCT CAST(` + column + ` AS TEXT) COLLATE "C" AS lock_id FROM (` + keysSQL + `) q WHERE ` + column + ` IS NOT NULL) k)`
	insert := func(which string) string {
		return `INSERT INTO ` + s.table + ` AS l (` + lockColumns + `)
	SELECT ` + arg(1) + `, k.lock_id, '', 'write', ` + arg(2) + `, ` + arg(3) + `, ` + arg(4) + `, ` + s.generation() + `,
		clock_timestamp(), clock_timestamp() + ` + arg(5) + ` * interval '1 microsecond'
	FROM offlinelock_keys k WHERE ` + which + ` ORDER BY k.lock_id COLLATE "C"`
	}
	const anyTaken = `EXISTS (SELECT 1 FROM offlinelock_keys WHERE taken)`
	first := ""
	if ordered {
		// The order locks first (guard_order_postgres.go).
		first = `(SELECT n FROM offlinelock_order) >= 0 AND `
		keys += `,
` + s.orderRequest("SELECT "+arg(1)+"::text, lock_id FROM offlinelock_keys")
	}
	return `WITH ` + keys + `,
offlinelock_new AS (` + insert(first+"NOT "+anyTaken) + `
	RETURNING lock_id, true AS fresh, expires_at),
offlinelock_taken AS (` + insert(first+anyTaken) + `
	ON CONFLICT (resource, lock_id, holder) DO UPDATE SET ` + writeRefresh + `
	WHERE ` + writeGrantable + `
	RETURNING lock_id, token = ` + arg(4) + ` AS fresh, expires_at)
SELECT lock_id, fresh, expires_at, NULL::int FROM offlinelock_new
UNION ALL
SELECT lock_id, fresh, expires_at, NULL::int FROM offlinelock_taken
UNION ALL
SELECT NULL, NULL, NULL, 1 / (CASE WHEN (SELECT count(*) FROM offlinelock_new) + (SELECT count(*) FROM offlinelock_taken) = (SELECT count(*) FROM offlinelock_keys) THEN NULL ELSE 0 END)`
}

func indexName(quotedTable, suffix string) string {
	return `"` + strings.Trim(quotedTable, `"`) + "_" + suffix + `"`
}

// postgresIdentity is offlinelock.session for a write: "f:" when fenced, else "s:".
func postgresIdentity(session string, fenced bool) string {
	if fenced {
		return "f:" + session
	}
	return "s:" + session
}

// SignInsert follows an INSERT's last clause with session's identity (signing.go).
func (s *postgresStore) SignInsert(cb clause.Builder, returning bool, session string, fenced bool) {
	if returning {
		cb.WriteString(", ")
	} else {
		cb.WriteString(" RETURNING ")
	}
	clause.Expr{SQL: s.setIdentity, Vars: []any{postgresIdentity(session, fenced)}}.Build(cb)
	cb.WriteString(" AS offlinelock_identity")
}

// SignWhere writes an UPDATE's or DELETE's where with session's identity (signing.go).
func (s *postgresStore) SignWhere(cb clause.Builder, where clause.Where, session string, fenced bool) {
	cb.WriteString("WHERE (")
	where.Build(cb)
	cb.WriteString(") AND ")
	clause.Expr{SQL: s.setIdentity, Vars: []any{postgresIdentity(session, fenced)}}.Build(cb)
	cb.WriteString(" IS NOT NULL")
}
