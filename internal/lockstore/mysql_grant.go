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

// grantBulk takes Write locks on keys (sorted, more than one) on MariaDB
// in three statements for up to mysqlGrantKeys keys: createMissing makes
// the missing free key rows on a connection of its own, committed at once,
// for the keys it has not made sure of lately (keyRowHints); then
// bulkGenerations takes one counter value per batchSize keys; then
// upsertWrites writes and returns every key's lock (one statement per
// mysqlGrantKeys keys: MariaDB takes 65,535 placeholders at most). That
// last is all or nothing: a key another session holds, under Read locks,
// or whose last generation is as large as its new one fails it on purpose,
// changing nothing, and the serialised path decides each key exactly in
// the same transaction (naming holders, upgrading the only reader, taking
// larger generations).
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

// keyRowHints remembers, for a while, which keys have a key row: those
// createMissing made sure of (committed) for a grant that succeeded,
// until half the grant's TTL has passed. A key row lives at least as long
// as its lock (the sweep deletes rows whose expiry has passed; a release
// frees the row for a day), so createMissing would have nothing to create
// for them, and leaves them out. A hint is only that: a key row deleted
// meanwhile (a grant rolled back with the caller's transaction leaves
// the row's expiry as it was, and the sweep may take it if that had
// passed; a clock far off the database's) is inserted by the grant in
// its transaction, as any key row createMissing could not create.
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

// grantOne takes the Write lock of one key (a slice of one) outside a
// transaction in two statements, each committed on its own: a counter
// value (bulkGenerations), then the one-key upsert (oneTakes), prepared
// (stmtCache: go-sql-driver would prepare and close it around every run).
// A missing key row the upsert inserts and commits with the lock, which
// keeps createKeyRows' rule (no key row inserted and then rolled back,
// handing its waiters' locks to the gap before the next record): a
// refusal is an answer about a row that exists, and changes nothing; the
// serialised path then decides, naming holders and telling upgrades and
// takeovers.
func (s *mysqlStore) grantOne(c Conn, keys []Key, o Owner, ttl time.Duration) (map[Key]Granted, error) {
	prepared := c
	prepared.stmts = s.stmts
	got, refused, err := s.upsertWrites(prepared, keys, o, ttl, s.grantOneSQL)
	if err != nil || !refused {
		return got, err
	}
	return s.decide(c, keys, o, Write, ttl)
}

// The conditions of mysqlGrantSQL on a key row as it was. MariaDB assigns
// ON DUPLICATE KEY UPDATE's columns left to right, each seeing the ones
// before, so every assignment that reads access, session or expires_at
// comes before the ones that change them.
const (
	// bulkSame: o's live Write lock, refreshed: it keeps its token,
	// generation and acquisition time.
	bulkSame = `access = 'write' AND session = VALUES(session) AND expires_at > ` + mysqlClock
	// bulkTakes: the key row is free, o's Write lock, or an expired Write
	// lock; anything else (another session's live Write lock, Read locks)
	// is refused. A new lock's generation was taken before the statement
	// locked the row: when the row's last lock has one as large (granted
	// meanwhile, or on a Galera node whose counter had not yet seen
	// it), the grant is refused too, and the serialised path, which takes
	// generations after the key rows, grants it.
	bulkTakes = `(access = '' OR (access = 'write' AND (session = VALUES(session) OR expires_at <= ` + mysqlClock + `))) AND
		((` + bulkSame + `) OR generation < VALUES(generation))`
	// bulkMine: o's Write lock, live or not: its expiry is never shortened.
	bulkMine = `access = 'write' AND session = VALUES(session)`
	// mysqlRefuse fails the statement, and so undoes all of it: BIGINT
	// overflow is an error in every sql_mode, and the column in it keeps
	// it from being evaluated before a refused row is reached.
	mysqlRefuse = `9223372036854775807 + (generation >= 0)`
)

// oneTakes is bulkTakes without the takeover of another session's
// expired lock: grantOne leaves that to the serialised path, which tells
// the Observer of it (TakenOver), as it tells upgrades; a takeover is
// rare, and costs one refused statement more.
const oneTakes = `(access = '' OR (access = 'write' AND session = VALUES(session))) AND
		((` + bulkSame + `) OR generation < VALUES(generation))`

