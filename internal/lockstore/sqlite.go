package lockstore

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"gorm.io/gorm/clause"
)

// sqliteStore is the lock table on SQLite. SQLite runs one writer at a time
// (SQLiteDSN begins transactions immediately), so no row needs locking: the
// transaction is the lock. Write locks are granted in one statement where
// that decides (grant); the rest take the serialised path.
type sqliteStore struct {
	*sqlStore
	grantOne, grantLoad string   // grantKey's and GrantKey's statements, built once
	heldWrite, heldRead []string // HeldCondition's SQL, built once (sqlPieces)
	fence               []string // FenceCondition's SQL, built once
	margin, ttlText     offsetText

	// grantAll's statements, built once
	reserveSQL, insertNewSQL, writeAllSQL, notFreshSQL string
	// stmts keeps fixed statements prepared: go-sqlite3 compiles each afresh.
	stmts *stmtCache
	// serialised sends grants of several Write locks through the serialised
	// path, which a test compares with grantAll (SetGrantAll).
	serialised atomic.Bool
}

// sqliteTime is how times are stored in SQLite: fixed-width UTC text that
// sorts and compares as time does, at the millisecond SQLite's clock offers.
const sqliteTime = "2006-01-02 15:04:05.000"

// NewSQLite is the lock table on SQLite, with its generation counter and
// catalog (quoted names); obs is told of every statement (nil: nothing is).
func NewSQLite(table, seq, catalog string, obs Observer) Store {
	s := &sqliteStore{sqlStore: &sqlStore{obs: obs, table: table, seq: seq, catalog: catalog,
		clock: `strftime('%Y-%m-%d %H:%M:%f','now')`, bind: func(q string) string { return q },
		timeArg: func(t time.Time) any { return t.UTC().Format(sqliteTime) },
		// A unary + keeps SQLite from using the column's index.
		filter: func(col string) string { return "+" + col + " = ?" }},
		stmts: newStmtCache()}
	s.nextGens = s.nextGenerations
	s.grantOne = s.grantOneSQL("resource, lock_id, token, generation, acquired_at, expires_at")
	s.grantLoad = s.grantOneSQL("token")
	s.heldWrite, s.heldRead = sqlPieces(s.heldSQL(Write)), sqlPieces(s.heldSQL(Read))
	s.fence = sqlPieces(s.fenceSQL())
	s.reserveSQL, s.insertNewSQL, s.writeAllSQL, s.notFreshSQL = s.grantAllSQL()
	return s
}

func (s *sqliteStore) RowLocks() bool { return false }

func (s *sqliteStore) Migrate(c Conn) error {
	c = s.observed(c)
	return c.inTx(func(c Conn) error {
		for _, stmt := range []string{
			`CREATE TABLE IF NOT EXISTS ` + s.catalog + ` (name TEXT PRIMARY KEY, spec TEXT NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS ` + s.table + ` (
	resource    TEXT    NOT NULL,
	lock_id     TEXT    NOT NULL,
	holder      TEXT    NOT NULL,
	access      TEXT    NOT NULL,
	session     TEXT    NOT NULL,
	user_name   TEXT    NOT NULL,
	token       TEXT    NOT NULL,
	generation  INTEGER NOT NULL,
	acquired_at TEXT    NOT NULL,
	expires_at  TEXT    NOT NULL,
	reason      TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (resource, lock_id, holder))`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(s.table, "session") + ` ON ` + s.table + ` (session)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(s.table, "expires") + ` ON ` + s.table + ` (expires_at)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(s.table, "token") + ` ON ` + s.table + ` (token)`,
			`CREATE TABLE IF NOT EXISTS ` + s.seq + ` (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)`,
			`INSERT OR IGNORE INTO ` + s.seq + ` (id, n) VALUES (1, 0)`,
			// The one-statement grant writes the counter's next value; these
			// move the counter past it, in the same statement.
			s.generationTrigger("generation_insert", "INSERT"),
			s.generationTrigger("generation_update", "UPDATE OF generation"),
		} {
			if _, err := c.Exec(stmt); err != nil {
				return fmt.Errorf("offlinelock: creating lock table %s: %w", s.table, err)
			}
		}
		err := reasonColumn(c, func() (bool, error) {
			n, err := queryStrings(c, `SELECT name FROM pragma_table_info(?) WHERE name = 'reason'`, strings.Trim(s.table, `"`))
			return len(n) > 0, err
		}, `ALTER TABLE `+s.table+` ADD COLUMN reason TEXT NOT NULL DEFAULT ''`)
		if err != nil {
			return fmt.Errorf("offlinelock: adding the reason column to lock table %s: %w", s.table, err)
		}
		if err := s.hashTokens(c); err != nil {
			return fmt.Errorf("offlinelock: hashing the tokens of lock table %s: %w", s.table, err)
		}
		return nil
	})
}

