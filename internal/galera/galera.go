// Package galera tells a Galera cluster's refusal of a COMMIT as the lock
// answer it is (docs/scaling.md). Galera (MariaDB's multi-primary cluster)
// certifies each transaction's write set at COMMIT, after every
// statement's callbacks have returned, and a failure is error 1213 there.
// Row locks are a node's own, so on Galera the fence writes the writer's
// key rows (lockstore's Certifier), where a takeover's or a release's
// write of the same rows on another node makes one of the two fail
// certification. The writes a transaction made under locks are watched
// (Watch); a COMMIT the cluster rolled back asks each whether its lock is
// gone.
//
// GORM commits a caller's own transaction (db.Transaction, Begin …
// Commit) with no callback: on Galera the plugin puts a pool of its own in
// place of the database/sql pool (Install), whose transactions' Commit is
// watched. A pool that is not database/sql's own (GORM's PrepareStmt mode,
// another plugin's) is left alone, and its COMMIT is not seen.
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
// with err: the lock answer (ErrNotLocked, naming the record) when a lock
// it needed is gone, nil when they all still hold. db is the database the
// transaction ran on.
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

// BeginTx begins a transaction whose COMMIT the plugin sees. It is
// gorm.ConnPoolBeginner, which GORM uses where database/sql's own BeginTx
// is not there.
func (g *galeraPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := g.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &galeraTx{Tx: tx, pool: g, watch: &Watch{}}, nil
}

// GetDBConn is gorm.GetDBConnector: db.DB() still finds the pool.
func (g *galeraPool) GetDBConn() (*sql.DB, error) { return g.DB, nil }

// SQLPool is the database/sql pool itself, for the plugin's prepared
// statements.
func (g *galeraPool) SQLPool() gorm.ConnPool { return g.DB }

// galeraTx is a transaction galeraPool began; its watch collects its
// fenced writes.
type galeraTx struct {
	*sql.Tx
	pool  *galeraPool
	watch *Watch
}

// Commit commits, and tells a certification failure as ErrNotLocked when
// a lock one of the transaction's fenced writes needed is gone.
func (t *galeraTx) Commit() error {
	err := t.Tx.Commit()
	if err != nil {
		err = t.watch.Told(t.pool.root, err)
	}
	return err
}

// GetDBConn is gorm.GetDBConnector.
func (t *galeraTx) GetDBConn() (*sql.DB, error) { return t.pool.DB, nil }

// SQLPool is the database/sql transaction itself, for the plugin's
// prepared statements.
func (t *galeraTx) SQLPool() gorm.ConnPool { return t.Tx }
