package offlinelock

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offlinelock/offlinelock/internal/guard"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/watch"
	"gorm.io/gorm"
)

// binding is the plugin on one database. It is made when the plugin is
// registered there (db.Use), or by the first call that names a database
// it was not registered on (Migrate, InstallGuard, the command), and lives
// as long as the Plugin: one Plugin serves any number of databases, each
// with its own store, guard and catalog state. The dialect is decided
// once, here; the callbacks are its methods (callbacks.go), so a statement
// finds its store, its guard's state and what was done for its model
// without a lookup.
type binding struct {
	p     *Plugin
	t     lockStore    // the lock table on this database
	guard guard.Keeper // the guard here: which tables carry it, what grants read (guard.go)

	epoch     atomic.Uint64 // advanced when the guard's state is forgotten: every model is prepared again
	models    sync.Map      // *model.Model → *modelHere
	changes   atomic.Uint64 // the registry's changes (model.Registry's Changes) this binding has written
	catalogAt atomic.Int64  // when this database's catalog was last read, in Unix nanoseconds

	watch *watch.Hub // this node's watches, views and notes here (watch.go)
}

// modelHere is what a binding has done for one model on its database.
type modelHere struct {
	saved atomic.Uint64 // 1 + the model's spec version written to this catalog; 0 for none
	ready atomic.Uint64 // 1 + the binding's epoch at which the model was prepared
}

// initFailed is the error of a failed Initialize, or nil.
func (p *Plugin) initFailed() error {
	if e := p.initErr.Load(); e != nil {
		return *e
	}
	return nil
}

// bindingOf is the plugin on db's database, made on first use.
func (p *Plugin) bindingOf(db *gorm.DB) (*binding, error) {
	if p.err != nil {
		return nil, p.err
	}
	if err := p.initFailed(); err != nil {
		return nil, err
	}
	if db == nil || db.Dialector == nil || db.Config == nil {
		return nil, invalid("db is nil or not opened")
	}
	k := databaseOf(db)
	if b, ok := p.bindings.Load(k); ok {
		return b.(*binding), nil
	}
	b, err := p.newBinding(db.Dialector.Name())
	if err != nil {
		return nil, err
	}
	v, _ := p.bindings.LoadOrStore(k, b)
	return v.(*binding), nil
}

// storeFor is the lock table of db's database.
func (p *Plugin) storeFor(db *gorm.DB) (lockStore, error) {
	b, err := p.bindingOf(db)
	if err != nil {
		return nil, err
	}
	return b.t, nil
}

// newBinding decides the dialect: the one place that switches on it for
// the lock table.
func (p *Plugin) newBinding(dialect string) (*binding, error) {
	b := &binding{p: p}
	lockTable, seq, catalog := `"`+p.cfg.Table+`"`, `"`+p.cfg.Table+`_generation"`, `"`+p.cfg.Table+`_tables"`
	var s func(lockstore.Observer) lockstore.Store
	switch dialect {
	case "postgres":
		s = func(obs lockstore.Observer) lockstore.Store {
			return lockstore.NewPostgres(lockTable, seq, catalog, obs)
		}
	case "sqlite", "sqlite3":
		s = func(obs lockstore.Observer) lockstore.Store { return lockstore.NewSQLite(lockTable, seq, catalog, obs) }
	case "mysql": // gorm.io/driver/mysql, for MySQL and MariaDB alike
		s = func(obs lockstore.Observer) lockstore.Store { return lockstore.NewMySQL(p.cfg.Table, obs) }
	default:
		return nil, fmt.Errorf("offlinelock: database %q is not supported (PostgreSQL, MySQL, MariaDB and SQLite are)", dialect)
	}
	obs := p.tel.Observer(dialect)
	st := s(obs)
	b.t = &table{Store: st, caps: st.Traits(), obs: obs}
	every := p.cfg.GuardCheckEvery
	if every <= 0 {
		every = DefaultGuardCheckEvery
	}
	b.guard.Init(guard.Config{Guard: b.t.caps.Guard, Off: p.cfg.DisableGuard, Leave: p.cfg.LeaveGuard, RecordOnly: p.cfg.GuardNamesRecordOnly,
		CheckEvery: every, LockTable: p.cfg.Table, Logger: p.cfg.Logger, Unenforceable: ErrUnenforceable, Models: p.reg, Host: (*guardHost)(b)})
	b.watch = p.newHub(b)
	return b, nil
}

