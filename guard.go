package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/guard"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/telemetry"
	"gorm.io/gorm"
)

// The database guard (docs/guard.md) is internal/guard's, a Keeper per
// database (binding.guard): here its public methods, and guardHost.

// DefaultGuardCheckEvery is how often, by default, the plugin reads again
// from the database whether the guard covers every lockable table.
const DefaultGuardCheckEvery = 30 * time.Second

// ErrUnguarded reports a lock refused, nothing written, because the
// database guard does not cover a table that can hold a row of the
// record (docs/guard.md, "No guard, no grant"); errors.Is(err,
// ErrUnenforceable) holds too. The message names the table and the fix.
var ErrUnguarded = guard.ErrUnguarded

// UnguardedTable is a table that can hold rows of lockable records and
// that the database guard does not cover (Plugin.UnguardedTables).
type UnguardedTable struct {
	// Table is the table's name, lower case.
	Table string
	// Resources are the lock resources (root tables) whose records the
	// table can hold: their grants are refused.
	Resources []string
	// State is what is missing: "dropped", "disabled", "replaced" (as in
	// GuardState), "unknown" (not read in time), "unguardable" (Reason
	// says why) or "newer" (a newer offlinelock installed it).
	State string
	// Reason says it for people.
	Reason string
}

// InstallGuard installs, or upgrades in place, the database guard on every
// lockable table of the catalog that exists, as db.Use does; call it after
// creating lockable tables outside GORM. Idempotent, safe from several
// nodes at once; nothing on SQLite.
func (p *Plugin) InstallGuard(db *gorm.DB) error {
	db = onPrimary(db)
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	return b.guard.Install(db)
}

// RemoveGuard drops the database guard of this plugin's lock table, its
// triggers and routines, after CheckGuardPrivileges (nothing changed
// without them). db.Use, or the next lock of a table, installs it again
// unless Config.DisableGuard is set.
func (p *Plugin) RemoveGuard(db *gorm.DB) error {
	db = onPrimary(db)
	b, err := p.bindingOf(db)
	if err != nil || b.t.caps.Guard == nil {
		return err
	}
	// Checked before the first DROP: MySQL's DDL commits as it goes, and
	// a removal stopped half-way would leave routines without triggers.
	if err := p.CheckGuardPrivileges(db, true); err != nil {
		return err
	}
	return b.guard.Remove(db)
}

// GuardState is what GuardStatus reports of one guarded table.
type GuardState struct {
	Table string
	// State is "ok", "dropped" (a trigger or routine missing), "disabled",
	// "replaced" (differs from what this version installs), "hidden"
	// (this role may not read it) or "unguardable" (Reason says why).
	// InstallGuard repairs the first three.
	State string
	// Reason says, for "unguardable", why.
	Reason string
}

// GuardStatus reports, for every lockable table of the catalog that
// exists (and its join tables and MySQL's cascade parents), whether its
// guard is in place, read from the database (docs/boundary.md). SQLite:
// nil.
func (p *Plugin) GuardStatus(db *gorm.DB) ([]GuardState, error) {
	states, err := guardRead(p, db, (*guard.Keeper).States)
	if err != nil || states == nil {
		return nil, err
	}
	out := make([]GuardState, len(states))
	for i, st := range states {
		out[i] = GuardState(st)
	}
	return out, nil
}

// DeclaredTables lists, in order and lower case, the lockable tables the
// catalog declares (registered or used on this database), existing or
// not: the tables the guard covers.
func (p *Plugin) DeclaredTables(db *gorm.DB) ([]string, error) {
	return guardRead(p, db, (*guard.Keeper).Declared)
}

// GuardedTables lists, in order, the tables that carry this plugin's
// database guard, as the database reports them (lower case).
func (p *Plugin) GuardedTables(db *gorm.DB) ([]string, error) {
	return guardRead(p, db, (*guard.Keeper).GuardedTables)
}

// UnguardedTables lists, read now, the tables that can hold rows of
// lockable records and that the guard does not cover: their grants are
// refused (ErrUnguarded). Empty when all are covered, on SQLite and with
// Config.DisableGuard. For readiness checks (docs/guard.md).
func (p *Plugin) UnguardedTables(db *gorm.DB) ([]UnguardedTable, error) {
	gaps, err := guardRead(p, db, (*guard.Keeper).Unguarded)
	if err != nil || gaps == nil {
		return nil, err
	}
	out := make([]UnguardedTable, len(gaps))
	for i, g := range gaps {
		out[i] = UnguardedTable(g)
	}
	return out, nil
}

// guardRead runs read on the Keeper of db's primary.
func guardRead[T any](p *Plugin, db *gorm.DB, read func(*guard.Keeper, *gorm.DB) ([]T, error)) ([]T, error) {
	db = onPrimary(db)
	b, err := p.bindingOf(db)
	if err != nil {
		return nil, err
	}
	return read(&b.guard, db)
}

