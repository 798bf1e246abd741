package offlinelock

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"gorm.io/gorm/clause"
)

// sqliteStore is the lock table on SQLite. SQLite runs one writer at a time
// (SQLiteDSN begins transactions immediately), so every grant takes the
// serialised path and no row needs locking: the transaction is the lock.
type sqliteStore struct {
	*sqlStore
	grantOne, grantMany string // sqliteGrant's statements, built once
}

var (
	_ lockStore = (*sqliteStore)(nil)
	_ foldStore = (*sqliteStore)(nil)
	_ heldStore = (*sqliteStore)(nil)
)

// sqliteTime is how times are stored in SQLite: fixed-width UTC text that
// sorts and compares as time does, at the millisecond SQLite's clock offers.
const sqliteTime = "2006-01-02 15:04:05.000"

func newSQLiteStore(table, seq, catalog string) *sqliteStore {
	s := &sqliteStore{sqlStore: &sqlStore{table: table, seq: seq, catalog: catalog,
		clock: `strftime('%Y-%m-%d %H:%M:%f','now')`, bind: func(q string) string { return q },
		timeArg: func(t time.Time) any { return t.UTC().Format(sqliteTime) },
		// A unary + keeps SQLite from using the column's index.
		filter: func(col string) string { return "+" + col + " = ?" }}}
	s.nextGens = s.nextGenerations
	s.grantOne, s.grantMany = s.sqliteGrant(false), s.sqliteGrant(true)
	return s
}

// SQLiteDSN returns a DSN for gorm.io/driver/sqlite (mattn/go-sqlite3) that
// the lock table needs under concurrency: WAL, so readers never block the
// writer; a busy timeout, so a writer waits its turn instead of failing with
// "database is locked"; and immediate transactions, so a transaction takes
// the write lock when it begins rather than failing to upgrade later.
func SQLiteDSN(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate&_foreign_keys=1"
}

func (s *sqliteStore) rowLocks() bool { return false }

