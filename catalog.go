package offlinelock

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
)

// The catalog (internal/model's Spec, a row a lockable table, in
// <Config.Table>_tables) is read when the plugin is registered and again
// every catalogRefresh. A model is written to it when db.Use parses it
// (Config.Models), or else before the first statement or Acquire that
// locks it, so a lock on a table never exists before its catalog row. A
// node started later knows the table from the start; a node already
// running learns it at its next refresh, or at once when it lists the
// model in Config.Models.

// catalogRefresh is how often a node re-reads the catalog.
const catalogRefresh = 10 * time.Second

// loadCatalog learns the lockable tables other nodes wrote. A table whose
// Go model this node has parsed keeps that model.
func (p *Plugin) loadCatalog(db *gorm.DB) error {
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	specs, err := b.t.specs(direct(db))
	if err != nil {
		return err
	}
	b.catalogAt.Store(time.Now().UnixNano())
	// A failover or restart since the last refresh: move the generation
	// epoch to this server (PostgreSQL roles that cannot read the WAL
	// timeline; lockstore/generation_postgres.go).
	if k, ok := b.t.Store.(lockstore.EpochKeeper); ok {
		if err := k.KeepEpoch(direct(db)); err != nil {
			return err
		}
	}
	p.reg.Learn(specs)
	return nil
}

// rememberModel writes m to the catalog before the plugin first enforces
// it on this node, so that a lock on its table never exists before its
// catalog row: a node started later knows the table. It writes on the
// statement's own connection: a second one could wait forever for a pool
// the caller's transaction holds, or (SQLite) for its write lock. Inside a
// transaction the row commits with it, so it is written again next time
// until a statement outside a transaction has done it.
func (b *binding) rememberModel(db *gorm.DB, m *model.Model) error {
	h := b.here(m)
	version := m.Version.Load() + 1
	if m.Type == nil || !m.Lockable || h.saved.Load() == version {
		return nil
	}
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	c := direct(db).WithoutCancel()
	spec := b.p.reg.SpecOf(m)
	// What the table's guard covers may have grown (a join table, a
	// cascade learnt from another model): its next install plans it
	// again, and grants wait for that (internal/guard).
	defer b.guard.ForgetSoon(m.Table)
	if stored, err := b.t.specs(c); err == nil && slices.ContainsFunc(stored, spec.Same) {
		h.saved.Store(version) // committed already: no write, no row lock held in the caller's transaction
		return nil
	}
	if err := b.t.remember(c, []model.Spec{spec}); err != nil {
		return fmt.Errorf("offlinelock: writing %s to the catalog of lockable tables: %w", m.Table, err)
	}
	if !inTx {
		h.saved.Store(version)
	}
	return nil
}

// checkKeyColumns refuses a model whose key columns the store finds the
// lock table cannot spell as the database compares them.
func checkKeyColumns(db *gorm.DB, t lockStore, m *model.Model) error {
	kc := t.caps.KeyChecker
	if kc == nil || m == nil || !m.Lockable {
		return nil
	}
	return kc.CheckKeyColumns(direct(db).WithoutCancel(), m.KeyColumns())
}

// saveModels writes models to the catalog on a connection of its own.
func (b *binding) saveModels(db *gorm.DB, ms ...*model.Model) error {
	specs := make([]model.Spec, len(ms))
	versions := make([]uint64, len(ms))
	for i, m := range ms {
		versions[i] = m.Version.Load() + 1
		specs[i] = b.p.reg.SpecOf(m)
	}
	if err := b.t.remember(direct(b.p.background(db)), specs); err != nil {
		return err
	}
	for i, m := range ms {
		b.here(m).saved.Store(versions[i])
	}
	return nil
}

// background is a session on db's pool, outside any transaction of the
// caller's, that outlives the caller's context.
func (p *Plugin) background(db *gorm.DB) *gorm.DB {
	s := db.Session(&gorm.Session{NewDB: true, Context: context.Background()})
	s.Statement.ConnPool = db.Config.ConnPool
	return s
}

// remember writes specs to the catalog.
func (t *table) remember(c conn, specs []model.Spec) error {
	rows, err := model.Rows(specs)
	if err != nil {
		return err
	}
	return t.Remember(c, rows)
}

// specs reads the catalog.
func (t *table) specs(c conn) ([]model.Spec, error) {
	rows, err := t.Catalog(c)
	return model.Specs(rows), err
}