// mysqlGrantSQL is upsertWrites' statement after its VALUES (mysqlGrantRow),
// and GrantKey's, returning returning:
// every key's Write lock, written or refused as takes (bulkTakes,
// oneTakes) says, in the order of the rows, which is sortKeys order, the
// order it takes the key rows in. (An INSERT … SELECT from JSON_TABLE
// would take any number of keys as one parameter, but MariaDB's Galera
// replication does not certify the rows its ON DUPLICATE KEY UPDATE
// changes: two nodes granted the same record at once,
// TestMySQLGalera.)
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

// GrantKey is KeyGranter's: a Write lock by grantOne's two statements,
// prepared, the upsert returning only the hash it sent; a refusal by the
// serialised path, as in grantOne. A Read lock, and MySQL 8.0, take
// Grant's way.
func (s *mysqlStore) GrantKey(c Conn, k Key, o Owner, access Access, ttl time.Duration) (bool, error) {
	c.obs = s.obs // s.observed(c)
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

// upsertWrites writes the Write locks of keys (mysqlGrantSQL ending in
// tail) and returns them. refused says that some key was not o's to
// take: nothing was written.
// mysqlGrantWaitPrefix bounds a bulk grant's wait for a row lock to 2 s,
// as PostgreSQL's grant trigger does (pgGrantWait). The bulk grants run
// on MariaDB only, which takes SET STATEMENT.
const mysqlGrantWaitPrefix = "SET STATEMENT innodb_lock_wait_timeout = 2 FOR "

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
		// Bounded (mysqlGrantWait): an open write of a record, or of one of
		// its order bucket, holds a grant up that long, then it is refused
		// as ErrBeingWritten (grantWaited).
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

// scan reads a row: o's Write lock, with its token's hash in Token. The
// rows come in the order of batch, the statement's VALUES: where the row
// is batch[next]'s, as it is, its key and (fresh) hash are the strings
// the caller has, not copies.
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

// bulkGenerations takes n fresh generations in one statement: a counter
// value g per batchSize keys stands for g*batchSize … g*batchSize+399, as
// in nextGenerations, and RETURNING names every value, consecutive or
// not. The counter rows are inserted in the grant's transaction, so that
// on Galera they travel with its locks and every node's counter passes
// them; they are left for the sweep to delete (purgeGenerations), which
// saves the grant a statement.
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

// mysqlCreateSQL is createMissing's statement: the free key rows of a
// JSON array of whole primary keys (joinPKs' form) that have none. Under
// READ COMMITTED, NOT EXISTS reads the latest committed rows without
// locking them; the wait for a row another session created meanwhile
// (INSERT IGNORE's duplicate check) is bounded.
func (s *mysqlStore) mysqlCreateSQL() string {
	return fmt.Sprintf("SET STATEMENT innodb_lock_wait_timeout = %d FOR ", int(mysqlCreateWait/time.Second)) +
		`INSERT IGNORE INTO ` + s.table + ` (` + lockColumns + `)
SELECT UNHEX(k.r), UNHEX(k.i), '', '', '', '', '', 0, ` + mysqlClock + `, ` + mysqlFreeUntil + `
FROM ` + jsonTable(`n FOR ORDINALITY, `+mysqlPKColumns) + `
WHERE NOT EXISTS (SELECT 1 FROM ` + s.table + ` e` + mysqlPK + ` WHERE e.Resource = UNHEX(k.r) AND e.lock_id = UNHEX(k.i) AND e.holder = '')
ORDER BY k.n`
}

// createMissing creates the free key rows that keys lack, as
// createKeyRows does and for the same reason (a key row the grant's
// transaction inserted, then rolled back with a refused load, would hand
// gap locks to the sessions waiting for it), but without reading first
// which are missing: one statement, in a READ COMMITTED transaction of
// its own on another connection, committed at once. (Under REPEATABLE
// READ, the default of a plain connection, an INSERT … SELECT
// share-locks every row it reads, and would wait for each key row another
// transaction holds.) It is best effort: a key row it did not create the
// grant inserts in its transaction. created says that every key has a
// committed key row now (none was missing, or all were created).
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

// purgeGenerations deletes counter rows that bulkGenerations left, except
// those of transactions still open (SKIP LOCKED: a DELETE by range would
// wait for them). The counter survives an empty table: InnoDB persists
// AUTO_INCREMENT (MariaDB 10.2.4+), as it does when nextGenerations
// deletes its row at once.
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