func (s *sqliteStore) migrate(c conn) error {
	return c.inTx(func(c conn) error {
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
			if _, err := c.exec(stmt); err != nil {
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

// hashTokens replaces the tokens that a table written by an older version
// holds (32 hex digits) by their hashes, in migrate's transaction. SQLite
// has no SHA-256 of its own (and a function registered with the driver
// would have to be registered by every application), so the rows are read
// and rewritten from Go, one UPDATE per legacy token, by tokenHash itself.
// A hash (64 digits) or no token is left alone: running it again changes
// nothing.
func (s *sqliteStore) hashTokens(c conn) error {
	var legacy []string
	_, err := c.query(`SELECT DISTINCT token FROM `+s.table+` WHERE length(token) = ?`, []any{tokenLen}, func(r *sql.Rows) error {
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
		_, err = c.exec(`UPDATE `+s.table+` SET token = ? WHERE token = ?`, tokenHash(tok), tok)
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
func (s *sqliteStore) nextGenerations(c conn, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	var last int64
	_, err := c.query(`UPDATE `+s.seq+` SET n = n + ? WHERE id = 1 RETURNING n`, []any{n}, func(r *sql.Rows) error { return r.Scan(&last) })
	gens := make([]int64, 0, n)
	for g := last - int64(n) + 1; err == nil && g <= last; g++ {
		gens = append(gens, g)
	}
	if err == nil && len(gens) != n {
		err = errGenerationCounter
	}
	return gens, err
}

// grant takes Write locks in one statement per batch where each key is
// free, expired or the session's, as PostgreSQL does (SQLite runs one
// writer at a time, so each statement is atomic); everything else (Read
// locks, keys with readers or another holder) takes the serialised path,
// which decides exactly and names holders.
func (s *sqliteStore) grant(c conn, keys []key, o Owner, access Access, ttl time.Duration) (map[key]granted, error) {
	if access != Write {
		return s.decide(c, keys, o, access, ttl)
	}
	return s.grantWrites(c, keys, o, ttl, s.grantBatch)
}

// grantBatch is the batchGrant of SQLite: one row of VALUES for one key,
// json_each over the keys for more.
func (s *sqliteStore) grantBatch(c conn, keys []key, o Owner, ttl time.Duration, got map[key]granted) error {
	tokens, hashes, err := batchTokens(keys)
	if err != nil {
		return err
	}
	triples := make([][3]string, len(keys))
	for i, k := range keys {
		triples[i] = [3]string{k.resource, k.id, hashes[k]}
	}
	q, args := s.grantOne, []any{keys[0].resource, keys[0].id, o.Session, o.User, triples[0][2], sqliteOffset(ttl)}
	if len(keys) > 1 {
		j, err := json.Marshal(triples)
		if err != nil {
			return err
		}
		q, args = s.grantMany, []any{o.Session, o.User, sqliteOffset(ttl), string(j)}
	}
	_, err = c.query(q, args, func(r *sql.Rows) error {
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
		got[key{l.Resource, l.ID}] = grantedRow(l, tokens, hashes)
		return err
	})
	return err
}

// sqliteOffset is a duration as a strftime modifier.
func sqliteOffset(d time.Duration) string {
	return fmt.Sprintf("%+.3f seconds", d.Seconds())
}

// sqliteGrant is grantBatch's statement. For one key (rows ""), its ?
// placeholders are the resource, id, session, user, token hash and the TTL as a
// strftime modifier; for several, the session, user, TTL and a JSON array
// of [resource, id, token hash], whose order the rows are written in. A new
// lock's generation is the counter's next value (plus its place in the
// batch); the triggers made by migrate move the counter past every
// generation written.
func (s *sqliteStore) sqliteGrant(many bool) string {
	now := `strftime('%Y-%m-%d %H:%M:%f','now')`
	same := `l.access = 'write' AND l.session = excluded.session AND l.expires_at > ` + now
	rows := `VALUES (?, ?, '', 'write', ?, ?, ?, (SELECT n + 1 FROM ` + s.seq + ` WHERE id = 1), ` + now + `, strftime('%Y-%m-%d %H:%M:%f','now', ?))`
	if many {
		// WHERE true: SQLite's parser needs it before ON CONFLICT.
		rows = `SELECT json_extract(k.value, '$[0]'), json_extract(k.value, '$[1]'), '', 'write', ?, ?, json_extract(k.value, '$[2]'),
	(SELECT n FROM ` + s.seq + ` WHERE id = 1) + k.key + 1, ` + now + `, strftime('%Y-%m-%d %H:%M:%f','now', ?)
FROM json_each(?) AS k WHERE true ORDER BY k.key`
	}
	return `INSERT INTO ` + s.table + ` AS l (` + lockColumns + `)
` + rows + `
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET
	token       = CASE WHEN ` + same + ` THEN l.token ELSE excluded.token END,
	generation  = CASE WHEN ` + same + ` THEN l.generation ELSE excluded.generation END,
	acquired_at = CASE WHEN ` + same + ` THEN l.acquired_at ELSE excluded.acquired_at END,
	expires_at  = CASE WHEN l.access = 'write' AND l.session = excluded.session THEN MAX(l.expires_at, excluded.expires_at) ELSE excluded.expires_at END,
	access = 'write', session = excluded.session, user_name = excluded.user_name
WHERE l.access = '' OR (l.access = 'write' AND (l.session = excluded.session OR l.expires_at <= ` + now + `))
RETURNING resource, lock_id, token, generation, acquired_at, expires_at`
}

func (s *sqliteStore) releaseAll(c conn, session string) (int64, error) {
	return c.exec(`DELETE FROM `+s.table+` WHERE session = ?`, session)
}

// renew pushes the session's rows, then the key rows of the records it
// reads, in one transaction.
func (s *sqliteStore) renew(c conn, session string, ttl time.Duration) (int64, error) {
	var n int64
	err := c.inTx(func(c conn) error {
		now, err := s.clockAt(c)
		if err != nil {
			return err
		}
		until := now.Add(ttl)
		n, err = c.exec(`UPDATE `+s.table+` SET expires_at = MAX(expires_at, ?) WHERE session = ? AND expires_at > ?`,
			s.timeArg(until), session, s.timeArg(now))
		if err != nil || n == 0 {
			return err
		}
		_, err = c.exec(`UPDATE `+s.table+` SET expires_at = MAX(expires_at, ?)
WHERE holder = '' AND access = 'read' AND (resource, lock_id) IN (SELECT resource, lock_id FROM `+s.table+` WHERE holder = ?)`,
			s.timeArg(until), session)
		return err
	})
	return n, err
}

// sweep deletes fewer rows per statement than PostgreSQL's: SQLite has one
// writer at a time, so every acquire waits for each batch to commit, and a
// small batch keeps that wait short (see BenchmarkSweep).
func (s *sqliteStore) sweep(c conn, _ *sweepCursor) (int64, bool, error) {
	n, err := c.exec(fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (SELECT rowid FROM %s WHERE expires_at <= %s LIMIT %d)`,
		s.table, s.table, s.clock, sqliteSweepBatch))
	return n, n >= sqliteSweepBatch, err
}

// sqliteSweepBatch is the rows one sweep statement deletes on SQLite.
const sqliteSweepBatch = 100

// fenceCondition needs no row lock: the write's transaction holds SQLite's
// write lock from the write to its commit, so no takeover can commit in
// between.
func (s *sqliteStore) fenceCondition(k key, session string) clause.Expression {
	return clause.Expr{
		SQL: `EXISTS (SELECT 1 FROM ` + s.table + ` WHERE resource = ? AND lock_id = ? AND holder = '' AND access = 'write' AND ` +
			s.eq("session") + ` AND expires_at > ` + s.clock + `)`,
		Vars: []any{k.resource, k.id, session},
	}
}

// heldCondition lets the holder's re-read be one read-only statement: the
// lock and the row are read in the same snapshot.
func (s *sqliteStore) heldCondition(k key, session string, access Access, margin time.Duration) clause.Expression {
	held := `holder = '' AND access = 'write'`
	if access == Read {
		held = `(holder = '' AND access = 'write' OR holder = session)`
	}
	return clause.Expr{
		SQL: `EXISTS (SELECT 1 FROM ` + s.table + ` WHERE resource = ? AND lock_id = ? AND ` + s.eq("session") + ` AND ` + held +
			` AND expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now', ?))`,
		Vars: []any{k.resource, k.id, session, fmt.Sprintf("+%.3f seconds", margin.Seconds())},
	}
}
