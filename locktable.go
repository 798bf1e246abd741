package offlinelock

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// The lock table holds one key row per locked record (holder = ”) and one
// reader row per session holding a shared Read lock (holder = session).
//
// The key row is the record's serialisation point: every change to a
// record's locks first writes its key row, so two sessions never decide on
// the same record at once. While a Write lock is held, the key row is that
// lock (access 'write', with its session, token and expiry) and there are no
// reader rows. While Read locks are held, the key row has access 'read',
// no owner, and an expiry no earlier than any reader's, so the sweep never
// removes it before its readers. A key row with access ” is free.
const (
	accessFree  = ""
	keyHolder   = ""
	lockColumns = "resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at"
	sweepBatch  = 1000
)

// lockTable runs the lock table's statements for one plugin on one database.
type lockTable struct {
	d       *dialect
	table   string // quoted table name
	seq     string // quoted name of the generation counter
	catalog string // quoted name of the catalog of lockable tables
}

// conn runs statements on a *gorm.DB's connection: the caller's transaction
// when there is one. It goes straight to the connection pool, so the
// plugin's own statements never re-enter GORM callbacks, and reports them to
// GORM's logger so that db.Debug() shows them.
type conn struct {
	db  *gorm.DB
	ctx context.Context
}

func (c conn) trace(begin time.Time, query string, args []any, rows int64, err error) {
	if c.db.Logger == nil {
		return
	}
	c.db.Logger.Trace(c.ctx, begin, func() (string, int64) {
		return c.db.Dialector.Explain(query, redact(query, args)...), rows
	}, err)
}

// redact hides tokens from logs: every argument that looks like one.
func redact(_ string, args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) == tokenLen && isHex(s) {
			a = "<token>"
		}
		out[i] = a
	}
	return out
}

func (c conn) exec(query string, args ...any) (int64, error) {
	begin := time.Now()
	res, err := c.db.Statement.ConnPool.ExecContext(c.ctx, query, args...)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	c.trace(begin, query, args, n, err)
	return n, err
}

func (c conn) query(query string, args []any, scan func(*sql.Rows) error) (int64, error) {
	begin := time.Now()
	rows, err := c.db.Statement.ConnPool.QueryContext(c.ctx, query, args...)
	var n int64
	if err == nil {
		for rows.Next() {
			if err = scan(rows); err != nil {
				break
			}
			n++
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = rows.Err()
		}
	}
	c.trace(begin, query, args, n, err)
	return n, err
}

// row is one row of the lock table.
type row struct {
	Lock
	holder string
}

func (r row) live(now time.Time) bool { return r.ExpiresAt.After(now) }

func scanRow(rows *sql.Rows) (row, error) {
	var r row
	var acquired, expires any
	err := rows.Scan(&r.Resource, &r.ID, &r.holder, &r.Access, &r.Owner.Session, &r.Owner.User,
		&r.Token, &r.Generation, &acquired, &expires)
	if err != nil {
		return r, err
	}
	if r.AcquiredAt, err = scanTime(acquired); err != nil {
		return r, err
	}
	r.ExpiresAt, err = scanTime(expires)
	return r, err
}

// migrate creates the table, its indexes and its generation counter if they
// are missing. On PostgreSQL an advisory lock serialises nodes that start
// together, since CREATE … IF NOT EXISTS alone can race on the catalog.
func (t *lockTable) migrate(db *gorm.DB) error {
	return inTx(db, func(c conn) error {
		if t.d.dollar {
			if _, err := c.exec(`SELECT pg_advisory_xact_lock(hashtext($1))`, "offlinelock:migrate:"+t.table); err != nil {
				return err
			}
		}
		for _, stmt := range t.d.ddl(t.table, t.seq, t.catalog) {
			if _, err := c.exec(stmt); err != nil {
				return fmt.Errorf("offlinelock: creating lock table %s: %w", t.table, err)
			}
		}
		return nil
	})
}

// inTx runs fn in the caller's transaction if db is in one, else in a new
// transaction that commits when fn returns nil.
func inTx(db *gorm.DB, fn func(conn) error) error {
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
		return fn(conn{db: db, ctx: ctx})
	}
	return db.Session(&gorm.Session{NewDB: true, Context: ctx}).Transaction(func(tx *gorm.DB) error {
		return fn(conn{db: tx, ctx: ctx})
	})
}

func direct(db *gorm.DB) conn {
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return conn{db: db, ctx: ctx}
}

// now reads the database clock.
func (t *lockTable) now(c conn) (time.Time, error) {
	var v any
	_, err := c.query(`SELECT `+t.d.now, nil, func(r *sql.Rows) error { return r.Scan(&v) })
	if err != nil {
		return time.Time{}, err
	}
	return scanTime(v)
}

