package lockstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
)

// grantBulk takes Write locks on keys (sorted, more than one) on MariaDB in
// three statements per mysqlGrantKeys keys (65,535 placeholders at most):
// createMissing, bulkGenerations, upsertWrites. The upsert is all or
// nothing; what it refuses the serialised path decides in the same
// transaction.
func (s *mysqlStore) grantBulk(c Conn, keys []Key, o Owner, ttl time.Duration) (map[Key]Granted, error) {
	unknown := s.keyRows.unknown(keys)
	created, err := s.createMissing(c, unknown)
	if err != nil {
		return nil, err
	}
	var got map[Key]Granted
	err = s.inOwnTx(c, func(c Conn) error {
		var refused bool
		var err error
		if got, refused, err = s.upsertWrites(c, keys, o, ttl, s.grantSQL); err != nil || !refused {
			return err
		}
		got, err = s.decide(c, keys, o, Write, ttl)
		return err
	})
	if err == nil && created {
		s.keyRows.granted(unknown, ttl)
	}
	return got, err
}

// keyRowHints remembers which keys createMissing made sure of, for half the
// grant's TTL (a key row outlives its lock), so it leaves them out. A hint
// only: a key row gone meanwhile is inserted by the grant's transaction.
type keyRowHints struct {
	mu    sync.Mutex
	until map[Key]time.Time
}

// keyRowHintsMax bounds the keys remembered; past it they are forgotten
// at once.
const keyRowHintsMax = 1 << 16

