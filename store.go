package offlinelock

import (
	"context"
	"database/sql"
	mrand "math/rand/v2"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// lockStore is the lock table in one database: the only place that knows
// its SQL. The GORM side (callbacks, tags, statements) asks it questions in
// terms of keys and owners and never builds lock-table SQL itself. There is
// one implementation per database, in store_<database>.go; the SQL they
// share is built once, in store_sql.go.
//
// Every method runs on c: the caller's transaction when there is one, so a
// lock commits or rolls back with it. Times are the database's, read by the
// statement that decides. Keys are taken in sortKeys order, so that two
// statements never wait on each other in opposite orders.
type lockStore interface {
	// Migrate creates the lock table, its indexes, its generation counter
	// and the catalog of lockable tables when they are missing. Several
	// nodes may run it at once.
	Migrate(c conn) error

	// Grant takes or refreshes access locks on keys for o, all or nothing:
	// on the first key another session holds it returns that key's
	// *LockedError and grants none. Asking again for a lock o holds keeps
	// its token and generation and never shortens its expiry; the only
	// reader may upgrade to Write. Only a new token is returned (the table
	// holds its hash alone).
	Grant(c conn, keys []key, o Owner, access Access, ttl time.Duration) (map[key]granted, error)

	// Check sorts keys into those o holds a live Write lock on and those
	// nobody holds; a key someone else holds, or reads, is a *LockedError.
	// With fence, the keys' rows stay locked until the transaction ends, so
	// that no takeover commits between the Check and the write's commit.
	Check(c conn, keys []key, o Owner, fence bool) (mine, free []key, err error)

	// Release gives up session's lock on k, Write or Read: ErrNotLocked
	// when it holds none, or when its lock had expired (it is removed all
	// the same). It says how long the lock was held, on the database
	// clock, where the store learns it without another statement
	// (heldUnknown when not: MySQL's Write locks, freed by an UPDATE
	// without RETURNING).
	Release(c conn, k key, session string) (time.Duration, error)

	// ForceRelease removes every lock on k after allow approved each live
	// holder; ErrNotLocked when nobody holds k.
	ForceRelease(c conn, k key, allow func(now time.Time, held []Lock) error) error

	// Drop deletes session's locks on keys, live or not: the undo of a
	// refused statement. dropGrant deletes the Write lock on k only if its
	// token is still token (compared by hash), that is, if the grant being
	// undone made it.
	Drop(c conn, keys []key, session string) error
	DropGrant(c conn, k key, token string) error

	// ReleaseAll deletes every lock row of session and says how many.
	ReleaseAll(c conn, session string) (int64, error)

	// Renew pushes session's live locks to expire no earlier than ttl from
	// now, and says how many it renewed; expired locks stay expired.
	Renew(c conn, session string, ttl time.Duration) (int64, error)

	// Sweep deletes a batch of expired rows and says how many, and whether
	// that was a whole batch (more may be waiting); it never waits for a
	// record whose locks another statement is changing. cur carries a
	// store's place from one batch of a Sweep to the next; a store may
	// ignore it.
	Sweep(c conn, cur *sweepCursor) (n int64, more bool, err error)

	// List returns the live (or, with f.Expired, the expired) locks that
	// match f, without tokens. byToken returns the live lock whose token is
	// token (looked up by its hash), with its owner and without a token, or
	// ErrNotLocked.
	List(c conn, f Filter) ([]Lock, error)

	// SetReason records reason with l, the lock just granted (its
	// session's row of its generation: a later grant of the key hides it).
	SetReason(c conn, l Lock, reason string) error
	ByToken(c conn, token string) (*Lock, error)

	// Stats counts the live locks, at most groups resources and users of
	// them, finds the oldest, and counts the expired rows (Plugin.Stats).
	Stats(c conn, groups int) (Stats, error)

	// Remember writes catalog rows; specs reads them all.
	Remember(c conn, specs []tableSpec) error
	Specs(c conn) ([]tableSpec, error)

	// RowLocks says whether the plugin's reads of the application's rows
	// must lock them (FOR UPDATE, FOR SHARE) to keep them from changing
	// until the transaction ends. A database that serialises writers
	// (SQLite) needs no row locks.
	RowLocks() bool
}

// heldStore is implemented by stores that check, in the read's own
// statement, that the session still holds the lock of the record it
// re-reads: the re-read is one read-only statement.
type heldStore interface {
	// HeldCondition is a condition to add to a load of k that is true only
	// while session holds a fresh enough lock on k (more than margin left):
	// the re-read of a record the session holds, read-only.
	HeldCondition(k key, session string, access Access, margin time.Duration) clause.Expression
}

// snapshotStore is implemented by stores whose plain reads inside a
// transaction see the transaction's snapshot rather than the latest
// committed rows (InnoDB under REPEATABLE READ): a heldCondition there is
// used only outside transactions, where every statement reads afresh.
type snapshotStore interface {
	SnapshotReads() bool
}

// loadStore is implemented by stores that lock and read in the read's own
// statement (PostgreSQL): the commonest loads, by key and by WHERE, cost one
// round trip. The other stores take the general path.
type loadStore interface {
	lockStore
	heldStore

	// GrantPrefix is a WITH clause to put before a load of k, its
	// parameters numbered after the load's own after: it takes the Write
	// lock for o in the read's statement, with token's hash. The load adds grantCondition to
	// its WHERE and reads FOR SHARE, so that the row is never older than
	// the lock.
	GrantPrefix(k key, o Owner, token string, ttl time.Duration, after int) (string, []any)
	GrantCondition() clause.Expression

	// FindAndLock locks, all or nothing, the Write locks of the keys that
	// keysSQL (a SELECT of one key column named column) finds, with the
	// resource resource, in one statement. refused reports that some key
	// is held: nothing was granted, and the general path names the holders.
	FindAndLock(c conn, keysSQL string, vars []any, column, resource string, o Owner, token string, ttl time.Duration) (grants []grantRow, refused bool, err error)
}

// foldStore is implemented by stores that can check the fence in the
// write's own statement (fence.go).
type foldStore interface {
	// FenceCondition is a condition to add to a write of k that is true
	// only while session holds a valid Write lock on k, and that keeps k's
	// key row from changing until the transaction ends (a row lock, or
	// SQLite's one writer at a time).
	FenceCondition(k key, session string) clause.Expression
}

// granted is one lock a grant took or refreshed.
type granted struct {
	// Lock is the lock as its holder sees it: Token is the new token of a
	// fresh grant, "" otherwise (the table has only its hash).
	Lock
	// fresh: the session did not hold this lock before (a new token), or
	// it upgraded its Read lock to Write.
	fresh bool
	// hash is the hash of the lock's token, as the table holds it: which
	// grant made the lock, even where the token is not returned.
	hash string
}

// grantRow is one lock findAndLock granted.
type grantRow struct {
	k       key
	fresh   bool // newly granted (the batch's token)
	expires time.Time
}

// conn runs statements on a *gorm.DB's connection: the caller's transaction
// when there is one. It goes straight to the connection pool, so the
// plugin's own statements never re-enter GORM callbacks, and reports them to
// GORM's logger so that db.Debug() shows them.
type conn struct {
	db  *gorm.DB
	ctx context.Context
	// answer, when set, tells the errors that are an answer to the
	// statement rather than its failure (a refusal it raises on purpose):
	// they reach the caller, but the logger and the span see a success.
	answer func(error) bool
	// stmts, when set, keeps the statements run on c prepared (stmtcache.go):
	// set by a store for its statements of fixed text only.
	stmts *stmtCache
}

func direct(db *gorm.DB) conn {
	return conn{db: db, ctx: connCtx(db)}
}

// connCtx is the context of the plugin's statements on db: its statement's,
// carrying the statement's spanLog (spans.go) if it keeps one.
func connCtx(db *gorm.DB) context.Context {
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return withSpanLog(ctx, db)
}

// cleanup is the connection for undoing a statement's locks: it runs even
// when the statement's context was cancelled, which may be why it failed.
func cleanup(db *gorm.DB) conn {
	c := direct(db)
	c.ctx = context.WithoutCancel(c.ctx)
	return c
}

// inTx runs fn in the caller's transaction if db is in one, else in a new
// transaction that commits when fn returns nil.
func inTx(db *gorm.DB, fn func(conn) error) error {
	ctx := connCtx(db)
	if _, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
		return fn(conn{db: db, ctx: ctx})
	}
	var err error
	for i := range mysqlRetries {
		err = db.Session(&gorm.Session{NewDB: true, Context: ctx}).Transaction(func(tx *gorm.DB) error {
			return fn(conn{db: tx, ctx: ctx})
		})
		// A deadlock, or on Galera a certification failure at COMMIT
		// (both 1213): the transaction was rolled back whole, and is
		// the plugin's own, so it runs again.
		if mysqlCode(err) != 1213 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(1+mrand.IntN(1<<min(i, 5))) * time.Millisecond)
	}
	return err
}