// GuardSQL returns, without running any, the statements `offlinelock
// guard install` would run on db now (--print-sql; docs/guard.md, "Shops
// whose DBAs run migrations"): the lock table's, the feature tables', the
// guard's. They carry the guard's key: keep them private. SQLite: nil.
func (p *Plugin) GuardSQL(db *gorm.DB) ([]string, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil || t.caps.Guard == nil {
		return nil, err // SQLite has no guard, and db.Use makes its lock table
	}
	existed := db.Session(&gorm.Session{NewDB: true}).Migrator().HasTable(p.cfg.Table)
	plan := lockstore.NewPlan(!existed)
	c := direct(p.background(db).WithContext(ctxOf(db))).Planning(plan)
	if err := t.Migrate(c); err != nil {
		return nil, err
	}
	features, err := p.featureSQL(db)
	if err != nil {
		return nil, err
	}
	out := append(plan.Statements(), features...)
	if p.cfg.DisableGuard {
		return out, nil
	}
	before := len(plan.Statements())
	unfollowed, err := guard.SQL(c, t.caps.Guard, func() ([]model.Spec, error) {
		if !existed { // no catalog yet: no table declared
			return nil, nil
		}
		return t.specs(c)
	})
	if err != nil {
		return nil, err
	}
	return append(out, plan.Statements()[before:]...), unfollowed
}

// featureSQL is the DDL GORM would send for the missing feature tables.
func (p *Plugin) featureSQL(db *gorm.DB) ([]string, error) {
	s := p.background(db).WithContext(ctxOf(db))
	var out []string
	for _, f := range featureTables(p.cfg.Table) {
		if s.Migrator().HasTable(f.name) {
			continue
		}
		stmts, err := guard.CreateSQL(s, f.name, f.model)
		if err != nil {
			return nil, err
		}
		out = append(out, stmts...)
	}
	return out, nil
}

// CheckGuardPrivileges reports, as ErrGuardPrivileges naming each grant,
// the privileges this role lacks to install the database guard (or, with
// remove, to remove it), before anything changes; nil on SQLite.
func (p *Plugin) CheckGuardPrivileges(db *gorm.DB, remove bool) error {
	missing, err := guardRead(p, db, func(k *guard.Keeper, db *gorm.DB) ([]string, error) { return k.Lacks(db, remove) })
	if err != nil || len(missing) == 0 {
		return err
	}
	verb := map[bool]string{false: "install", true: "remove"}[remove]
	return fmt.Errorf("%w: this role may not %s the database guard of lock table %s, and nothing was changed: it lacks %s",
		ErrGuardPrivileges, verb, p.cfg.Table, strings.Join(missing, "; "))
}

// checkGuarded is guard.Keeper.Check: no guard, no grant.
func (p *Plugin) checkGuarded(db *gorm.DB, resource string) error {
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	return b.guard.Check(db, resource)
}

// lockedByGuard turns the guard's refusal in db.Error into a *LockedError
// naming the holders the lock table has now.
func (p *Plugin) lockedByGuard(db *gorm.DB) {
	var le *LockedError
	if db.Error == nil || errors.As(db.Error, &le) {
		return
	}
	b, err := p.bindingOf(db)
	if err != nil {
		return
	}
	r, ok := b.guard.Refused(db)
	if !ok {
		return
	}
	out := &LockedError{Resource: r.Resource, ID: r.ID, Wanted: Write}
	if r.ID != "" {
		o, _ := OwnerFrom(db.Statement.Context)
		if locks, err := b.t.list(direct(p.background(db)), Filter{Resource: r.Resource, ID: r.ID}); err == nil {
			for _, l := range locks {
				if l.Owner.Session != o.Session || o.Session == "" {
					out.Holders = append(out.Holders, l)
				}
			}
		}
	}
	p.tel.Refused(ctxOf(db), db, telemetry.Implicit, string(Write), r.Resource, out)
	db.Error = out
}

// guardHost is a binding as its guard's Keeper sees it (guard.Host).
type guardHost binding

// Background is p.background.
func (h *guardHost) Background(db *gorm.DB) *gorm.DB { return h.p.background(db) }

// Conn is direct.
func (h *guardHost) Conn(db *gorm.DB) conn { return direct(db) }

// Catalog reads the catalog on db.
func (h *guardHost) Catalog(db *gorm.DB) ([]model.Spec, error) { return h.t.specs(direct(db)) }

// Remember is rememberModel.
func (h *guardHost) Remember(db *gorm.DB, m *model.Model) error {
	return (*binding)(h).rememberModel(db, m)
}

// Forget is binding.forget.
func (h *guardHost) Forget() { (*binding)(h).forget() }

// The catalog of lockable tables (<Config.Table>_tables): a model's row is
// written before any lock on its table; nodes read it at start and every
// catalogRefresh (docs/architecture.md).

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
	// After a failover, the generation epoch moves to this server
	// (lockstore/generation_postgres.go).
	if k, ok := b.t.Store.(lockstore.EpochKeeper); ok {
		if err := k.KeepEpoch(direct(db)); err != nil {
			return err
		}
	}
	p.reg.Learn(specs)
	return nil
}

// rememberModel writes m to the catalog before the plugin first enforces
// it. On the statement's own connection: a second could wait forever for
// a pool the caller's transaction holds (SQLite: its write lock). Inside a
// transaction it is written again until one outside has done it.
func (b *binding) rememberModel(db *gorm.DB, m *model.Model) error {
	h := b.here(m)
	version := m.Version.Load() + 1
	if m.Type == nil || !m.Lockable || h.saved.Load() == version {
		return nil
	}
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	c := direct(db).WithoutCancel()
	spec := b.p.reg.SpecOf(m)
	// What the table's guard covers may have grown: planned again.
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
