package lockstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"
)

// stmtCache keeps statements of fixed text prepared, one *sql.Stmt per pool
// and text: go-sqlite3 compiles every statement afresh (the upsert costs
// more to compile than to run), go-sql-driver prepares and closes around
// every run. exec takes no RETURNING: the driver would leave it unreset,
// its transaction open.
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

// maxCachedStmts bounds a cache: the plugin's statements and the shapes of
// the holder's re-reads.
const maxCachedStmts = 256

// errStmtOtherDB is what database/sql answers when a statement prepared on
// one pool is used in a transaction of another.
const errStmtOtherDB = "sql: Tx.Stmt: statement from different database used"

func newStmtCache() *stmtCache {
	return &stmtCache{stmts: map[stmtKey]*sql.Stmt{}, preparing: map[stmtKey]bool{}}
}

// stmt returns q prepared on db, or nil (cache full, q being prepared, or
// not preparable). It never waits under sc.mu nor closes a statement: its
// caller may hold SQLite's write lock (TestSQLiteSixteenSessionsNeverSeeBusy).
// In a transaction only an unbounded pool prepares: under
// SetMaxOpenConns(1) it would wait for the caller's own connection.
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

// onPool returns q prepared for db's connection and a function to call once
// its rows are closed; nil for a pool the cache does not know.
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

// exec runs q, without rows or RETURNING, through the cache; !ok: the
// caller runs q itself.
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

// preparedPool is the pool of a holder's re-read, for gorm:query alone: its
// statement is prepared once per connection and text.
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

// PreparedPool is db's pool with the holder's re-read prepared, where s
// keeps statements prepared and db runs on the pool itself; ok says so.
// Put it in place just for gorm:query, then put back what Unprepared gives.
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

// preparedTx is the transaction of a folded write by key on SQLite, for
// gorm:update alone: the write is prepared once per connection and text.
type preparedTx struct {
	*sql.Tx
	parent *sql.DB // the pool the transaction began on
	cache  *stmtCache
}

// ExecContext runs q prepared where the cache can, unless q has RETURNING.
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

// PreparedWriteTx is db's transaction with its write prepared, where s is
// the SQLite store and db runs in a transaction of its own pool; ok says
// so. Put it in place just for gorm:update, then put back what Unprepared gives.
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
