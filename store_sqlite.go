package offlinelock

import (
	"database/sql"
	"fmt"
	"net/url"
	"time"
)

// sqliteStore is the lock table on SQLite. SQLite runs one writer at a time
// (SQLiteDSN begins transactions immediately), so every grant takes the
// serialised path and no row needs locking: the transaction is the lock.
type sqliteStore struct {
	*sqlStore
}

var _ lockStore = (*sqliteStore)(nil)

// sqliteTime is how times are stored in SQLite: fixed-width UTC text that
// sorts and compares as time does, at the millisecond SQLite's clock offers.
const sqliteTime = "2006-01-02 15:04:05.000"

func newSQLiteStore(table, seq, catalog string) *sqliteStore {
	s := &sqliteStore{&sqlStore{table: table, seq: seq, catalog: catalog,
		clock: `strftime('%Y-%m-%d %H:%M:%f','now')`, bind: func(q string) string { return q },
		timeArg: func(t time.Time) any { return t.UTC().Format(sqliteTime) },
		// A unary + keeps SQLite from using the column's index.
		filter: func(col string) string { return "+" + col + " = ?" }}}
	s.nextGens = s.nextGenerations
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
	PRIMARY KEY (resource, lock_id, holder))`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(s.table, "session") + ` ON ` + s.table + ` (session)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(s.table, "expires") + ` ON ` + s.table + ` (expires_at)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(s.table, "token") + ` ON ` + s.table + ` (token)`,
			`CREATE TABLE IF NOT EXISTS ` + s.seq + ` (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)`,
			`INSERT OR IGNORE INTO ` + s.seq + ` (id, n) VALUES (1, 0)`,
		} {
			if _, err := c.exec(stmt); err != nil {
				return fmt.Errorf("offlinelock: creating lock table %s: %w", s.table, err)
			}
		}
		return nil
	})
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

func (s *sqliteStore) grant(c conn, keys []key, o Owner, access Access, ttl time.Duration) (map[key]Lock, map[key]bool, error) {
	return s.decide(c, keys, o, access, ttl)
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

func (s *sqliteStore) sweep(c conn) (int64, error) {
	return c.exec(fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (SELECT rowid FROM %s WHERE expires_at <= %s LIMIT %d)`,
		s.table, s.table, s.clock, sweepBatch))
}
