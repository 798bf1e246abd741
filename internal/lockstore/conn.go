package lockstore

import (
	"context"
	"database/sql"
	mrand "math/rand/v2"
	"strings"
	"time"
	"unicode"

	"gorm.io/gorm"
)

// Conn runs statements on a *gorm.DB's connection: the caller's transaction
// when there is one. It goes straight to the connection pool, so the
// plugin's own statements never re-enter GORM callbacks, and reports them to
// GORM's logger so that db.Debug() shows them.
type Conn struct {
	db  *gorm.DB
	ctx context.Context
	// answer, when set, tells the errors that are an answer to the
	// statement rather than its failure (a refusal it raises on purpose):
	// they reach the caller, but the logger and the span see a success.
	answer func(error) bool
	// stmts, when set, keeps the statements run on c prepared (stmtcache.go):
	// set by a store for its statements of fixed text only.
	stmts *stmtCache
	// obs is told of every statement; a store sets it on entry.
	obs Observer
	// plan, when set, records the statements that change something
	// instead of running them (plan.go).
	plan *Plan
	// grant says that c decides a grant, whose waits for a key row a
	// store bounds where it can (mysqlGrantWaitPrefix).
	grant bool
	// wallClock, set by a MariaDB store, sends each statement that reads
	// or writes rows with the session's timestamp put back to the wall
	// clock (wallClockText).
	wallClock bool
}

// NewConn is a connection running statements on db's connection pool or
// transaction, in ctx.
func NewConn(db *gorm.DB, ctx context.Context) Conn {
	return Conn{db: db, ctx: ctx}
}

// Context is the context c's statements run in.
func (c Conn) Context() context.Context { return c.ctx }

// WithoutCancel is c running even when its context was cancelled: for
// undoing a statement's locks, whose failure may be why it is undone.
func (c Conn) WithoutCancel() Conn {
	c.ctx = context.WithoutCancel(c.ctx)
	return c
}

// Observed is c reporting its statements to obs.
func (c Conn) Observed(obs Observer) Conn {
	c.obs = obs
	return c
}

// on is c reporting its statements to obs.
func (c Conn) on(obs Observer) Conn {
	c.obs = obs
	return c
}

// inTx runs fn in the caller's transaction if db is in one, else in a new
// transaction that commits when fn returns nil; a new transaction that
// MySQL or Galera rolled back whole as a deadlock runs again.
func inTx(db *gorm.DB, ctx context.Context, fn func(Conn) error) error {
	if _, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
		return fn(Conn{db: db, ctx: ctx})
	}
	var err error
	for i := range mysqlRetries {
		err = db.Session(&gorm.Session{NewDB: true, Context: ctx}).Transaction(func(tx *gorm.DB) error {
			return fn(Conn{db: tx, ctx: ctx})
		})
		// A deadlock, or on Galera a certification failure at COMMIT
		// (both 1213): the transaction was rolled back whole, and is
		// the plugin's own, so it runs again.
		if !TxRolledBack(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(1+mrand.IntN(1<<min(i, 5))) * time.Millisecond)
	}
	return err
}

// inTx runs fn in c's transaction, or in a new one on c's pool.
func (c Conn) inTx(fn func(Conn) error) error {
	db := c.db.Session(&gorm.Session{Context: c.ctx})
	return inTx(db, c.ctx, func(tx Conn) error {
		tx.plan = c.plan
		tx.wallClock = c.wallClock
		return fn(tx.on(c.obs))
	})
}

// wallClockText is q sent with MariaDB's timestamp at the wall clock for
// it: a client's SET timestamp left on a pooled connection moves NOW() and
// UTC_TIMESTAMP(), by which the plugin's statements judge and write
// expiries, and would let a live lock be taken over or swept, or a new one
// be written expired (TestLeakedSessionClockMovesNoLock). timestamp = 0
// is the wall clock; a statement that sets others already gets it added.
func wallClockText(q string) string {
	const set = "SET STATEMENT "
	if strings.HasPrefix(q, set) {
		return set + "timestamp = 0, " + q[len(set):]
	}
	word := strings.TrimLeft(q, " \n\t(")
	if end := strings.IndexFunc(word, func(r rune) bool { return !unicode.IsLetter(r) }); end >= 0 {
		word = word[:end]
	}
	switch strings.ToUpper(word) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH":
		return set + "timestamp = 0 FOR " + q
	}
	return q
}