// hashTokens hashes an older version's clear tokens in migrate's
// transaction, from Go: SQLite has no SHA-256. Idempotent.
func (s *sqliteStore) hashTokens(c Conn) error {
	var legacy []string
	_, err := c.Query(`SELECT DISTINCT token FROM `+s.table+` WHERE length(token) = ?`, []any{tokenLen}, func(r *sql.Rows) error {
		var tok string
		err := r.Scan(&tok)
		if legacyToken(tok) {
			legacy = append(legacy, tok)
		}
		return err
	})
	for _, tok := range legacy {
		if err != nil {
			break
		}
		_, err = c.Exec(`UPDATE `+s.table+` SET token = ? WHERE token = ?`, tokenHash(tok), tok)
	}
	return err
}

// generationTrigger keeps the generation counter at or past every
// generation written to the lock table, so a generation is never reused.
func (s *sqliteStore) generationTrigger(name, event string) string {
	return `CREATE TRIGGER IF NOT EXISTS ` + indexName(s.table, name) + ` AFTER ` + event + ` ON ` + s.table + `
FOR EACH ROW WHEN NEW.generation > (SELECT n FROM ` + s.seq + ` WHERE id = 1)
BEGIN UPDATE ` + s.seq + ` SET n = NEW.generation WHERE id = 1; END`
}

// nextGenerations returns n fresh values of the generation counter.
func (s *sqliteStore) nextGenerations(c Conn, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	var last int64
	_, err := c.Query(`UPDATE `+s.seq+` SET n = n + ? WHERE id = 1 RETURNING n`, []any{n}, func(r *sql.Rows) error { return r.Scan(&last) })
	gens := make([]int64, 0, n)
	for g := last - int64(n) + 1; err == nil && g <= last; g++ {
		gens = append(gens, g)
	}
	if err == nil && len(gens) != n {
		err = errGenerationCounter
	}
	return gens, err
}

// Grant takes Write locks of free, expired or the session's keys in one
// statement, several with grantAll (one writer at a time: each statement
// is atomic); everything else takes the serialised path.
func (s *sqliteStore) Grant(c Conn, keys []Key, o Owner, access Access, ttl time.Duration) (map[Key]Granted, error) {
	c.obs = s.obs // s.observed(c)
	switch {
	case access != Write || len(keys) > 1 && s.serialised.Load():
		return allOrNothing(s.decide(c, keys, o, access, ttl))
	case len(keys) > 1:
		return allOrNothing(s.grantAll(c, keys, o, ttl))
	}
	got, err := s.grantWrites(c, keys, o, ttl, s.grantKey)
	if err != nil { // allOrNothing
		return nil, err
	}
	return got, nil
}

