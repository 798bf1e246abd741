// Package galera tells a Galera cluster's refusal of a COMMIT (error 1213,
// after every callback returned) as the lock answer it is, asking each of
// the transaction's watched writes whether its lock is gone. On Galera the
// plugin puts a pool of its own in place of database/sql's (Install), so
// that a caller's own COMMIT is seen too (docs/scaling.md).
package galera

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
)

// Lost is one watched write's answer to a COMMIT the cluster rolled back
// with err: the lock answer when a lock it needed is gone, else nil.
type Lost func(db *gorm.DB, err error) error

// Watch collects the writes of one transaction whose COMMIT the plugin
// sends for its caller (Do, Transaction) or sees (Install).
type Watch struct {
	mu     sync.Mutex
	writes []Lost
}

// Add watches one write.
func (w *Watch) Add(write Lost) {
	w.mu.Lock()
	w.writes = append(w.writes, write)
	w.mu.Unlock()
}

// Told is err, the error of a watched transaction on db, as the first
// watched write's lock answer, when it is a rollback at COMMIT (1213, or
// ErrTxLost) that is not a lock answer already; else err.
func (w *Watch) Told(db *gorm.DB, err error) error {
	if !lockstore.TxRolledBack(err) || errors.Is(err, lockstore.ErrNotLocked) || errors.Is(err, lockstore.ErrLocked) {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, lost := range w.writes {
		if told := lost(db, err); told != nil {
			return told
		}
	}
	return err
}

// watchKey is the context key of a transaction's Watch.
type watchKey struct{}

// WithWatch is ctx watched by w: the writes of a transaction begun in it.
func WithWatch(ctx context.Context, w *Watch) context.Context {
	return context.WithValue(ctx, watchKey{}, w)
}

// WatchOf is the watch of the transaction db's statement runs in (ctx is
// its context): one WithWatch put there, or that of a transaction the
// installed pool began; nil for none.
func WatchOf(ctx context.Context, db *gorm.DB) *Watch {
	if w, _ := ctx.Value(watchKey{}).(*Watch); w != nil {
		return w
	}
	if tx, ok := db.Statement.ConnPool.(*galeraTx); ok {
		return tx.watch
	}
	return nil
}

// Install puts a pool whose transactions are watched in place of db's
// pool, where that pool is database/sql's own.
func Install(db *gorm.DB) {
	pool, ok := db.Config.ConnPool.(*sql.DB)
	if !ok {
		return
	}
	g := &galeraPool{DB: pool, root: db}
	db.Config.ConnPool = g
	if db.Statement.ConnPool == pool {
		db.Statement.ConnPool = g
	}
}

// galeraPool is the application's database/sql pool on Galera.
type galeraPool struct {
	*sql.DB
	root *gorm.DB // the database the plugin was registered on, for the check after a refused COMMIT
}

// BeginTx begins a transaction whose COMMIT the plugin sees
// (gorm.ConnPoolBeginner).
func (g *galeraPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := g.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &galeraTx{Tx: tx, pool: g, watch: &Watch{}}, nil
}

// GetDBConn is gorm.GetDBConnector: db.DB() still finds the pool.
func (g *galeraPool) GetDBConn() (*sql.DB, error) { return g.DB, nil }

// SQLPool is the database/sql pool, for the plugin's prepared statements.
func (g *galeraPool) SQLPool() gorm.ConnPool { return g.DB }

// galeraTx is a transaction galeraPool began; its watch collects its fenced writes.
type galeraTx struct {
	*sql.Tx
	pool  *galeraPool
	watch *Watch
}

// Commit commits, and tells a certification failure as ErrNotLocked when
// a lock one of the transaction's fenced writes needed is gone.
func (t *galeraTx) Commit() error {
	if err := t.Tx.Commit(); err != nil {
		return t.watch.Told(t.pool.root, err)
	}
	return nil
}

// GetDBConn is gorm.GetDBConnector.
func (t *galeraTx) GetDBConn() (*sql.DB, error) { return t.pool.DB, nil }

// SQLPool is the database/sql transaction, for prepared statements.
func (t *galeraTx) SQLPool() gorm.ConnPool { return t.Tx }
