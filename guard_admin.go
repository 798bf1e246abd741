package offlinelock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/guard"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// The guard's public methods, which `offlinelock guard` and deployments
// call: install, remove, status, the printed SQL and the privilege
// check. Each finds db's store and hands the catalog to internal/guard,
// which plans and asks the store; guard.go keeps when the plugin
// installs on its own.

// InstallGuard installs, or upgrades in place, the database guard on every
// lockable table of the catalog that exists. db.Use does it (unless
// Config.DisableGuard is set), and the plugin does it again before it
// first locks or writes a table that appeared later; call it after
// creating lockable tables outside GORM. Idempotent; safe from several
// nodes at once. SQLite has no guard: there it does nothing.
func (p *Plugin) InstallGuard(db *gorm.DB) error {
	db = onPrimary(db)
	t, g, err := p.guardStoreOf(db)
	if err != nil || g == nil {
		return err
	}
	// Installs started in the background (after DDL through GORM) end
	// first: one of them ending later would plan what it found before.
	ctx, cancel := context.WithTimeout(ctxOf(db), coverWait)
	p.guardOf(db).waitPending(ctx, !inTx(db))
	cancel()
	specs, err := t.specs(direct(p.background(db)))
	if err != nil {
		return err
	}
	p.forgetGuards(db)
	return p.ensureGuards(db, specs, false)
}

// RemoveGuard drops the database guard of this plugin's lock table from
// every table that carries it, and its routines. It checks first that this
// role may (CheckGuardPrivileges), and changes nothing when it may not. Writes from any client are
// then checked only where they pass through the plugin; db.Use, or the
// plugin's next lock of a table, installs it again unless
// Config.DisableGuard is set.
func (p *Plugin) RemoveGuard(db *gorm.DB) error {
	db = onPrimary(db)
	_, g, err := p.guardStoreOf(db)
	if err != nil || g == nil {
		return err
	}
	// Checked before the first DROP: MySQL's DDL commits as it goes, and
	// a removal stopped half-way would leave routines without triggers.
	if err := p.CheckGuardPrivileges(db, true); err != nil {
		return err
	}
	gs := p.guardOf(db)
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gs.routine, gs.tables = false, nil
	defer gs.changed()
	defer p.forgetModels(db) // the next statement on a table guards it again
	return g.RemoveGuard(direct(p.background(db)))
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
	t, g, err := p.guardStoreOf(db)
	if err != nil || g == nil {
		return nil, err
	}
	c := direct(p.background(db))
	specs, err := t.specs(c)
	if err != nil {
		return nil, err
	}
	states, err := guard.Status(c, g, guardTables(specs))
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
	_, g, err := p.guardStoreOf(db)
	if err != nil || g == nil {
		return nil, err
	}
	have, err := g.GuardedTables(direct(p.background(db)))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(have))
	for table := range have {
		out = append(out, table)
	}
	slices.Sort(out)
	return out, nil
}

// guardTables is what the guard needs of the catalog's rows.
func guardTables(specs []model.Spec) []guard.Table {
	out := make([]guard.Table, len(specs))
	for i, s := range specs {
		t := guard.Table{Name: s.Table}
		for _, k := range s.Key {
			t.Key = append(t.Key, guard.Column{Name: k.Name, Kind: k.Kind})
		}
		if s.Root != nil {
			t.Root = &guard.Root{Table: s.Root.Table, Column: s.Root.Column}
		}
		for _, l := range s.Links {
			t.Links = append(t.Links, guard.Link{Join: l.Name, Column: l.Column, Key: l.Key})
		}
		out[i] = t
	}
	return out
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
	unfollowed, err := guard.SQL(c, t.caps.Guard, func() ([]guard.Table, error) {
		if !existed { // no catalog yet: no table declared
			return nil, nil
		}
		specs, err := t.specs(c)
		return guardTables(specs), err
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
		rec := &sqlRecorder{}
		dry := s.Session(&gorm.Session{DryRun: true, Logger: rec})
		if err := dry.Table(f.name).Migrator().CreateTable(f.model); err != nil {
			return nil, fmt.Errorf("offlinelock: writing the DDL of the table %s: %w", f.name, err)
		}
		out = append(out, rec.stmts...)
	}
	return out, nil
}

// sqlRecorder is a GORM logger that keeps the statements it is told of
// (a dry run's, which GORM traces without sending them).
type sqlRecorder struct{ stmts []string }

func (r *sqlRecorder) LogMode(logger.LogLevel) logger.Interface      { return r }
func (r *sqlRecorder) Info(context.Context, string, ...interface{})  {}
func (r *sqlRecorder) Warn(context.Context, string, ...interface{})  {}
func (r *sqlRecorder) Error(context.Context, string, ...interface{}) {}
func (r *sqlRecorder) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	if q, _ := fc(); q != "" {
		r.stmts = append(r.stmts, q)
	}
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
	t, g, err := p.guardStoreOf(db)
	if err != nil || g == nil {
		return err
	}
	c := direct(p.background(db).WithContext(ctxOf(db)))
	var specs []model.Spec
	if !remove && db.Session(&gorm.Session{NewDB: true}).Migrator().HasTable(p.cfg.Table) {
		if specs, err = t.specs(c); err != nil {
			return err
		}
	}
	missing, err := guard.Missing(c, g, guardTables(specs), remove)
	if err != nil || len(missing) == 0 {
		return err
	}
	verb := map[bool]string{false: "install", true: "remove"}[remove]
	return fmt.Errorf("%w: this role may not %s the database guard of lock table %s, and nothing was changed: it lacks %s",
		ErrGuardPrivileges, verb, p.cfg.Table, strings.Join(missing, "; "))
}