// here is what b has done for m.
func (b *binding) here(m *model.Model) *modelHere {
	if h, ok := b.models.Load(m); ok {
		return h.(*modelHere)
	}
	h, _ := b.models.LoadOrStore(m, &modelHere{})
	return h.(*modelHere)
}

// prepare puts in place, once per model on this database, what a
// statement on m needs first: its key columns checked against the lock
// table, its catalog row written, its table guarded. Until all of that has
// held once (a catalog row written in a caller's SQLite transaction, a
// guard installed in the background, do not count) every statement tries
// again; after it, a statement pays one map read. Forgetting the guard's
// state (DDL through GORM, InstallGuard) prepares every model again.
func (b *binding) prepare(db *gorm.DB, m *model.Model) error {
	epoch := b.epoch.Load() + 1
	if v, ok := b.models.Load(m); ok { // the common case, in one map read
		if h := v.(*modelHere); h.ready.Load() == epoch && h.saved.Load() == m.Version.Load()+1 {
			return nil
		}
	}
	h := b.here(m)
	if err := checkKeyColumns(db, b.t, m); err != nil {
		return err
	}
	if err := b.rememberModel(db, m); err != nil {
		return err
	}
	if b.guard.Lazily(db, m) && h.saved.Load() == m.Version.Load()+1 {
		h.ready.Store(epoch)
	}
	return nil
}

// freshCatalog writes again the catalog rows of models whose row grew, and
// starts a background reload of the catalog when it is older than
// catalogRefresh.
func (b *binding) freshCatalog(db *gorm.DB) {
	if n := b.p.reg.Changes.Load(); n != b.changes.Load() && !db.DryRun {
		written := true
		b.models.Range(func(k, v any) bool {
			m, h := k.(*model.Model), v.(*modelHere)
			if s := h.saved.Load(); s != 0 && s != m.Version.Load()+1 {
				// not written (or inside a SQLite transaction): next time
				written = b.rememberModel(db, m) == nil && h.saved.Load() == m.Version.Load()+1 && written
			}
			return true
		})
		if written {
			b.changes.CompareAndSwap(b.changes.Load(), n)
		}
	}
	at := b.catalogAt.Load()
	if time.Since(time.Unix(0, at)) < catalogRefresh || !b.catalogAt.CompareAndSwap(at, time.Now().UnixNano()) {
		return
	}
	go b.p.loadCatalog(b.p.background(db))
}

// learn prepares m for a statement the plugin lets through without
// enforcing it (a load that takes no lock, a bypassed statement), where
// a guard governs grants: its catalog row is written and its table
// guarded before any of its rows can be held (docs/guard.md). A failure
// is the next statement's to retry: this one goes on, and grants of its
// records are refused until the guard covers its table.
//
// A read inside a caller's transaction does not: a failed catalog write
// there would abort a read-only transaction (PostgreSQL), and a
// connection of its own could wait for the pool the transaction holds.
// The model is learnt by its next statement outside one (or by a write),
// and its grants are refused until its table is covered. A write in a
// transaction (GORM's own, around a Create, included) writes the
// catalog row, which commits with it, and installs nothing: an install
// beside the transaction would wait for the table it writes. The
// table's next statement outside a transaction, or its first grant,
// installs the guard.
func (b *binding) learn(db *gorm.DB, m *model.Model, write bool) {
	if !b.guard.Governs() {
		return
	}
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx {
		if write {
			_ = b.rememberModel(db, m)
		}
		return
	}
	_ = b.prepare(db, m)
}

// databaseOf names db's database for the plugin's per-database state: its
// *sql.DB, under GORM's prepared-statement wrapper, or the connection pool
// gorm.Open was given. Not db.Config: every Session copies it.
func databaseOf(db *gorm.DB) any {
	pool := db.Config.ConnPool
	if c, ok := pool.(gorm.GetDBConnector); ok {
		if sqlDB, err := c.GetDBConn(); err == nil && sqlDB != nil {
			return sqlDB
		}
	}
	return pool
}

// forget makes every model be prepared again.
func (b *binding) forget() { b.epoch.Add(1) }