// inTx runs fn in c's transaction, or in a new one on c's pool.
func (c conn) inTx(fn func(conn) error) error {
	db := c.db.Session(&gorm.Session{Context: c.ctx})
	return inTx(db, fn)
}

func (c conn) trace(begin time.Time, query string, args []any, rows int64, err error) {
	if c.db.Logger == nil {
		return
	}
	c.db.Logger.Trace(c.ctx, begin, func() (string, int64) {
		return c.db.Dialector.Explain(query, redact(args)...), rows
	}, err)
}

// redact hides tokens and their hashes from logs: every argument that
// looks like one, every element of an array argument that does, and every
// run of hex digits as long as one inside a text argument (a JSON list of
// keys and hashes). A hash gives no access, but a log is no place for it.
func redact(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			a = redactText(v)
		case []string:
			r := make([]string, len(v))
			for j, s := range v {
				r[j] = redactText(s)
			}
			a = r
		}
		out[i] = a
	}
	return out
}

// redactText replaces in s every run of lower-case hex digits that is as
// long as a token or a hash by "<token>".
func redactText(s string) string {
	var b strings.Builder
	last, changed := 0, false
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && isHex(s[j:j+1]) {
			j++
		}
		if n := j - i; n == tokenLen || n == hashLen {
			b.WriteString(s[last:i])
			b.WriteString("<token>")
			last, changed = j, true
		}
		i = max(j, i+1)
	}
	if !changed {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func (c conn) exec(query string, args ...any) (int64, error) {
	begin := time.Now()
	tel := c.tel()
	ctx, span := tel.statement(c.ctx, query)
	var n int64
	var err error
	for i := 0; ; i++ {
		var res sql.Result
		if res, err = c.execContext(ctx, query, args); err == nil {
			n, err = res.RowsAffected()
		}
		if !c.again(err, i) {
			break
		}
	}
	err = readOnly(err)
	tel.statementDone(ctx, span, c.db, query, begin, n, c.failure(err))
	c.trace(begin, query, args, n, c.failure(err))
	return n, err
}

func (c conn) query(query string, args []any, scan func(*sql.Rows) error) (int64, error) {
	begin := time.Now()
	tel := c.tel()
	ctx, span := tel.statement(c.ctx, query)
	rows, done, err := c.queryContext(ctx, query, args)
	for i := 0; c.again(err, i); i++ {
		rows, done, err = c.queryContext(ctx, query, args)
	}
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
		done()
	}
	err = readOnly(err)
	tel.statementDone(ctx, span, c.db, query, begin, n, c.failure(err))
	c.trace(begin, query, args, n, c.failure(err))
	return n, err
}

