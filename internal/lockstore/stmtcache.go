package lockstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"
)

// stmtCache keeps statements of fixed text prepared, one *sql.Stmt per
// pool and text, reused on each connection of the pool and in its
// transactions (Tx.StmtContext): mattn/go-sqlite3 compiles every statement
// afresh, and compiling the lock table's upsert (ON CONFLICT, the
// generation triggers) costs more than running it; go-sql-driver prepares
// and closes a statement with arguments around every run. Past
// maxCachedStmts texts a statement runs unprepared. One run through exec
// must have no RETURNING: the driver steps it once and leaves it unreset,
// which would keep its transaction open.
type stmtCache struct {
	mu        sync.RWMutex
	stmts     map[stmtKey]*sql.Stmt
	preparing map[stmtKey]bool // texts a goroutine is preparing right now
	// pool is the preparedPool last handed out (PreparedPool), kept so
	// that a re-read on the same pool allocates none.
	pool atomic.Pointer[preparedPool]
}

type stmtKey struct {
	db    *sql.DB
	query string
}

// maxCachedStmts bounds the statements a cache keeps: the plugin's own
// are a handful, and the holder's re-reads are as many as the shapes of
// the application's loads by key.
const maxCachedStmts = 256

// errStmtOtherDB is what database/sql answers when a statement prepared on
// one pool is used in a transaction of another.
const errStmtOtherDB = "sql: Tx.Stmt: statement from different database used"

func newStmtCache() *stmtCache {
	return &stmtCache{stmts: map[stmtKey]*sql.Stmt{}, preparing: map[stmtKey]bool{}}
}

// stmt returns q prepared on db, preparing it on first use; nil when the
// cache is full, another goroutine is preparing q, or q does not prepare
// (run unprepared, it then says why). It never waits while holding sc.mu
// and never closes a statement: its caller may hold SQLite's write lock,
// and closing waits for the statement's connection, whose holder may be
// waiting for that lock (TestSQLiteSixteenSessionsNeverSeeBusy). In a
// transaction (inTx) only a pool without a bound on its connections
// prepares: under SetMaxOpenConns(1) preparing would wait for the
// caller's own connection forever.
func (sc *stmtCache) stmt(ctx context.Context, db *sql.DB, q string, inTx bool) *sql.Stmt {
	k := stmtKey{db, q}
	sc.mu.RLock()
	s := sc.stmts[k]
	sc.mu.RUnlock()
	if s != nil || inTx && db.Stats().MaxOpenConnections != 0 {
		return s
	}
	sc.mu.Lock()
	if s = sc.stmts[k]; s != nil || sc.preparing[k] || len(sc.stmts)+len(sc.preparing) >= maxCachedStmts {
		sc.mu.Unlock()
		return s
	}
	sc.preparing[k] = true
	sc.mu.Unlock()
	s, err := db.PrepareContext(context.WithoutCancel(ctx), q)
	sc.mu.Lock()
	delete(sc.preparing, k)
	if err == nil {
		sc.stmts[k] = s
	}
	sc.mu.Unlock()
	if err != nil {
		return nil
	}
	return s
}

// onPool returns the statement q prepared for the connection db's
// statement runs on, and a function to call once its rows are closed; nil
// when q must run unprepared (a pool the cache does not know, such as
// GORM's own PreparedStmtDB, which prepares by itself).
func (sc *stmtCache) onPool(ctx context.Context, db *gorm.DB, q string) (*sql.Stmt, func()) {
	pool := db.Statement.ConnPool // sqlPool(db.Statement.ConnPool)
	if w, ok := pool.(interface{ SQLPool() gorm.ConnPool }); ok {
		pool = w.SQLPool()
	}
	switch pool := pool.(type) {
	case *sql.DB:
		if s := sc.stmt(ctx, pool, q, false); s != nil {
			return s, func() {}
		}
	case *sql.Tx:
		// A transaction of the DB's own pool: GORM begins it there.
		parent, ok := sqlPool(db.ConnPool).(*sql.DB)
		if !ok {
			return nil, nil
		}
		if s := sc.stmt(ctx, parent, q, true); s != nil {
			ts := pool.StmtContext(ctx, s)
			return ts, func() { ts.Close() }
		}
	}
	return nil, nil
}