func (c Conn) trace(begin time.Time, query string, args []any, rows int64, err error) {
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

// Exec runs a statement that returns no rows and says how many it changed.
func (c Conn) Exec(query string, args ...any) (int64, error) {
	if c.plan != nil && !runsWhenPlanned(query) {
		return 0, c.plan.record(query, args)
	}
	if c.wallClock {
		query = wallClockText(query)
	}
	begin := time.Now()
	obs := c.obs // observer(c.obs), without a call per statement
	if obs == nil {
		obs = nopObserver{}
	}
	ctx, started := obs.StatementStart(c.ctx, query)
	var n int64
	var err error
	for i := 0; ; i++ {
		var res sql.Result
		if res, err = c.execContext(ctx, query, args); err == nil {
			n, err = res.RowsAffected()
		}
		if err == nil || !c.again(err, i) {
			break
		}
	}
	if err != nil { // a success needs no reading
		err = ReadOnly(err)
	}
	failed := err // as the logger and the span see it
	if err != nil {
		failed = c.failure(err)
	}
	obs.StatementEnd(ctx, started, query, begin, n, failed)
	c.trace(begin, query, args, n, failed)
	return n, err
}

// Query runs a statement and calls scan on each row it returns.
func (c Conn) Query(query string, args []any, scan func(*sql.Rows) error) (int64, error) {
	if c.wallClock {
		query = wallClockText(query)
	}
	begin := time.Now()
	obs := c.obs // observer(c.obs), without a call per statement
	if obs == nil {
		obs = nopObserver{}
	}
	ctx, started := obs.StatementStart(c.ctx, query)
	var rows *sql.Rows
	var done func() // to call once rows are closed
	var err error
	for i := 0; ; i++ {
		// Sent on c's connection, prepared when c keeps statements prepared
		// (stmtcache.go) and the cache has q for c's pool; a statement of
		// another pool's (errStmtOtherDB) runs unprepared.
		var s *sql.Stmt
		if c.stmts != nil {
			s, done = c.stmts.onPool(ctx, c.db, query)
		}
		if s != nil {
			if rows, err = s.QueryContext(ctx, args...); err != nil {
				done()
				if err.Error() == errStmtOtherDB {
					s = nil
				}
			}
		}
		if s == nil {
			rows, err = c.db.Statement.ConnPool.QueryContext(ctx, query, args...)
			done = noop
		}
		if err == nil || !c.again(err, i) {
			break
		}
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
	if err != nil { // a success needs no reading
		err = ReadOnly(err)
	}
	failed := err // as the logger and the span see it
	if err != nil {
		failed = c.failure(err)
	}
	obs.StatementEnd(ctx, started, query, begin, n, failed)
	if c.db.Logger != nil { // c.trace(begin, query, args, n, failed)
		c.db.Logger.Trace(c.ctx, begin, func() (string, int64) {
			return c.db.Dialector.Explain(query, redact(args)...), n
		}, failed)
	}
	return n, err
}

// execContext sends a statement without rows on c's connection, prepared
// when c keeps statements prepared (as Query sends one with rows).
func (c Conn) execContext(ctx context.Context, query string, args []any) (sql.Result, error) {
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
func (c Conn) again(err error, i int) bool {
	if err == nil || i >= mysqlRetries || mysqlCode(err) != 1213 || c.ctx.Err() != nil {
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
func (c Conn) failure(err error) error {
	if err != nil && c.answer != nil && c.answer(err) {
		return nil
	}
	return err
}

// SavepointName is the one name the plugin's savepoints use: nested
// statements nest them, and ROLLBACK TO and RELEASE take the newest, so a
// fixed name keeps prepared-statement caches from growing.
const SavepointName = "offlinelock"

// Savepoint opens the savepoint name in c's transaction.
func (c Conn) Savepoint(name string) error {
	_, err := c.Exec("SAVEPOINT " + name)
	return err
}

// RollbackTo undoes what c's transaction did since the savepoint name.
func (c Conn) RollbackTo(name string) error {
	_, err := c.Exec("ROLLBACK TO SAVEPOINT " + name)
	return err
}

// ReleaseSavepoint forgets the savepoint name, keeping what was done.
func (c Conn) ReleaseSavepoint(name string) error {
	_, err := c.Exec("RELEASE SAVEPOINT " + name)
	return err
}