// fastWrite grants or refreshes an exclusive Write lock in one statement
// when the key is free, expired, or already written by the same session.
// It returns nil when the key is read-locked or held by someone else; the
// caller then takes the serialised path, which decides exactly and names
// the holders. PostgreSQL only: there ON CONFLICT sees and locks the latest
// version of the key row, so the WHERE below decides on current data.
func (t *lockTable) fastWrite(c conn, k key, o Owner, ttl time.Duration) (*Lock, error) {
	q := `INSERT INTO ` + t.table + ` AS l (` + lockColumns + `)
VALUES ($1, $2, '', 'write', $3, $4, $5, nextval('` + unquote(t.seq) + `'), clock_timestamp(), clock_timestamp() + $6 * interval '1 microsecond')
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET ` + writeRefresh + `
WHERE ` + writeGrantable + `
RETURNING ` + lockColumns
	tok, err := newToken()
	if err != nil {
		return nil, err
	}
	var got *Lock
	_, err = c.query(q, []any{k.resource, k.id, o.Session, o.User, tok, ttl.Microseconds()}, func(r *sql.Rows) error {
		rw, err := scanRow(r)
		got = &rw.Lock
		return err
	})
	return got, err
}

var errGenerationCounter = errors.New("offlinelock: generation counter missing; was the plugin initialised with db.Use?")

// deleteReaders removes the reader rows of k, or only those of one session.
func (t *lockTable) deleteReaders(c conn, k key, session string) (int64, error) {
	q := `DELETE FROM ` + t.table + ` WHERE resource = ? AND lock_id = ? AND holder <> ''`
	args := []any{k.resource, k.id}
	if session != "" {
		q += ` AND holder = ?`
		args = append(args, session)
	}
	return c.exec(t.d.bind(q), args...)
}

// dropToken deletes the Write lock on k if its token is still token, that
// is, if the grant that made it is the one being undone.
func (t *lockTable) dropToken(c conn, k key, token string) error {
	_, err := c.exec(t.d.bind(`DELETE FROM `+t.table+` WHERE resource = ? AND lock_id = ? AND holder = '' AND token = ?`), k.resource, k.id, token)
	return err
}

func (t *lockTable) deleteKey(c conn, k key) (int64, error) {
	return c.exec(t.d.bind(`DELETE FROM `+t.table+` WHERE resource = ? AND lock_id = ?`), k.resource, k.id)
}

// releaseWrite deletes the session's Write lock on k in one statement and
// reports whether there was one and whether it was still valid.
func (t *lockTable) releaseWrite(c conn, k key, session string) (found, valid bool, err error) {
	q := t.d.bind(`DELETE FROM ` + t.table + ` WHERE resource = ? AND lock_id = ? AND holder = '' AND access = 'write' AND session = ?
RETURNING expires_at, ` + t.d.now)
	_, err = c.query(q, []any{k.resource, k.id, session}, func(r *sql.Rows) error {
		var exp, now any
		if err := r.Scan(&exp, &now); err != nil {
			return err
		}
		e, err1 := scanTime(exp)
		n, err2 := scanTime(now)
		found, valid = true, e.After(n)
		return errors.Join(err1, err2)
	})
	return found, valid, err
}

// holders returns the live locks on k: its writer or its readers.
func (t *lockTable) holders(c conn, k key) ([]Lock, error) {
	return t.list(c, Filter{Resource: k.resource, ID: k.id})
}

// list returns the locks that match f, without their tokens.
func (t *lockTable) list(c conn, f Filter) ([]Lock, error) {
	q := `SELECT ` + lockColumns + ` FROM ` + t.table + ` WHERE ((holder = '' AND access = 'write') OR holder <> '')`
	var args []any
	for _, cond := range []struct{ col, val string }{
		{"resource", f.Resource}, {"lock_id", f.ID}, {"session", f.Session}, {"user_name", f.User},
	} {
		if cond.val != "" {
			q += ` AND ` + cond.col + ` = ?`
			args = append(args, cond.val)
		}
	}
	if f.Expired {
		q += ` AND expires_at <= ` + t.d.now
	} else {
		q += ` AND expires_at > ` + t.d.now
	}
	q += ` ORDER BY resource, lock_id, holder`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	var out []Lock
	_, err := c.query(t.d.bind(q), args, func(r *sql.Rows) error {
		rw, err := scanRow(r)
		rw.Token = ""
		out = append(out, rw.Lock)
		return err
	})
	return out, err
}