// unknown are the keys of keys without a live hint, in keys' order.
func (h *keyRowHints) unknown(keys []Key) []Key {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.until) == 0 {
		return keys
	}
	var out []Key
	for i, k := range keys {
		if until, ok := h.until[k]; ok && now.Before(until) {
			if out == nil {
				out = append(make([]Key, 0, len(keys)), keys[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, k)
		}
	}
	if out == nil {
		return keys // no hint for any
	}
	return out
}

// granted remembers keys, whose Write locks of ttl were granted and
// committed just now.
func (h *keyRowHints) granted(keys []Key, ttl time.Duration) {
	if ttl/2 <= 0 {
		return
	}
	until := time.Now().Add(ttl / 2)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.until == nil || len(h.until)+len(keys) > keyRowHintsMax {
		h.until = make(map[Key]time.Time, len(keys))
	}
	for _, k := range keys {
		h.until[k] = until
	}
}

// grantOne takes the Write lock of one key outside a transaction in two
// prepared statements, each committed: a counter value, then the one-key
// upsert (docs/lock-table.md). A refusal changes nothing, and the
// serialised path decides.
func (s *mysqlStore) grantOne(c Conn, keys []Key, o Owner, ttl time.Duration) (map[Key]Granted, error) {
	prepared := c
	prepared.stmts = s.stmts
	got, refused, err := s.upsertWrites(prepared, keys, o, ttl, s.grantOneSQL)
	if err != nil || !refused {
		return got, err
	}
	return s.decide(c, keys, o, Write, ttl)
}

// The conditions of mysqlGrantSQL on a key row as it was: MariaDB assigns
// left to right, so assignments reading a column come before its change.
const (
	// bulkSame: o's live Write lock, refreshed: it keeps its token,
	// generation and acquisition time.
	bulkSame = `access = 'write' AND session = VALUES(session) AND expires_at > ` + mysqlClock
	// bulkTakes: the key row is free, o's Write lock, or an expired Write
	// lock, and its last generation is below the new one (taken before the
	// row was locked); else the serialised path decides.
	bulkTakes = `(access = '' OR (access = 'write' AND (session = VALUES(session) OR expires_at <= ` + mysqlClock + `))) AND
		((` + bulkSame + `) OR generation < VALUES(generation))`
	// bulkMine: o's Write lock, live or not: its expiry is never shortened.
	bulkMine = `access = 'write' AND session = VALUES(session)`
	// mysqlRefuse fails the whole statement: BIGINT overflow errs in every
	// sql_mode; the column keeps it from being folded early.
	mysqlRefuse = `9223372036854775807 + (generation >= 0)`
)

// oneTakes is bulkTakes without takeovers, which the serialised path does
// and tells the Observer of.
const oneTakes = `(access = '' OR (access = 'write' AND session = VALUES(session))) AND
		((` + bulkSame + `) OR generation < VALUES(generation))`

// mysqlGrantSQL is the upsert's tail after its VALUES, writing or refusing
// each key's Write lock as takes says and returning returning, in key
// order. Not INSERT … SELECT FROM JSON_TABLE: Galera does not certify the
// rows it changes (TestMySQLGalera).
func (s *mysqlStore) mysqlGrantSQL(takes, returning string) string {
	return `
ON DUPLICATE KEY UPDATE
	token       = IF(` + takes + `, IF(` + bulkSame + `, token, VALUES(token)), ` + mysqlRefuse + `),
	generation  = IF(` + bulkSame + `, generation, VALUES(generation)),
	acquired_at = IF(` + bulkSame + `, acquired_at, VALUES(acquired_at)),
	expires_at  = IF(` + bulkMine + `, GREATEST(expires_at, VALUES(expires_at)), VALUES(expires_at)),
	user_name = VALUES(user_name), access = 'write', session = VALUES(session)
RETURNING ` + returning
}

// mysqlGrantReturning is what upsertWrites reads back of each lock.
const mysqlGrantReturning = "resource, lock_id, token, generation, acquired_at, expires_at"

// GrantKey is KeyGranter's: grantOne's statements, returning only the hash;
// a Read lock and MySQL 8.0 take Grant's way.
func (s *mysqlStore) GrantKey(c Conn, k Key, o Owner, access Access, ttl time.Duration) (bool, error) {
	c.obs, c.wallClock = s.obs, s.wallClock.Load() // s.observed(c), without a call on the short path
	if access != Write || !s.bulk.Load() {
		got, err := s.Grant(c, []Key{k}, o, access, ttl)
		return got[k].Fresh, err
	}
	prepared := c
	prepared.stmts = s.stmts
	var gen int64 // bulkGenerations of one key
	n, err := prepared.Query(s.keyGenSQL, nil, func(r *sql.Rows) error { return r.Scan(&gen) })
	if err == nil && (n != 1 || gen <= 0) {
		err = errGenerationCounter
	}
	var b [hashLen / 2]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	hash, got := hex.EncodeToString(b[:]), ""
	if err == nil {
		prepared.answer = isBulkRefusal
		_, err = prepared.Query(s.grantKeySQL, []any{k.Resource, k.ID, o.Session, o.User, hash, gen * batchSize, ttl.Microseconds()},
			func(r *sql.Rows) error { return r.Scan(&got) })
	}
	switch {
	case err == nil:
		return got == hash, nil
	case !isBulkRefusal(err):
		return false, grantWaited(err)
	}
	more, err := s.decide(c, []Key{k}, o, Write, ttl)
	if err != nil {
		return false, grantWaited(err)
	}
	return more[k].Fresh, nil
}

// mysqlGrantRow is a row of mysqlGrantSQL's VALUES; its ? are the resource, id,
// session, user, token hash, generation and TTL in microseconds.
const mysqlGrantRow = `(?, ?, '', 'write', ?, ?, ?, ?, ` + mysqlClock + `, ` + mysqlClock + ` + INTERVAL ? MICROSECOND)`

// mysqlGrantKeys bounds the keys of one grant statement: 7 placeholders
// each, under MariaDB's 65,535 a statement.
const mysqlGrantKeys = 9000

// isBulkRefusal tells mysqlRefuse's error: the grant's answer that some
// key is not o's to take.
func isBulkRefusal(err error) bool {
	return mysqlCode(err) == 1690 && strings.Contains(err.Error(), "9223372036854775807")
}

// mysqlGrantWaitPrefix bounds a bulk grant's wait for a row lock to 2 s,
// as PostgreSQL's grant trigger does (pgGrantWait).
const mysqlGrantWaitPrefix = "SET STATEMENT innodb_lock_wait_timeout = 2 FOR "

// upsertWrites writes and returns the Write locks of keys; refused: nothing
// was written.
func (s *mysqlStore) upsertWrites(c Conn, keys []Key, o Owner, ttl time.Duration, tail string) (got map[Key]Granted, refused bool, err error) {
	gens, err := s.bulkGenerations(c, len(keys))
	if err != nil {
		return nil, false, err
	}
	tokens, hashes, err := batchTokens(keys)
	if err != nil {
		return nil, false, err
	}
	got = make(map[Key]Granted, len(keys))
	c.answer = isBulkRefusal
	for from := 0; from < len(keys); from += mysqlGrantKeys {
		batch := keys[from:min(from+mysqlGrantKeys, len(keys))]
		args := make([]any, 0, 7*len(batch))
		for i, k := range batch {
			args = append(args, k.Resource, k.ID, o.Session, o.User, hashes[k], gens[from+i], ttl.Microseconds())
		}
		q := mysqlGrantWaitPrefix + `INSERT INTO ` + s.table + ` (` + lockColumns + `) VALUES ` + strings.TrimSuffix(strings.Repeat(mysqlGrantRow+", ", len(batch)), ", ") + tail
		sc := &grantScan{batch: batch}
		_, err = c.Query(q, args, func(r *sql.Rows) error {
			l, err := sc.scan(r, o, hashes)
			got[Key{l.Resource, l.ID}] = grantedRow(l, tokens, hashes)
			return err
		})
		if err != nil && isBulkRefusal(err) {
			return nil, true, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	if len(got) != len(keys) {
		return nil, false, fmt.Errorf("offlinelock: a grant of %d keys returned %d locks", len(keys), len(got))
	}
	return got, false, nil
}

// grantScan reads the rows mysqlGrantSQL returns for batch, into the
// same variables each time.
type grantScan struct {
	batch              []Key
	next               int // the index in batch of the row expected next
	resource, id, hash sql.RawBytes
	generation         int64
	acquired, expires  any
}

// scan reads a row: o's Write lock, with its token's hash in Token. Rows
// come in batch's order, so batch[next]'s strings are reused, not copied.
func (sc *grantScan) scan(r *sql.Rows, o Owner, hashes map[Key]string) (Lock, error) {
	l := Lock{Access: Write, Owner: o}
	if err := r.Scan(&sc.resource, &sc.id, &sc.hash, &sc.generation, &sc.acquired, &sc.expires); err != nil {
		return l, err
	}
	l.Generation = sc.generation
	if i := sc.next; i < len(sc.batch) && string(sc.resource) == sc.batch[i].Resource && string(sc.id) == sc.batch[i].ID {
		sc.next++
		l.Resource, l.ID = sc.batch[i].Resource, sc.batch[i].ID
	} else {
		l.Resource, l.ID = string(sc.resource), string(sc.id)
	}
	if h := hashes[Key{l.Resource, l.ID}]; string(sc.hash) == h {
		l.Token = h
	} else {
		l.Token = string(sc.hash)
	}
	var err1, err2 error
	l.AcquiredAt, err1 = scanTime(sc.acquired)
	l.ExpiresAt, err2 = scanTime(sc.expires)
	return l, errors.Join(err1, err2)
}

// bulkGenerations takes n fresh generations in one statement, a counter
// value per batchSize keys as in nextGenerations; the sweep deletes the
// rows (purgeGenerations), which saves the grant a statement.
func (s *mysqlStore) bulkGenerations(c Conn, n int) ([]int64, error) {
	m := (n + batchSize - 1) / batchSize
	q := `INSERT INTO ` + s.seq + ` () VALUES ` + strings.TrimSuffix(strings.Repeat("(), ", m), ", ") + ` RETURNING n`
	var blocks []int64
	_, err := c.Query(q, nil, func(r *sql.Rows) error {
		var g int64
		err := r.Scan(&g)
		blocks = append(blocks, g)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(blocks)
	if len(blocks) != m || blocks[0] <= 0 {
		return nil, errGenerationCounter
	}
	gens := make([]int64, n)
	for i := range gens {
		gens[i] = blocks[i/batchSize]*batchSize + int64(i%batchSize)
	}
	return gens, nil
}

// mysqlCreateSQL is createMissing's statement: free key rows for the
// primary keys of a JSON array (joinPKs) that have none.
func (s *mysqlStore) mysqlCreateSQL() string {
	return fmt.Sprintf("SET STATEMENT innodb_lock_wait_timeout = %d FOR ", int(mysqlCreateWait/time.Second)) +
		`INSERT IGNORE INTO ` + s.table + ` (` + lockColumns + `)
SELECT UNHEX(k.r), UNHEX(k.i), '', '', '', '', '', 0, ` + mysqlClock + `, ` + mysqlFreeUntil + `
FROM ` + jsonTable(`n FOR ORDINALITY, `+mysqlPKColumns) + `
WHERE NOT EXISTS (SELECT 1 FROM ` + s.table + ` e` + mysqlPK + ` WHERE e.Resource = UNHEX(k.r) AND e.lock_id = UNHEX(k.i) AND e.holder = '')
ORDER BY k.n`
}

// createMissing is createKeyRows in one statement, READ COMMITTED (where
// INSERT … SELECT does not share-lock what it reads), best effort. created
// says every key has a committed key row now.
func (s *mysqlStore) createMissing(c Conn, keys []Key) (created bool, err error) {
	pool := c.db.Config.ConnPool
	if len(keys) == 0 {
		return true, nil
	}
	if _, inTx := pool.(gorm.TxCommitter); inTx || pool == nil || s.poolIsTaken(c, pool) {
		return false, nil
	}
	rows := pkRows(keys, "")
	ctx, cancel := context.WithTimeout(c.ctx, mysqlCreateWait)
	defer cancel()
	for _, list := range pkJSON(rows) {
		begin := time.Now()
		n, err := execCommitted(ctx, pool, s.createSQL, list)
		c.trace(begin, s.createSQL, []any{list}, n, err)
		if err != nil && c.ctx.Err() != nil {
			return false, c.ctx.Err() // the caller gave up, not the pool
		}
		if err != nil {
			return false, nil
		}
	}
	return true, nil
}

// poolIsTaken says whether pool has a single connection, which c's
// transaction holds: a statement on another connection would wait for it
// until mysqlCreateWait, every time.
func (s *mysqlStore) poolIsTaken(c Conn, pool gorm.ConnPool) bool {
	db, ok := pool.(*sql.DB)
	_, inTx := c.db.Statement.ConnPool.(gorm.TxCommitter)
	return ok && inTx && db.Stats().MaxOpenConnections == 1
}

// errNoCommittedTx: the pool begins no transactions.
var errNoCommittedTx = errors.New("offlinelock: the connection pool begins no transactions")

// execCommitted runs q in a READ COMMITTED transaction of its own on
// pool, and commits it.
func execCommitted(ctx context.Context, pool gorm.ConnPool, q string, args ...any) (int64, error) {
	var tx gorm.ConnPool
	var err error
	switch p := pool.(type) {
	case gorm.TxBeginner:
		var t *sql.Tx
		if t, err = p.BeginTx(ctx, readCommitted); err == nil {
			tx = t
		}
	case gorm.ConnPoolBeginner:
		tx, err = p.BeginTx(ctx, readCommitted)
	default:
		err = errNoCommittedTx
	}
	if err != nil {
		return 0, err
	}
	end, ok := tx.(gorm.TxCommitter)
	if !ok {
		return 0, errNoCommittedTx
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		end.Rollback()
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, end.Commit()
}

// mysqlPurgeBatch bounds the counter rows one sweep batch deletes.
const mysqlPurgeBatch = 10_000

// purgeGenerations deletes counter rows bulkGenerations left, skipping
// those of open transactions.
func (s *mysqlStore) purgeGenerations(c Conn) error {
	var ns []int64
	_, err := c.Query(`SELECT n FROM `+s.seq+` ORDER BY n LIMIT ? FOR UPDATE SKIP LOCKED`, []any{mysqlPurgeBatch}, func(r *sql.Rows) error {
		var n int64
		err := r.Scan(&n)
		ns = append(ns, n)
		return err
	})
	if err != nil || len(ns) == 0 {
		return err
	}
	// By primary key, the rows just locked alone: a range would wait for
	// the rows it skipped.
	_, err = c.Exec(`DELETE q FROM `+jsonTable(`n BIGINT PATH '$'`)+` STRAIGHT_JOIN `+s.seq+` q ON q.n = k.n`, int64sJSON(ns))
	return err
}

// int64sJSON is ns as a JSON array.
func int64sJSON(ns []int64) string {
	b, _ := json.Marshal(ns)
	return string(b)
}
