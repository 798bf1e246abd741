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

// The database guard (docs/guard.md): triggers that refuse, whoever
// sends it, a write of a record another session holds; no lock is
// granted where they do not cover the record's tables. internal/guard
// keeps it, a Keeper per database (binding.guard): this file is the
// public API over it, and what the Keeper asks of the plugin (guardHost).

// DefaultGuardCheckEvery is how often, by default, the plugin reads again
// from the database whether the guard covers every lockable table.
const DefaultGuardCheckEvery = 30 * time.Second

// ErrUnguarded reports a lock refused because the database guard does not
// cover every table that can hold a row of the record (docs/guard.md, "No
// guard, no grant"): a table without the guard's triggers, with one
// disabled or replaced, or one whose foreign-key actions the guard cannot
// follow. Nothing was written to the lock table. The message names the
// table, what is missing and the command that fixes it; errors.Is(err,
// ErrUnenforceable) is true as well. Plugin.UnguardedTables lists such
// tables without a grant being tried.
var ErrUnguarded = guard.ErrUnguarded

// UnguardedTable is a table that can hold rows of lockable records and
// that the database guard does not cover (Plugin.UnguardedTables).
type UnguardedTable struct {
	// Table is the table's name, lower case.
	Table string
	// Resources are the lock resources (root tables) whose records the
	// table can hold: their grants are refused.
	Resources []string
	// State is what is missing: "dropped" (no trigger of the guard, or
	// one of its triggers, routines or views is missing), "disabled"
	// (a trigger is disabled), "replaced" (a trigger or routine differs
	// from what this version installs), "unknown" (its guard could not be
	// read in time: Reason says why), "unguardable" (the guard cannot
	// follow the table: Reason says why and what to change), or "newer"
	// (a newer offlinelock installed the guard: upgrade this node).
	State string
	// Reason says it for people.
	Reason string
}

// InstallGuard installs, or upgrades in place, the database guard on every
// lockable table of the catalog that exists. db.Use does it (unless
// Config.DisableGuard is set), and the plugin does it again before it
// first locks or writes a table that appeared later; call it after
// creating lockable tables outside GORM. Idempotent; safe from several
// nodes at once. SQLite has no guard: there it does nothing.
func (p *Plugin) InstallGuard(db *gorm.DB) error {
	db = onPrimary(db)
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	return b.guard.Install(db)
}

// RemoveGuard drops the database guard of this plugin's lock table from
// every table that carries it, and its routines. It checks first that this
// role may (CheckGuardPrivileges), and changes nothing when it may not. Writes from any client are
// then checked only where they pass through the plugin; db.Use, or the
// plugin's next lock of a table, installs it again unless
// Config.DisableGuard is set.
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
	// State is "ok" (in place as this version installs it), "dropped" (a
	// trigger or routine is missing), "disabled" (a trigger is disabled),
	// "replaced" (a routine or trigger differs from what this version
	// installs), "hidden" (this role may not read the definitions), or
	// "unguardable" (the guard cannot follow the table: Reason says why
	// and what to change in the schema). InstallGuard, or the next
	// db.Use, repairs "dropped", "disabled" and "replaced".
	State string
	// Reason says, for "unguardable", why.
	Reason string
}

// GuardStatus reports, for every lockable table of the catalog that
// exists (and its join tables, and MySQL's cascade parents), whether its
// guard is in place, read from the definitions in the database: a trigger
// disabled or dropped, or a routine replaced (docs/boundary.md). SQLite
// has no guard: nil.
func (p *Plugin) GuardStatus(db *gorm.DB) ([]GuardState, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil || t.caps.Guard == nil {
		return nil, err
	}
	c := direct(p.background(db))
	specs, err := t.specs(c)
	if err != nil {
		return nil, err
	}
	states, err := guard.Status(c, t.caps.Guard, specs)
	if err != nil {
		return nil, err
	}
	out := make([]GuardState, len(states))
	for i, st := range states {
		out[i] = GuardState{Table: st.Table, State: st.State, Reason: st.Reason}
	}
	return out, nil
}