// grantAll takes the Write locks of several keys in c's transaction (or
// its own) in two statements of fixed text, or four, none returning a row
// per key (each costs a cgo scan): reserveSQL (generations, clock; takes
// the write lock), insertNewSQL (keys without a key row, one batch token);
// where that missed some, writeAllSQL and readBack. Keys it did not grant
// take the serialised path.
func (s *sqliteStore) grantAll(c Conn, keys []Key, o Owner, ttl time.Duration) (map[Key]Granted, error) {
	got := make(map[Key]Granted, len(keys))
	err := c.inTx(func(c Conn) error {
		pc := c
		pc.stmts = s.stmts // prepared: grantAll's statements are of fixed text
		b, err := s.newBatch(pc, sortKeys(keys), o, ttl)
		if err != nil {
			return err
		}
		args := []any{o.Session, o.User, b.hash, b.first, b.now.Format(sqliteTime), b.exp.Format(sqliteTime), b.pairs}
		inserted, err := pc.Exec(s.insertNewSQL, args...)
		if err != nil {
			return err
		}
		if inserted == int64(len(b.keys)) {
			for i, k := range b.keys {
				got[k] = b.fresh(i, k)
			}
			return nil
		}
		if _, err := pc.Exec(s.writeAllSQL, args...); err != nil {
			return err
		}
		rest, err := s.readBack(pc, b, got)
		if err != nil || len(rest) == 0 {
			return err
		}
		more, err := s.decide(c, rest, o, Write, ttl)
		maps.Copy(got, more)
		return err
	})
	return got, err
}

// sqliteBatch is one grantAll: its keys in order, their generations
// (first+1 … first+len(keys)), the clock, and the batch's token.
type sqliteBatch struct {
	keys        []Key
	o           Owner
	first       int64
	now, exp    time.Time
	token, hash string
	pairs       string // the keys as a JSON array of [resource, id]
}

// newBatch reserves sorted's generations, reads the clock and draws the
// batch's token.
func (s *sqliteStore) newBatch(pc Conn, sorted []Key, o Owner, ttl time.Duration) (*sqliteBatch, error) {
	var last int64
	var clock string
	n, err := pc.Query(s.reserveSQL, []any{len(sorted)}, func(r *sql.Rows) error { return r.Scan(&last, &clock) })
	if err == nil && n != 1 {
		err = errGenerationCounter
	}
	if err != nil {
		return nil, err
	}
	now, err := parseSQLiteTime(clock)
	if err != nil {
		return nil, err
	}
	token, err := NewToken()
	if err != nil {
		return nil, err
	}
	pairs := make([][2]string, len(sorted))
	for i, k := range sorted {
		pairs[i] = [2]string{k.Resource, k.ID}
	}
	j, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	return &sqliteBatch{keys: sorted, o: o, first: last - int64(len(sorted)), now: now,
		exp: now.Add(ttl.Round(time.Millisecond)), token: token, hash: tokenHash(token), pairs: string(j)}, nil
}

// fresh is the lock the batch granted to its i-th key k.
func (b *sqliteBatch) fresh(i int, k Key) Granted {
	return Granted{Lock: Lock{Resource: k.Resource, ID: k.ID, Access: Write, Owner: b.o, Token: b.token,
		Generation: b.first + int64(i) + 1, AcquiredAt: b.now, ExpiresAt: b.exp}, Fresh: true, Hash: b.hash}
}

