package offlinelock

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

// A caller's own transaction on Galera (db.Transaction, Begin … Commit):
// GORM commits it by calling the transaction's Commit, with no callback,
// and certification refuses it only there. So on Galera the plugin puts
// its own pool in place of the database/sql pool: the transactions it
// begins are database/sql's, and their Commit tells a refusal as the lock
// answer it is (commitConflict), as Plugin.Transaction does. Where the
// application's pool is not database/sql's own (GORM's PrepareStmt mode,
// another plugin's pool), it is left alone and the plugin cannot see the
// COMMIT (docs/scaling.md).

// galeraPool is the application's database/sql pool on Galera.
type galeraPool struct {
	*sql.DB
	p    *Plugin
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
	return &galeraTx{Tx: tx, pool: g, watch: &commitWatch{}}, nil
}

// GetDBConn is gorm.GetDBConnector: db.DB() still finds the pool.
func (g *galeraPool) GetDBConn() (*sql.DB, error) { return g.DB, nil }

// SQLPool is the database/sql pool itself, for the plugin's prepared
// statements.
func (g *galeraPool) SQLPool() gorm.ConnPool { return g.DB }

// galeraTx is a transaction galeraPool began; its watch collects its
// fenced writes (watchCommit).
type galeraTx struct {
	*sql.Tx
	pool  *galeraPool
	watch *commitWatch
}

// Commit commits, and tells a certification failure as ErrNotLocked when
// a lock one of the transaction's fenced writes needed is gone.
func (t *galeraTx) Commit() error {
	err := t.Tx.Commit()
	if err != nil {
		err = t.pool.p.commitConflict(t.pool.root, t.watch, err)
	}
	return err
}

// GetDBConn is gorm.GetDBConnector.
func (t *galeraTx) GetDBConn() (*sql.DB, error) { return t.pool.DB, nil }

// SQLPool is the database/sql transaction itself, for the plugin's
// prepared statements.
func (t *galeraTx) SQLPool() gorm.ConnPool { return t.Tx }

// watchCallerCommits puts galeraPool in place of db's pool on Galera,
// where that pool is database/sql's own.
func (p *Plugin) watchCallerCommits(db *gorm.DB, t lockStore) {
	pool, ok := db.Config.ConnPool.(*sql.DB)
	if !ok || !t.Store.Galera() {
		return
	}
	g := &galeraPool{DB: pool, p: p, root: db}
	db.Config.ConnPool = g
	if db.Statement.ConnPool == pool {
		db.Statement.ConnPool = g
	}
}

// commitWatchOf is the watch of the transaction db's statement runs in: the
// caller's Plugin.Transaction or Do, or a transaction galeraPool began.
func commitWatchOf(db *gorm.DB) *commitWatch {
	if w, _ := ctxOf(db).Value(commitWatchKey{}).(*commitWatch); w != nil {
		return w
	}
	if tx, ok := db.Statement.ConnPool.(*galeraTx); ok {
		return tx.watch
	}
	return nil
}