// DeclaredTables lists, in order, the lockable tables the catalog
// declares (lower case): those whose models an application registered
// (Config.Models) or used on this lock table's database, whether or not
// they exist. The guard covers their tables; an empty list means no
// application has declared any yet.
func (p *Plugin) DeclaredTables(db *gorm.DB) ([]string, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return nil, err
	}
	specs, err := t.specs(direct(p.background(db)))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		if s.Table != "" {
			out = append(out, strings.ToLower(s.Table))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// GuardedTables lists, in order, the tables that carry this plugin's
// database guard, as the database reports them (lower case).
func (p *Plugin) GuardedTables(db *gorm.DB) ([]string, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil || t.caps.Guard == nil {
		return nil, err
	}
	return guard.Guarded(direct(p.background(db)), t.caps.Guard)
}

// UnguardedTables lists, read from the database now, the tables that can
// hold rows of lockable records and that the database guard does not
// cover (docs/guard.md): grants of their records are refused
// (ErrUnguarded) until `offlinelock guard install` or InstallGuard covers
// them. Empty when every table is covered, and on SQLite and with
// Config.DisableGuard, where grants do not depend on the guard. A
// readiness check can call it; the gauge offlinelock.guard.unguarded
// reports the same between calls.
func (p *Plugin) UnguardedTables(db *gorm.DB) ([]UnguardedTable, error) {
	db = onPrimary(db)
	b, err := p.bindingOf(db)
	if err != nil {
		return nil, err
	}
	gaps, err := b.guard.Unguarded(db)
	if err != nil || gaps == nil {
		return nil, err
	}
	out := make([]UnguardedTable, len(gaps))
	for i, g := range gaps {
		out[i] = UnguardedTable(g)
	}
	return out, nil
}

// GuardSQL returns the statements that `offlinelock guard install` (the
// lock table's Migrate, CreateFeatureTables and InstallGuard) would run
// on db now, in order, without running any: for shops whose DBAs run
// migrations (`offlinelock guard install --print-sql`). It reads the
// database (the catalog, what is in place) and changes nothing. Run the
// statements as the tables' owner, in one transaction on PostgreSQL; on
// MySQL/MariaDB they carry routine bodies with semicolons, so run each as
// one statement (the command's output sets a DELIMITER).
//
// Where the lock table does not exist yet there is no catalog, so no
// table is declared: the statements make the lock table, its catalog and
// the feature tables; run GuardSQL again once the application has
// declared its tables. A declared table the guard cannot follow is
// reported as InstallGuard reports it, with the statements of the others.
// The statements carry the guard's key (MySQL/MariaDB's routines carry it
// in their bodies): keep them as private as the lock table. SQLite has no
// guard: nil.
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

// featureSQL is the DDL of the feature tables that are missing, as GORM
// would send it (a dry run of its migrator, whose statements a logger
// collects).
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

// CheckGuardPrivileges reports the privileges this role lacks to install
// the database guard on every table the catalog declares (or, with remove,
// to remove it from every table that carries it), read from the database
// before anything is changed: an error naming each privilege, its object
// and the grant that gives it, or nil when the role has them all.
// RemoveGuard runs it first, and so does `offlinelock guard install`
// where there is something to install, so that neither stops half-way
// (MySQL's DDL commits statement by statement). SQLite has no guard: nil.
func (p *Plugin) CheckGuardPrivileges(db *gorm.DB, remove bool) error {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil || t.caps.Guard == nil {
		return err
	}
	c := direct(p.background(db).WithContext(ctxOf(db)))
	var specs []model.Spec
	if !remove && db.Session(&gorm.Session{NewDB: true}).Migrator().HasTable(p.cfg.Table) {
		if specs, err = t.specs(c); err != nil {
			return err
		}
	}
	missing, err := guard.Missing(c, t.caps.Guard, specs, remove)
	if err != nil || len(missing) == 0 {
		return err
	}
	verb := map[bool]string{false: "install", true: "remove"}[remove]
	return fmt.Errorf("%w: this role may not %s the database guard of lock table %s, and nothing was changed: it lacks %s",
		ErrGuardPrivileges, verb, p.cfg.Table, strings.Join(missing, "; "))
}

// checkGuarded refuses a grant on resource when the guard does not cover
// every table that can hold a row of its records (guard.Keeper.Check).
func (p *Plugin) checkGuarded(db *gorm.DB, resource string) error {
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	return b.guard.Check(db, resource)
}

// lockedByGuard turns the guard's refusal in db.Error into the
// *LockedError a plugin caller expects, naming the holders as the lock
// table has them now.
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