// readBack fills got after writeAllSQL: key rows without the batch's token
// were held already or not got (rest); every other key was granted fresh.
func (s *sqliteStore) readBack(pc Conn, b *sqliteBatch, got map[Key]Granted) (rest []Key, err error) {
	o := b.o
	seen := make(map[Key]bool)
	_, err = pc.Query(s.notFreshSQL, []any{b.pairs, b.hash}, func(r *sql.Rows) error {
		l := Lock{Access: Write, Owner: o}
		var access, session, acquired, expires string
		if err := r.Scan(&l.Resource, &l.ID, &access, &session, &l.Token, &l.Generation, &acquired, &expires); err != nil {
			return err
		}
		k := Key{l.Resource, l.ID}
		seen[k] = true
		if access != string(Write) || session != o.Session {
			rest = append(rest, k) // not granted: the serialised path decides
			return nil
		}
		var err error
		if l.AcquiredAt, err = parseSQLiteTime(acquired); err != nil {
			return err
		}
		l.ExpiresAt, err = parseSQLiteTime(expires)
		g := Granted{Lock: l, Hash: l.Token} // held already: no token, its hash kept
		g.Token = ""
		got[k] = g
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, k := range b.keys {
		if !seen[k] {
			got[k] = b.fresh(i, k)
		}
	}
	return rest, nil
}

// grantKey is SQLite's batchGrant for one key: grantOne, prepared.
func (s *sqliteStore) grantKey(c Conn, keys []Key, o Owner, ttl time.Duration, got map[Key]Granted) error {
	k := keys[0]
	token, err := NewToken()
	if err != nil {
		return err
	}
	hash := tokenHash(token)
	args := []any{k.Resource, k.ID, o.Session, o.User, hash, s.ttlText.of(ttl).value}
	c.stmts = s.stmts // grantOne's text is fixed
	_, err = c.Query(s.grantOne, args, func(r *sql.Rows) error {
		var acquired, expires string
		l := Lock{Access: Write, Owner: o}
		if err := r.Scan(&l.Resource, &l.ID, &l.Token, &l.Generation, &acquired, &expires); err != nil {
			return err
		}
		var err error
		if l.AcquiredAt, err = parseSQLiteTime(acquired); err != nil {
			return err
		}
		l.ExpiresAt, err = parseSQLiteTime(expires)
		// As grantedRow: fresh when it carries the hash just sent.
		g := Granted{Lock: l, Hash: l.Token, Fresh: l.Token == hash}
		g.Token = ""
		if g.Fresh {
			g.Token = token
		}
		got[Key{l.Resource, l.ID}] = g
		return err
	})
	return err
}

// GrantKey is KeyGranter's: grantKey's statement returning only the hash;
// a Read lock, or a refusal, by the serialised path.
func (s *sqliteStore) GrantKey(c Conn, k Key, o Owner, access Access, ttl time.Duration) (bool, error) {
	c.obs = s.obs // s.observed(c)
	if access == Write {
		var b [hashLen / 2]byte
		rand.Read(b[:]) // never fails (crypto/rand)
		hash, got := hex.EncodeToString(b[:]), ""
		prepared := c
		prepared.stmts = s.stmts // grantLoad's text is fixed
		n, err := prepared.Query(s.grantLoad, []any{k.Resource, k.ID, o.Session, o.User, hash, s.ttlText.of(ttl).value},
			func(r *sql.Rows) error { return r.Scan(&got) })
		if err != nil || n == 1 {
			return got == hash, err
		}
	}
	more, err := s.decide(c, []Key{k}, o, access, ttl)
	return more[k].Fresh, err
}

// sqliteOffset is a duration as a strftime modifier.
func sqliteOffset(d time.Duration) string {
	return fmt.Sprintf("%+.3f seconds", d.Seconds())
}

// grantOneSQL is grantKey's and GrantKey's statement: ? are resource, id,
// session, user, token hash and the TTL as a strftime modifier; migrate's
// triggers move the counter past every generation written.
func (s *sqliteStore) grantOneSQL(returning string) string {
	now := `strftime('%Y-%m-%d %H:%M:%f','now')`
	return `INSERT INTO ` + s.table + ` AS l (` + lockColumns + `)
VALUES (?, ?, '', 'write', ?, ?, ?, (SELECT n + 1 FROM ` + s.seq + ` WHERE id = 1), ` + now + `, strftime('%Y-%m-%d %H:%M:%f','now', ?))
` + grantConflict(now) + `
RETURNING ` + returning
}

// grantConflict is a grant's update of an existing key row: the session's
// Write lock is kept and pushed, a free or expired one taken over, any
// other left alone.
func grantConflict(now string) string {
	same := `l.access = 'write' AND l.session = excluded.session AND l.expires_at > ` + now
	return `ON CONFLICT (resource, lock_id, holder) DO UPDATE SET
	token       = CASE WHEN ` + same + ` THEN l.token ELSE excluded.token END,
	generation  = CASE WHEN ` + same + ` THEN l.generation ELSE excluded.generation END,
	acquired_at = CASE WHEN ` + same + ` THEN l.acquired_at ELSE excluded.acquired_at END,
	expires_at  = CASE WHEN l.access = 'write' AND l.session = excluded.session THEN MAX(l.expires_at, excluded.expires_at) ELSE excluded.expires_at END,
	access = 'write', session = excluded.session, user_name = excluded.user_name
WHERE l.access = '' OR (l.access = 'write' AND (l.session = excluded.session OR l.expires_at <= ` + now + `))`
}

// grantAllSQL builds grantAll's statements (see there). insertNew's and
// writeAll's numbered placeholders: ?1 session, ?2 user, ?3 the batch's
// token hash, ?4 the generation before the batch's first, ?5 the clock,
// ?6 the expiry, ?7 the JSON array of [resource, id] in sortKeys order;
// notFresh's: ?1 that array, ?2 the hash.
func (s *sqliteStore) grantAllSQL() (reserve, insertNew, writeAll, notFresh string) {
	reserve = `UPDATE ` + s.seq + ` SET n = n + ? WHERE id = 1 RETURNING n, ` + s.clock
	// WHERE true: SQLite's parser needs it before ON CONFLICT.
	rows := `INSERT INTO ` + s.table + ` AS l (` + lockColumns + `)
SELECT json_extract(k.value, '$[0]'), json_extract(k.value, '$[1]'), '', 'write', ?1, ?2, ?3, ?4 + k.key + 1, ?5, ?6
FROM json_each(?7) AS k WHERE true
`
	insertNew = rows + `ON CONFLICT (resource, lock_id, holder) DO NOTHING`
	writeAll = rows + grantConflict("?5")
	// CROSS JOIN: the keys drive, each key row found by its primary key.
	notFresh = `SELECT l.resource, l.lock_id, l.access, l.session, l.token, l.generation, l.acquired_at, l.expires_at
FROM json_each(?1) AS k CROSS JOIN ` + s.table + ` AS l
WHERE l.resource = json_extract(k.value, '$[0]') AND l.lock_id = json_extract(k.value, '$[1]') AND l.holder = '' AND +l.token <> ?2`
	return reserve, insertNew, writeAll, notFresh
}

func (s *sqliteStore) ReleaseAll(c Conn, session string) (int64, error) {
	c = s.observed(c)
	return c.Exec(`DELETE FROM `+s.table+` WHERE session = ?`, session)
}

// Renew pushes the session's rows, then the key rows of the records it
// reads, in one transaction.
func (s *sqliteStore) Renew(c Conn, session string, ttl time.Duration) (int64, error) {
	c = s.observed(c)
	var n int64
	err := c.inTx(func(c Conn) error {
		now, err := s.clockAt(c)
		if err != nil {
			return err
		}
		until := now.Add(ttl)
		n, err = c.Exec(`UPDATE `+s.table+` SET expires_at = MAX(expires_at, ?) WHERE session = ? AND expires_at > ?`,
			s.timeArg(until), session, s.timeArg(now))
		if err != nil || n == 0 {
			return err
		}
		_, err = c.Exec(`UPDATE `+s.table+` SET expires_at = MAX(expires_at, ?)
WHERE holder = '' AND access = 'read' AND (resource, lock_id) IN (SELECT resource, lock_id FROM `+s.table+` WHERE holder = ?)`,
			s.timeArg(until), session)
		return err
	})
	return n, err
}

// Sweep deletes small batches: with one writer at a time every acquire
// waits for each batch to commit (BenchmarkSweep).
func (s *sqliteStore) Sweep(c Conn, _ *SweepCursor) (int64, bool, error) {
	c = s.observed(c)
	n, err := c.Exec(fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (SELECT rowid FROM %s WHERE expires_at <= %s LIMIT %d)`,
		s.table, s.table, s.clock, sqliteSweepBatch))
	return n, n >= sqliteSweepBatch, err
}

// sqliteSweepBatch is the rows one sweep statement deletes on SQLite.
const sqliteSweepBatch = 100

// FenceCondition needs no row lock: the write's transaction holds SQLite's
// write lock to its commit. Its SQL is fixed (fenceSQL), so it stays prepared.
func (s *sqliteStore) FenceCondition(k Key, session string) clause.Expression {
	return &piecesExpr{sql: s.fence, vars: [4]any{k.Resource, k.ID, session}}
}

// fenceSQL is FenceCondition's SQL.
func (s *sqliteStore) fenceSQL() string {
	return `EXISTS (SELECT 1 FROM ` + s.table + ` WHERE resource = ? AND lock_id = ? AND holder = '' AND access = 'write' AND ` +
		s.eq("session") + ` AND expires_at > ` + s.clock + `)`
}

// HeldCondition makes the holder's re-read one statement, lock and row in
// one snapshot; its SQL is fixed (heldSQL), so it stays prepared.
func (s *sqliteStore) HeldCondition(k Key, session string, access Access, margin time.Duration) clause.Expression {
	q := s.heldWrite
	if access == Read {
		q = s.heldRead
	}
	return &piecesExpr{sql: q, vars: [4]any{k.Resource, k.ID, session, s.margin.value(margin)}}
}

// piecesExpr is a condition of fixed SQL in pieces around its placeholders
// (at most four), each written whole: a clause.Expr copies and upper-cases
// its SQL byte by byte.
type piecesExpr struct {
	sql  []string // len(placeholders)+1 pieces, built once (sqlPieces)
	vars [4]any
}

func (e *piecesExpr) Build(b clause.Builder) {
	n := len(e.sql) - 1
	for i := 0; i < n; i++ {
		b.WriteString(e.sql[i])
		b.AddVar(b, e.vars[i:i+1]...)
	}
	b.WriteString(e.sql[n])
}

// sqlPieces splits q at its placeholders, in parentheses, as GORM writes
// a condition beside another.
func sqlPieces(q string) []string {
	parts := strings.Split("("+q+")", "?")
	if n := len(parts) - 1; n > len(piecesExpr{}.vars) {
		panic("offlinelock: a condition of " + strconv.Itoa(n) + " placeholders")
	}
	return parts
}

// heldSQL is heldCondition's SQL for access.
func (s *sqliteStore) heldSQL(access Access) string {
	held := `holder = '' AND access = 'write'`
	if access == Read {
		held = `(holder = '' AND access = 'write' OR holder = session)`
	}
	return `EXISTS (SELECT 1 FROM ` + s.table + ` WHERE resource = ? AND lock_id = ? AND ` + s.eq("session") + ` AND ` + held +
		` AND expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now', ?))`
}

// offsetText is a duration as a strftime modifier, remembering the last
// one it wrote: the held re-read's margin is the same on every call.
type offsetText struct {
	last atomic.Pointer[offsetOf]
}

type offsetOf struct {
	d     time.Duration
	text  string
	value any // text as a statement's argument, boxed once
}

// value is d as a strftime modifier, as an argument, without boxing it on
// every call.
func (o *offsetText) value(d time.Duration) any { return o.of(d).value }

func (o *offsetText) of(d time.Duration) *offsetOf {
	if l := o.last.Load(); l != nil && l.d == d {
		return l
	}
	t := sqliteOffset(d)
	l := &offsetOf{d: d, text: t, value: t}
	o.last.Store(l)
	return l
}