// exec runs q, a statement without rows (and without RETURNING), through
// the cache; ok is false when it did not (the caller runs q itself), as
// Conn.Query does for a statement with rows.
func (sc *stmtCache) exec(ctx context.Context, db *gorm.DB, q string, args []any) (res sql.Result, ok bool, err error) {
	s, done := sc.onPool(ctx, db, q)
	if s == nil {
		return nil, false, nil
	}
	defer done()
	res, err = s.ExecContext(ctx, args...)
	if err != nil && err.Error() == errStmtOtherDB {
		return nil, false, nil
	}
	return res, true, err
}

// preparedPool is the connection pool of a holder's re-read on SQLite,
// for gorm:query alone: the re-read's statement, which carries the lock
// check, is prepared once per connection and text. The plugin puts it in
// place just before gorm:query and takes it away just after
// (PreparedPool, Unprepared).
type preparedPool struct {
	*sql.DB
	cache *stmtCache
}

func (p preparedPool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s := p.cache.stmt(ctx, p.DB, q, false); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return p.DB.QueryContext(ctx, q, args...)
}

// GetDBConn is gorm.GetDBConnector: db.DB() still finds the pool.
func (p preparedPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// PreparedPool is db's pool with the statements of the holder's re-read
// prepared once per connection, when s keeps statements prepared and db
// runs on the pool itself (not in a transaction, not through another
// plugin's pool); ok says whether it is. Put it in place just for
// gorm:query, and put back what Unprepared gives.
func PreparedPool(db *gorm.DB, s Store) (pool gorm.ConnPool, ok bool) {
	var cache *stmtCache
	switch st := s.(type) {
	case *sqliteStore:
		cache = st.stmts
	case *mysqlStore:
		cache = st.stmts
	}
	p, ok := db.Statement.ConnPool.(*sql.DB)
	if cache == nil || !ok {
		return nil, false
	}
	if last := cache.pool.Load(); last != nil && last.DB == p {
		return last, true
	}
	pp := &preparedPool{DB: p, cache: cache}
	cache.pool.Store(pp)
	return pp, true
}

// preparedTx is the transaction of a write by key on SQLite whose fence
// rides in its WHERE (the fold), for gorm:update alone: the write's text,
// which carries the lock check, is prepared once per connection and text
// (Tx.StmtContext on the cache's statement), where mattn/go-sqlite3 would
// compile it, subquery and all, on every call. Everything else runs on
// the transaction itself.
type preparedTx struct {
	*sql.Tx
	parent *sql.DB // the pool the transaction began on
	cache  *stmtCache
}

// ExecContext runs q prepared when the cache has or can prepare it, and
// unprepared otherwise (see stmtCache.stmt), or when q returns rows: a
// statement run through Exec must have no RETURNING.
func (p *preparedTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if strings.Contains(q, "RETURNING") {
		return p.Tx.ExecContext(ctx, q, args...)
	}
	if s := p.cache.stmt(ctx, p.parent, q, true); s != nil {
		ts := p.Tx.StmtContext(ctx, s)
		res, err := ts.ExecContext(ctx, args...)
		ts.Close()
		if err == nil || err.Error() != errStmtOtherDB {
			return res, err
		}
	}
	return p.Tx.ExecContext(ctx, q, args...)
}

// PreparedWriteTx is db's transaction with its write prepared once per
// connection, when s is the SQLite store and db runs in a transaction of
// its own pool (not through another plugin's pool, not GORM's
// PreparedStmt mode, which prepares by itself); ok says whether it is.
// Put it in place just for gorm:update, and put back what Unprepared
// gives.
func PreparedWriteTx(db *gorm.DB, s Store) (pool gorm.ConnPool, ok bool) {
	st, isSQLite := s.(*sqliteStore)
	tx, inTx := db.Statement.ConnPool.(*sql.Tx)
	parent, onPool := db.ConnPool.(*sql.DB)
	if !isSQLite || !inTx || !onPool {
		return nil, false
	}
	return &preparedTx{Tx: tx, parent: parent, cache: st.stmts}, true
}

// Unprepared is the pool PreparedPool or PreparedWriteTx wrapped, if pool
// is one.
func Unprepared(pool gorm.ConnPool) (gorm.ConnPool, bool) {
	switch p := pool.(type) {
	case *preparedPool:
		return p.DB, true
	case *preparedTx:
		return p.Tx, true
	}
	return nil, false
}

// sqlPool is database/sql's own pool or transaction that pool wraps (the
// plugin's pool on Galera, which sees its transactions' COMMIT), or pool.
func sqlPool(pool gorm.ConnPool) gorm.ConnPool {
	if w, ok := pool.(interface{ SQLPool() gorm.ConnPool }); ok {
		return w.SQLPool()
	}
	return pool
}