// queryContext sends a query on c's connection, prepared when c keeps
// statements prepared; done is to be called once its rows are closed.
func (c conn) queryContext(ctx context.Context, query string, args []any) (*sql.Rows, func(), error) {
	if c.stmts != nil {
		if rows, done, ok, err := c.stmts.query(ctx, c.db, query, args); ok {
			return rows, done, err
		}
	}
	rows, err := c.db.Statement.ConnPool.QueryContext(ctx, query, args...)
	return rows, noop, err
}

// execContext is queryContext for a statement without rows.
func (c conn) execContext(ctx context.Context, query string, args []any) (sql.Result, error) {
	if c.stmts != nil {
		if res, ok, err := c.stmts.exec(ctx, c.db, query, args); ok {
			return res, err
		}
	}
	return c.db.Statement.ConnPool.ExecContext(ctx, query, args...)
}

func noop() {}

// again says whether a statement that failed with err after i retries
// runs again: a MySQL statement outside a transaction that InnoDB chose
// as a deadlock's victim, or that lost Galera's certification at its
// implicit COMMIT (both 1213), was rolled back whole.
func (c conn) again(err error, i int) bool {
	if i >= mysqlRetries || mysqlCode(err) != 1213 || c.ctx.Err() != nil {
		return false
	}
	if _, inTx := c.db.Statement.ConnPool.(gorm.TxCommitter); inTx {
		return false
	}
	time.Sleep(time.Duration(1+mrand.IntN(1<<min(i, 5))) * time.Millisecond)
	return true
}

// failure is err as the logger and the span see it: nil when it is the
// statement's answer (c.answer).
func (c conn) failure(err error) error {
	if err != nil && c.answer != nil && c.answer(err) {
		return nil
	}
	return err
}

// sweepCursor is where one Sweep has got to: the latest expiry a batch
// looked at, so that the next batch starts its index scan there instead of
// stepping over every entry the batches before it left dead.
type sweepCursor struct {
	after time.Time // zero before the first batch
}