// keyLocksOf is, on PostgreSQL, a CTE that row-locks in (resource,
// lock_id) order the key rows of the records that rows matching cond touch.
// Every statement that changes several records' locks takes their key rows
// first and in this one order, as lock batches do, so that no two
// statements ever wait on each other in opposite orders (no deadlock).
// Reader rows are only ever changed by a holder of their key row.
func (t *lockTable) keyLocksOf(cond string, skipLocked bool) string {
	skip := ""
	if skipLocked {
		skip = " SKIP LOCKED"
	}
	return `WITH keys AS (SELECT k.resource, k.lock_id FROM ` + t.table + ` k JOIN (SELECT DISTINCT resource, lock_id FROM ` +
		t.table + ` WHERE ` + cond + `) c ON k.resource = c.resource AND k.lock_id = c.lock_id WHERE k.holder = '' ORDER BY k.resource, k.lock_id FOR UPDATE OF k` + skip + `) `
}

// releaseAll deletes every lock row of the session, live or expired.
func (t *lockTable) releaseAll(c conn, session string) (int64, error) {
	if !t.d.dollar {
		return c.exec(`DELETE FROM `+t.table+` WHERE session = ?`, session)
	}
	return c.exec(t.keyLocksOf(`session = $1`, false)+
		`DELETE FROM `+t.table+` l USING keys WHERE l.session = $1 AND l.resource = keys.resource AND l.lock_id = keys.lock_id`, session)
}

// renew pushes the session's live locks to at least until, and the key rows
// of the records it reads along with them.
func (t *lockTable) renew(c conn, session string, now, until time.Time) (int64, error) {
	if !t.d.dollar {
		n, err := c.exec(`UPDATE `+t.table+` SET expires_at = MAX(expires_at, ?) WHERE session = ? AND expires_at > ?`,
			t.d.timeArg(until), session, t.d.timeArg(now))
		if err != nil || n == 0 {
			return n, err
		}
		_, err = c.exec(`UPDATE `+t.table+` SET expires_at = MAX(expires_at, ?)
WHERE holder = '' AND access = 'read' AND (resource, lock_id) IN (SELECT resource, lock_id FROM `+t.table+` WHERE holder = ?)`,
			t.d.timeArg(until), session)
		return n, err
	}
	// One statement: lock the key rows in order, then push the session's
	// rows and the read-mode key rows of the records it reads.
	var n int64
	_, err := c.query(t.keyLocksOf(`session = $1 AND expires_at > $3`, false)+`, renewed AS (
	UPDATE `+t.table+` l SET expires_at = GREATEST(l.expires_at, $2) FROM keys
	WHERE l.session = $1 AND l.expires_at > $3 AND l.resource = keys.resource AND l.lock_id = keys.lock_id
	RETURNING l.resource, l.lock_id, l.holder
), readkeys AS (
	UPDATE `+t.table+` l SET expires_at = GREATEST(l.expires_at, $2) FROM (SELECT DISTINCT resource, lock_id FROM renewed WHERE holder <> '') r
	WHERE l.holder = '' AND l.access = 'read' AND l.resource = r.resource AND l.lock_id = r.lock_id
	RETURNING 1
)
SELECT (SELECT count(*) FROM renewed), (SELECT count(*) FROM readkeys)`, []any{session, until, now}, func(r *sql.Rows) error {
		var k int64
		return r.Scan(&n, &k)
	})
	return n, err
}

// sweep deletes up to sweepBatch expired rows and reports how many it did.
// On PostgreSQL it skips records whose key rows others are changing: they
// are being taken over or released right now.
func (t *lockTable) sweep(c conn) (int64, error) {
	if !t.d.dollar {
		return c.exec(fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (SELECT rowid FROM %s WHERE expires_at <= %s LIMIT %d)`,
			t.table, t.table, t.d.now, sweepBatch))
	}
	return c.exec(fmt.Sprintf(`WITH keys AS (
	SELECT resource, lock_id FROM %[1]s WHERE holder = '' AND (resource, lock_id) IN (
		SELECT resource, lock_id FROM %[1]s WHERE expires_at <= clock_timestamp() LIMIT %[2]d)
	ORDER BY resource, lock_id FOR UPDATE SKIP LOCKED)
DELETE FROM %[1]s l USING keys WHERE l.expires_at <= clock_timestamp() AND l.resource = keys.resource AND l.lock_id = keys.lock_id`, t.table, sweepBatch))
}

// Tokens are 128 bits from crypto/rand, as 32 hex digits.
const tokenLen = 32

func newToken() (string, error) {
	var b [tokenLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("offlinelock: reading random token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}
