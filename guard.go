package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"
)

// The database guard (docs/guard.md): on PostgreSQL and MySQL/MariaDB
// every lockable table carries triggers, installed with the lock table,
// that refuse an INSERT, UPDATE or DELETE changing a row whose record
// another session holds, whoever sends it. The plugin's reading of a
// statement stays the first check (before hooks, with the plugin's own
// errors); the guard is the last word, where the statement lands.
//
// The guard is generated from the catalog (catalog.go): a table's spec says
// how a row spells its record's lock_id (its key, or its root's through
// the member chain, or each lockable side of a join row), so the guard and
// the plugin spell keys alike. The shared check of one record lives in one
// routine per lock table; the per-table triggers only spell keys.

// guardWait bounds how long a statement outside a transaction waits for
// its table's guard being installed in the background.
const guardWait = 250 * time.Millisecond

// guardState is what a Plugin knows of the guard on one database.
type guardState struct {
	mu       sync.Mutex
	routine  bool                     // the shared routine is installed, this process
	tables   map[string]string        // table (lower case) → the version installed
	pending  map[string]chan struct{} // tables being guarded in the background: closed when done
	busy     map[string]time.Time     // tables whose install timed out waiting for a lock → until when statements leave them alone
	guardKey atomic.Pointer[string]   // the guard's key on MySQL/MariaDB, which the identity's mark is keyed with (loadGuardKey)

	// What grants read (coverage.go): advanced with every change of
	// tables, so that the next grant shows the guard's coverage again.
	gen        atomic.Uint64
	cover      atomic.Pointer[coverage] // the last coverage shown, as of gen
	coverMu    sync.Mutex               // one coverage computed at a time
	refreshing atomic.Bool              // a periodic check is under way
	repairAt   atomic.Int64             // when a grant last tried to repair, in Unix nanoseconds (repairFor)
}

// changed makes the next grant show the guard's coverage again: call it
// with every change of tables.
func (gs *guardState) changed() { gs.gen.Add(1) }

// forgetSoon makes table be guarded again by its next install, where
// that does not wait for an install under way (which holds mu while it
// waits for a connection the caller's transaction may hold), and the
// next grant show the coverage again (which repairs what is missing).
func (gs *guardState) forgetSoon(table string) {
	if gs.mu.TryLock() {
		delete(gs.tables, strings.ToLower(table))
		gs.mu.Unlock()
	}
	gs.changed()
}

// key is the guard's key, or "" while it is not known (no guard: a mark
// no guard reads).
func (gs *guardState) key() string {
	if k := gs.guardKey.Load(); k != nil {
		return *k
	}
	return ""
}

// loadGuardKey reads the guard's key of db's database, for the identity's
// mark on MySQL/MariaDB (PostgreSQL signs in the database itself).
func (p *Plugin) loadGuardKey(db *gorm.DB, c conn) error {
	if db.Dialector.Name() != "mysql" || p.cfg.DisableGuard {
		return nil
	}
	t, err := p.storeFor(db)
	if err != nil || t.caps.Guard == nil {
		return err
	}
	key, err := t.caps.Guard.GuardKey(c)
	if err != nil && !tableGone(err) {
		return fmt.Errorf("offlinelock: reading the guard's key: %w%s", err, lockstore.OwnerHint(err))
	}
	p.guardOf(db).guardKey.Store(&key)
	return nil
}

// guardOn reports whether db's database is guarded: the store can, and
// Config.DisableGuard is off.
func (p *Plugin) guardOn(t lockStore) (lockstore.Guard, bool) {
	if p.cfg.DisableGuard {
		return nil, false
	}
	return t.caps.Guard, t.caps.Guard != nil
}

// guardStoreOf is db's lock store as a guard, or nil (SQLite has none).
func (p *Plugin) guardStoreOf(db *gorm.DB) (lockStore, lockstore.Guard, error) {
	t, err := p.storeFor(db)
	if err != nil {
		return nil, nil, err
	}
	return t, t.caps.Guard, nil
}

// ensureGuards installs or upgrades the guard of every lockable table in
// specs (all the catalog's) that exists, on a connection of its own.
//
// With skipBusy (an install on a statement's way), a table whose install
// timed out waiting for a lock in the last guardBusyFor is left to the
// background retry (retryGuard) and the periodic check: each statement
// would otherwise wait the install's lock timeout for it again.
func (p *Plugin) ensureGuards(db *gorm.DB, specs []tableSpec, skipBusy bool) error {
	_, g, err := p.guardStoreOf(db)
	if err != nil || g == nil {
		return err
	}
	c := direct(p.background(db).WithContext(ctxOf(db))) // a deadline of db's bounds the install
	gs := p.guardOf(db)
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.tables == nil {
		gs.tables = map[string]string{}
	}
	if !gs.routine {
		if err := g.InstallGuardRoutine(c); errors.Is(err, lockstore.ErrGrantExecute) {
			return err // in place: the grant it names is the way out, not an install
		} else if err != nil {
			return guardInstallError("the guard routine", err)
		}
		if err := p.loadGuardKey(db, c); err != nil {
			return err
		}
		gs.routine = true
	}
	defer gs.changed()
	// A table the guard cannot follow (planFailure) is left unguarded, and
	// its records' grants refused (coverage.go); every other table is
	// guarded all the same, and the first failure is returned.
	fails := map[string]planFailure{}
	plans, err := guardPlans(c, g, specs, fails)
	if err != nil {
		return err
	}
	var first error
	for _, table := range slices.Sorted(maps.Keys(fails)) {
		if first == nil {
			first = fails[table].err
		}
	}
	for _, plan := range plans {
		if m := p.reg.tableModel(plan.Inherits); plan.Inherits != "" && m != nil {
			p.reg.storeAlias(plan.Table, m) // a partition's name is its table's, to the plugin too (Strict, Table("…"))
		}
		if v, ok := gs.tables[strings.ToLower(plan.Table)]; ok && v == plan.Version {
			continue
		}
		if until, ok := gs.busy[strings.ToLower(plan.Table)]; skipBusy && ok && time.Now().Before(until) {
			continue
		}
		if err := g.GuardTable(c, plan); tableGone(err) {
			continue // dropped since the plan was made: nothing to guard
		} else if lockstore.IsLockTimeout(err) {
			// The table is in use: the others likely are too, and each
			// would wait as long. Tried again later (retryGuard, the
			// tables' next statements after guardBusyFor); their grants
			// are refused meanwhile.
			if gs.busy == nil {
				gs.busy = map[string]time.Time{}
			}
			gs.busy[strings.ToLower(plan.Table)] = time.Now().Add(guardBusyFor)
			return guardInstallError("table "+plan.Table, err)
		} else if err != nil {
			if first == nil {
				first = guardInstallError("table "+plan.Table, err)
			}
			continue
		}
		gs.tables[strings.ToLower(plan.Table)] = plan.Version
		delete(gs.busy, strings.ToLower(plan.Table))
	}
	return first
}

// guardBusyFor is how long installs on statements' ways leave a table
// alone after one timed out waiting for it.
const guardBusyFor = 10 * time.Second

// routineInPlace says whether this process found or installed the
// guard's shared routine.
func (gs *guardState) routineInPlace() bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return gs.routine
}

// busyTable says whether an install timed out waiting for table in the
// last guardBusyFor.
func (gs *guardState) busyTable(table string) bool {
	if !gs.mu.TryLock() {
		return false // an install under way: it knows better soon
	}
	defer gs.mu.Unlock()
	until, ok := gs.busy[strings.ToLower(table)]
	return ok && time.Now().Before(until)
}

// tableGone: err says the table does not exist (PostgreSQL 42P01, MySQL
// 1146).
func tableGone(err error) bool {
	return lockstore.IsMissingTable(err)
}

// startGuard is db.Use's part of the guard: install it (the default),
// leave it as it is (LeaveGuard), or, with DisableGuard, make sure none of
// this lock table's is installed.
func (p *Plugin) startGuard(db *gorm.DB) error {
	switch {
	case p.cfg.LeaveGuard:
		return nil
	case !p.cfg.DisableGuard:
		err := p.InstallGuard(db)
		if err == nil {
			err = p.setRefusal(db)
		}
		if errors.Is(err, ErrGuardProtocol) {
			// A newer node installed the guard: this one serves its
			// statements, grants nothing (coverage.go: "newer"), and
			// leaves the guard alone.
			p.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: the database guard was installed by a newer offlinelock; this node grants no lock until it is upgraded", "error", err)
			return nil
		}
		if err != nil && lockstore.Denied(err) && p.guardOf(db).routineInPlace() {
			// A role that may not guard a table the catalog declares (the
			// application's, with DML only): the application starts, and
			// the grants of the records that table can hold are refused,
			// naming the owner's command (coverage.go), until the owner's
			// `offlinelock guard install` guards it.
			p.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: this role may not install the database guard on a declared table; "+
				"grants of the records it covers are refused until the tables' owner runs `offlinelock guard install`", "error", err)
			return nil
		}
		if err != nil && lockstore.IsLockTimeout(err) {
			// A business table in use by an open transaction: the
			// application starts all the same, the grants of what is not
			// covered are refused (coverage.go), and the install is
			// tried again in the background.
			p.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: the database guard could not be installed or repaired at start-up: a table is in use; "+
				"grants of the records it covers are refused until it is, and it is tried again in the background", "error", err)
			go p.retryGuard(p.background(db))
			return nil
		}
		return err
	}
	tables, err := p.GuardedTables(db)
	if err != nil {
		return err
	}
	if len(tables) == 0 {
		if t, err := p.storeFor(db); err == nil && t.caps.Guard != nil {
			for _, m := range p.reg.lockable() {
				p.learnPartitions(db, t.caps.Guard, m)
			}
		}
		return nil
	}
	return fmt.Errorf("offlinelock: Config.DisableGuard is set, but the database guard of lock table %s is still installed on %s: "+
		"the database would go on refusing writes of held records, this plugin's own included; "+
		"remove it first with `offlinelock guard remove --dsn … --table %s` (or Plugin.RemoveGuard), or unset DisableGuard",
		p.cfg.Table, strings.Join(tables, ", "), p.cfg.Table)
}

// setRefusal writes Config.GuardNamesRecordOnly where the guard reads it.
// Where it cannot, a node that asked for less fails to start; one that
// did not ask leaves the setting as it is.
func (p *Plugin) setRefusal(db *gorm.DB) error {
	_, g, err := p.guardStoreOf(db)
	if err != nil || g == nil {
		return err
	}
	err = g.SetRefusal(direct(p.background(db)), p.cfg.GuardNamesRecordOnly)
	if err != nil && !p.cfg.GuardNamesRecordOnly {
		p.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: could not write the guard's refusal setting; it is left as it was", "error", err)
		return nil
	}
	return err
}

// retryGuard tries InstallGuard again, with growing pauses (1 s, 2 s, …
// up to guardRetryMax), until it succeeds, fails for another reason than
// a lock wait, or guardRetries tries are spent; the tables' next
// statements and the periodic check (coverage.go) try too.
func (p *Plugin) retryGuard(db *gorm.DB) {
	pause := time.Second
	for range guardRetries {
		time.Sleep(pause)
		pause = min(2*pause, guardRetryMax)
		err := p.retryOnce(db)
		if err == nil {
			p.cfg.Logger.InfoContext(ctxOf(db), "offlinelock: the database guard is installed")
			return
		}
		if !lockstore.IsLockTimeout(err) && !errors.Is(err, context.DeadlineExceeded) {
			p.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: installing the database guard in the background failed", "error", err)
			return
		}
	}
}

// retryOnce is one of retryGuard's installs. On PostgreSQL it is given
// guardRetryWait: the statement waiting for a table in use is cancelled
// then, and with it the lock it queued, which every reader of the table
// waits behind. (MySQL/MariaDB go on waiting for a metadata lock after
// the client gave up: the install's own lock_wait_timeout bounds it.)
func (p *Plugin) retryOnce(db *gorm.DB) error {
	if db.Dialector.Name() != "postgres" {
		return p.InstallGuard(db)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guardRetryWait)
	defer cancel()
	return p.InstallGuard(db.WithContext(ctx))
}

// guardRetryWait bounds each of retryGuard's installs on PostgreSQL.
const guardRetryWait = time.Second

// guardRetries and guardRetryMax bound retryGuard: about 10 minutes.
const (
	guardRetries  = 25
	guardRetryMax = 30 * time.Second
)

// learnPartitions makes the names of the partitions and inheritance
// children of m's table (PostgreSQL) names of m's to the plugin (Strict,
// Table("…")) when the guard is off, as its install does when it is on:
// once per table and database. A partition attached later is learnt by the
// next process; a failure is logged and tried again by the next statement.
func (p *Plugin) learnPartitions(db *gorm.DB, g lockstore.Guard, m *model) {
	if m == nil || !m.lockable {
		return
	}
	name := strings.ToLower(m.table)
	gs := p.guardOf(db)
	gs.mu.Lock()
	_, done := gs.tables[name]
	if !done {
		if gs.tables == nil {
			gs.tables = map[string]string{}
		}
		gs.tables[name] = "" // names only: no guard version
	}
	gs.mu.Unlock()
	if done {
		return
	}
	children, _, err := g.Inheritors(direct(p.guardSession(db)), m.table)
	if err != nil {
		p.forgetGuard(db, m.table)
		p.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: reading the partitions of a lockable table", "table", m.table, "error", err)
		return
	}
	for _, ch := range children {
		p.reg.storeAlias(ch, m)
	}
}

// guardOf is what this plugin knows of the guard on db's database: one
// state per database (databaseOf), so
// that one Plugin registered on several databases installs and tracks the
// guard on each.
func (p *Plugin) guardOf(db *gorm.DB) *guardState {
	b, err := p.bindingOf(db)
	if err != nil {
		return &guardState{} // no binding, no guard: nothing to remember
	}
	return &b.guard
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

// forgetGuards makes the next ensureGuards look at db's database again: a
// table may have been dropped and created again, without its triggers.
func (p *Plugin) forgetGuards(db *gorm.DB) {
	gs := p.guardOf(db)
	gs.mu.Lock()
	gs.routine, gs.tables = false, nil
	gs.mu.Unlock()
	gs.changed()
	p.forgetModels(db)
}

// forgetModels makes every model on db's database be prepared again
// (binding.prepare).
func (p *Plugin) forgetModels(db *gorm.DB) {
	if b, err := p.bindingOf(db); err == nil {
		b.forget()
	}
}

// forgetGuard makes the next guardTableFor of table look at db's database
// again.
func (p *Plugin) forgetGuard(db *gorm.DB, table string) {
	gs := p.guardOf(db)
	gs.mu.Lock()
	delete(gs.tables, strings.ToLower(table))
	gs.mu.Unlock()
	gs.changed()
}

// guardLazily guards m's table if it is not yet known to be, logging a
// failure: the statement at hand is still checked by the plugin, and the
// next one tries again. Inside a transaction it works in the background:
// the caller's transaction may hold the pool's last connection, and on
// MySQL DDL would commit it.
//
// It reports whether nothing is left to do for m's table on this
// database: guarded, or nothing to guard.
func (b *binding) guardLazily(db *gorm.DB, m *model) bool {
	p := b.p
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	if inTx && db.Dialector.Name() == "mysql" {
		// MySQL's CREATE TRIGGER waits for the metadata locks of open
		// transactions, and a metadata-lock deadlock with one fails that
		// transaction's statement (1213): not beside a transaction of the
		// caller's. The next statement outside one guards the table.
		return b.guard.has(m.table)
	}
	if _, ok := p.guardOn(b.t); !ok {
		if b.t.caps.Guard != nil {
			p.learnPartitions(db, b.t.caps.Guard, m) // turned off: the names still count
			return b.guard.has(m.table)
		}
		return true // SQLite has no guard
	}
	if lockstore.IsGalera(b.t.Store) {
		// On Galera CREATE TRIGGER is replicated DDL, ordered
		// cluster-wide, and GET_LOCK is one node's: installs raced
		// from several nodes under load stalled every writer. The
		// guard is installed by db.Use, InstallGuard, the CLI and
		// DDL through GORM, never on a statement's way
		// (docs/scaling.md).
		return true
	}
	if p.cfg.LeaveGuard {
		return true
	}
	p.guardTable(db, m, !inTx)
	return b.guard.has(m.table)
}

// has says whether table is known to carry the guard (or, with the
// guard off, to have had its partitions' names learnt).
func (gs *guardState) has(table string) bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	_, ok := gs.tables[strings.ToLower(table)]
	return ok
}

// guardAfterDDL guards a lockable table again after DDL named it: on
// MySQL at once, on a connection of its own, when the DDL ran outside a
// transaction (a table just created is in nobody's transaction), waiting
// at most guardDDLWait for that connection (the migrator may hold the
// pool's last one); elsewhere, and on PostgreSQL, in the background.
func (p *Plugin) guardAfterDDL(db *gorm.DB, m *model) {
	p.forgetGuard(db, m.table)
	p.forgetModels(db) // a table made again has lost its triggers
	if p.cfg.DisableGuard || p.cfg.LeaveGuard {
		return
	}
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	if db.Dialector.Name() != "mysql" {
		p.guardTable(db, m, false)
		return
	}
	if inTx {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctxOf(db)), guardDDLWait)
	defer cancel()
	bg := p.guardSession(db).WithContext(ctx)
	p.logGuardError(db, m, p.guardTableFor(bg, m))
}

// guardDDLWait bounds how long DDL through GORM waits to guard its table.
const guardDDLWait = 2 * time.Second

// guardTable guards m's table unless this process knows it is guarded:
// with wait, before it returns (waiting for an install under way); else
// in the background.
func (p *Plugin) guardTable(db *gorm.DB, m *model, wait bool) {
	if p.cfg.DisableGuard || p.cfg.LeaveGuard || m == nil || !m.lockable {
		return
	}
	name := strings.ToLower(m.table)
	gs := p.guardOf(db)
	gs.mu.Lock()
	_, done := gs.tables[name]
	pending := gs.pending[name]
	if !done && pending == nil && !wait {
		pending = make(chan struct{})
		if gs.pending == nil {
			gs.pending = map[string]chan struct{}{}
		}
		gs.pending[name] = pending
		bg := p.guardSession(db)
		go func() {
			defer func() {
				gs.mu.Lock()
				delete(gs.pending, name)
				gs.mu.Unlock()
				close(pending)
			}()
			p.logGuardError(bg, m, p.guardTableFor(bg, m))
		}()
	}
	gs.mu.Unlock()
	switch {
	case done || !wait:
	case pending != nil:
		// An install under way normally ends in milliseconds; it waits
		// longer only for a transaction that has the table in use, which
		// this statement need not wait for.
		select {
		case <-pending:
		case <-time.After(guardWait):
		case <-ctxOf(db).Done():
		}
	default:
		p.logGuardError(db, m, p.guardTableFor(p.guardSession(db), m))
	}
}

// guardSession is where an install made on the way of a statement runs:
// outside the caller's transaction, and out of its statement log (its
// DDL is the plugin's once-only work, not the statement's).
func (p *Plugin) guardSession(db *gorm.DB) *gorm.DB {
	return p.background(db).Session(&gorm.Session{Logger: logger.Discard})
}

// logGuardError logs an install that failed on a statement's way: the
// statement goes on (the plugin checks it), and grants of the table's
// records are refused until the guard is in place (coverage.go).
func (p *Plugin) logGuardError(db *gorm.DB, m *model, err error) {
	if err != nil {
		p.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: the database guard could not be installed; grants of the table's records are refused until it is (offlinelock guard install)", "table", m.table, "error", err)
	}
}

// guardTableFor guards m's table (and the tables that belong to it), on
// db's connection pool.
func (p *Plugin) guardTableFor(db *gorm.DB, m *model) error {
	t, err := p.storeFor(db)
	if err != nil {
		return err
	}
	if _, ok := p.guardOn(t); !ok {
		return nil
	}
	specs, err := t.specs(direct(db))
	if err != nil {
		return err
	}
	// m's aggregate goes with it: its root chain (a member's records are
	// spelled through it) and the members its associations name, which a
	// table created after db.Use, without Config.Models, would otherwise
	// leave unguarded until the plugin happened on a statement of theirs.
	for _, x := range append([]*model{m}, p.aggregateOf(m)...) {
		if !slices.ContainsFunc(specs, func(s tableSpec) bool { return strings.EqualFold(s.Table, x.table) }) {
			specs = append(specs, p.specOf(x))
			if x != m {
				if err := p.rememberModelOn(db, x); err != nil {
					return err
				}
			}
		}
		p.forgetGuard(db, x.table)
	}
	err = p.ensureGuards(db, specs, true)
	if err != nil {
		p.forgetModels(db) // the tables forgotten above are tried again by their next statements
	}
	return err
}

// aggregateOf is the rest of m's aggregate that the plugin can learn from
// the models: m's root chain, and the members (at any depth) that the
// has-one and has-many associations of m and of its members name, whose
// root chain goes through m.
func (p *Plugin) aggregateOf(m *model) []*model {
	var out []*model
	if m.root != nil && p.resolve(m) == nil {
		out = append(out, m.chain...)
	}
	seen := map[string]bool{strings.ToLower(m.table): true}
	var walk func(x *model, depth int)
	walk = func(x *model, depth int) {
		if depth > 8 || len(x.pk) == 0 || x.pk[0].Schema == nil {
			return
		}
		for _, rel := range x.pk[0].Schema.Relationships.Relations {
			if rel.Type != schema.HasOne && rel.Type != schema.HasMany || rel.FieldSchema == nil {
				continue
			}
			c := p.reg.modelOf(rel.FieldSchema, nil)
			if c.root == nil || c.err != nil || seen[strings.ToLower(c.table)] || p.resolve(c) != nil || !slices.Contains(c.chain, x) {
				continue
			}
			seen[strings.ToLower(c.table)] = true
			out = append(out, c)
			walk(c, depth+1)
		}
	}
	walk(m, 0)
	// Members that name their root on their own side only (lock:"root",
	// no association on the root's): known once GORM parsed them.
	for _, c := range p.reg.lockable() {
		if c.root == nil || c.err != nil || c.typ == nil || seen[strings.ToLower(c.table)] || p.resolve(c) != nil || !slices.Contains(c.chain, m) {
			continue
		}
		seen[strings.ToLower(c.table)] = true
		out = append(out, c)
	}
	return out
}

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
	fails := map[string]planFailure{}
	plans, err := guardPlans(c, g, specs, fails)
	if err != nil {
		return nil, err
	}
	out := make([]GuardState, 0, len(plans)+len(fails))
	for _, plan := range plans {
		state, err := g.TableState(c, plan)
		if tableGone(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, GuardState{Table: strings.ToLower(plan.Table), State: state})
	}
	for table, f := range fails {
		out = append(out, GuardState{Table: table, State: "unguardable", Reason: strings.TrimPrefix(f.err.Error(), "offlinelock: ")})
	}
	slices.SortFunc(out, func(a, b GuardState) int { return strings.Compare(a.Table, b.Table) })
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

// guardPlans are the plans of every table specs guard: the lockable
// tables and their many2many join tables that exist.
//
// With fails nil, a table the guard cannot follow (a member whose root is
// not in the catalog, a foreign key's action it cannot see) fails the
// whole plan; else it is left out of the plans and recorded in fails,
// with the lock resources whose records it can hold, and the rest are
// planned.
func guardPlans(c conn, g lockstore.Guard, specs []tableSpec, fails map[string]planFailure) ([]guardPlan, error) {
	b := planBuilder{c: c, g: g, specs: map[string]tableSpec{}, types: map[string]map[string]string{}}
	for _, s := range specs {
		b.specs[strings.ToLower(s.Table)] = s
	}
	ps := planSet{byTable: map[string]*guardPlan{}, recordsOf: map[string][]guardRecord{}}
	for _, s := range specs {
		if err := ps.addRecords(&b, s); err != nil {
			if fails == nil || lockstore.IsMissingTable(err) {
				return nil, err
			}
			fails[strings.ToLower(s.Table)] = planFailure{err: err, resources: []string{strings.ToLower(resourceOfSpec(b.specs, s))}}
		}
	}
	for _, table := range ps.children {
		cs, err := b.cascadesInto(table, ps.recordsOf[table])
		if err != nil && fails != nil {
			f := planFailure{err: err}
			for _, r := range ps.recordsOf[table] {
				if !slices.Contains(f.resources, strings.ToLower(r.Resource)) {
					f.resources = append(f.resources, strings.ToLower(r.Resource))
				}
			}
			fails[strings.ToLower(table)] = f
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, cc := range cs {
			pl := ps.add(cc.Parent, nil)
			pl.Cascades = append(pl.Cascades, cc)
		}
	}
	if err := ps.addInheritors(c, g); err != nil {
		return nil, err
	}
	return ps.plans(), nil
}

// planFailure is a table guardPlans could not plan: why, and the lock
// resources (lower case) whose records it can hold.
type planFailure struct {
	err       error
	resources []string
}

// resourceOfSpec is the lock resource of s's records: its root's, up
// the chain of the catalog, or its own table's.
func resourceOfSpec(specs map[string]tableSpec, s tableSpec) string {
	for i := 0; s.Root != nil && i < 16; i++ {
		up, ok := specs[strings.ToLower(s.Root.Table)]
		if !ok {
			return s.Root.Table
		}
		s = up
	}
	return s.Table
}

// planSet is the guard's plans as guardPlans builds them, by table, in
// the order first met.
type planSet struct {
	byTable   map[string]*guardPlan
	order     []string
	children  []string                 // every table with records, in order
	recordsOf map[string][]guardRecord // their records
}

// add is table's plan, with recs added to it.
func (ps *planSet) add(table string, recs []guardRecord) *guardPlan {
	name := strings.ToLower(table)
	pl, ok := ps.byTable[name]
	if !ok {
		pl = &guardPlan{Table: table}
		ps.byTable[name] = pl
		ps.order = append(ps.order, name)
	}
	pl.Records = append(pl.Records, recs...)
	return pl
}

// addRecord adds rec to table's plan, and table to the tables whose
// parents' cascades are followed.
func (ps *planSet) addRecord(table string, rec *guardRecord) {
	if rec == nil {
		return
	}
	ps.add(table, []guardRecord{*rec})
	if _, ok := ps.recordsOf[table]; !ok {
		ps.children = append(ps.children, table)
	}
	ps.recordsOf[table] = append(ps.recordsOf[table], *rec)
}

// addRecords adds the records of s's table and of its join tables.
func (ps *planSet) addRecords(b *planBuilder, s tableSpec) error {
	rec, err := b.record(s, s.Table)
	if err != nil {
		return err
	}
	ps.addRecord(s.Table, rec)
	joins := map[string][]columnSpec{}
	for _, l := range s.Links {
		joins[l.Name] = append(joins[l.Name], l)
	}
	for join, cols := range joins {
		rec, err := b.joinRecord(s, join, cols)
		if err != nil {
			return err
		}
		ps.addRecord(join, rec)
	}
	return nil
}

// addInheritors gives partitions and inheritance children (PostgreSQL)
// the plan of the table they inherit from: a write straight into one
// fires its own triggers only.
func (ps *planSet) addInheritors(c conn, g lockstore.Guard) error {
	for _, name := range slices.Clone(ps.order) {
		pl := ps.byTable[name]
		if len(pl.Records) == 0 {
			continue
		}
		children, partitioned, err := g.Inheritors(c, pl.Table)
		if err != nil {
			return err
		}
		pl.Partitioned = partitioned
		for _, ch := range children {
			ps.add(ch, pl.Records).Inherits = pl.Table
		}
	}
	return nil
}

// plans is the set in order, each with its records sorted and its
// version: a fingerprint of all it guards.
func (ps *planSet) plans() []guardPlan {
	var out []guardPlan
	for _, name := range ps.order {
		pl := ps.byTable[name]
		slices.SortStableFunc(pl.Records, func(a, b guardRecord) int { return strings.Compare(a.Resource, b.Resource) })
		var fp []string
		for _, r := range pl.Records {
			fp = append(fp, r.Resource, r.Key("r"))
		}
		for _, cc := range pl.Cascades {
			fp = append(fp, cc.Child, cc.Column, cc.ParentColumn, cc.OnDelete, cc.OnUpdate)
		}
		if pl.Partitioned {
			fp = append(fp, "partitioned")
		}
		pl.Version = lockstore.GuardVersion(fp...)
		out = append(out, *pl)
	}
	return out
}

// cascadesInto are the foreign keys whose actions change rows of the
// guarded table (MySQL/MariaDB: they fire no triggers), each with the
// table's records, for its parent's triggers to check. Actions the guard
// cannot follow are refused, naming the constraint: a key of several
// columns, and a second level (the parent's own rows changed by another
// key's action, which fires no trigger of the parent's either).
func (b *planBuilder) cascadesInto(table string, recs []guardRecord) ([]lockstore.GuardCascade, error) {
	cs, err := b.g.CascadesInto(b.c, table)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	name, err := b.g.QualifiedName(b.c, table)
	if err != nil {
		return nil, err
	}
	for i := range cs {
		cc := &cs[i]
		if cc.Columns > 1 {
			return nil, fmt.Errorf("offlinelock: guarding %s: its foreign key %s has %d columns and an ON DELETE or ON UPDATE action, which changes its rows "+
				"without firing a trigger, and the guard follows one-column keys only: make the action RESTRICT or NO ACTION, or the key one column", table, cc.Constraint, cc.Columns)
		}
		up, err := b.g.CascadesInto(b.c, cc.Parent)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(up, func(u lockstore.GuardCascade) bool { return reaches(u, *cc) }); i >= 0 {
			up = up[i:]
			return nil, fmt.Errorf("offlinelock: guarding %s: its foreign key %s follows changes of %s, whose own rows the action of %s's foreign key %s changes: "+
				"two levels of actions fire no trigger, and the guard cannot see the second; make one of them RESTRICT or NO ACTION", table, cc.Constraint, cc.Parent, cc.Parent, up[0].Constraint)
		}
		cc.Child, cc.ChildName, cc.Records = table, name, recs
	}
	return cs, nil
}

// reaches reports whether the action of up (a foreign key of cc's parent)
// goes on through cc: up deletes the parent's rows and cc follows deletes,
// or up changes the column cc references and cc follows key changes.
func reaches(up, cc lockstore.GuardCascade) bool {
	deletes := up.OnDelete == "CASCADE"
	changes := (up.OnDelete != "" && !deletes || up.OnUpdate != "") && strings.EqualFold(up.Column, cc.ParentColumn)
	return deletes && cc.OnDelete != "" || changes && cc.OnUpdate != ""
}

// planBuilder spells the records of rows from the catalog and the column
// types the database reports.
type planBuilder struct {
	c     conn
	g     lockstore.Guard
	specs map[string]tableSpec
	types map[string]map[string]string
}

func (b *planBuilder) columnTypes(table string) (map[string]string, error) {
	name := strings.ToLower(table)
	if t, ok := b.types[name]; ok {
		return t, nil
	}
	t, err := b.g.ColumnTypes(b.c, table)
	if err != nil {
		return nil, err
	}
	b.types[name] = t
	return t, nil
}

// record is how a row of s's table (aliased by the trigger) belongs to its
// record; nil when the table does not exist.
func (b *planBuilder) record(s tableSpec, table string) (*guardRecord, error) {
	types, err := b.columnTypes(table)
	if err != nil || types == nil {
		return nil, err
	}
	if s.Root == nil {
		var kinds []keyKind
		var cols []string
		for _, k := range s.Key {
			kinds, cols = append(kinds, k.Kind), append(cols, k.Name)
		}
		g := b.g
		return &guardRecord{Resource: s.Table, Key: func(row string) string {
			parts := make([]string, len(cols))
			for i, col := range cols {
				parts[i] = g.Spell(kinds[i], row+"."+g.Quote(col), types[strings.ToLower(col)])
			}
			return encodeKeySQL(parts, g.Backslash())
		}, Match: b.match(kinds, cols, types)}, nil
	}
	return b.memberRecord(s, s.Root.Column, types, 0)
}

// match is a record's Match where its key is one column whose kind the
// store can compare through an index (Equal), else nil.
func (b *planBuilder) match(kinds []keyKind, cols []string, types map[string]string) func(row, id string) (string, string) {
	if len(cols) != 1 {
		return nil
	}
	if _, ok := b.g.Equal(kinds[0], "", "", ""); !ok {
		return nil
	}
	g := b.g
	return func(row, id string) (string, string) {
		cond, _ := g.Equal(kinds[0], row+"."+g.Quote(cols[0]), id, types[strings.ToLower(cols[0])])
		return "", cond
	}
}

// matchIn is Match of a row whose column col holds the key pk of a row of
// from (aliased alias) that up matches: from is read first, by up's
// match, then the row by col; nil where up has no match.
func (b *planBuilder) matchIn(up *guardRecord, col, from, alias, pk string) func(row, id string) (string, string) {
	if up.Match == nil {
		return nil
	}
	g := b.g
	return func(row, id string) (string, string) {
		joins, cond := up.Match(alias, id)
		return joins + from + " " + alias + " STRAIGHT_JOIN ", cond + " AND " + row + "." + g.Quote(col) + " = " + alias + "." + g.Quote(pk)
	}
}

// memberRecord is the record of a row of member s whose column holds its
// parent's key: the parent's key when the parent is the root, else the
// parent row's own record, read by a subquery per level. Each level's
// read is a locking one (ShareRow): an open move of a parent makes the
// write wait and then read where the move left it, and a move that comes
// later waits for the write; a REPEATABLE READ snapshot never decides a
// root (PostgreSQL refuses a parent changed since it, 40001).
func (b *planBuilder) memberRecord(s tableSpec, column string, types map[string]string, depth int) (*guardRecord, error) {
	parent, ok := b.specs[strings.ToLower(s.Root.Table)]
	if !ok || len(parent.Key) != 1 || depth > 8 {
		return nil, fmt.Errorf("offlinelock: guarding %s: its root %s is not a lockable table of the catalog with a one-column key", s.Table, s.Root.Table)
	}
	g := b.g
	colType := types[strings.ToLower(column)]
	if parent.Root == nil {
		kind := parent.Key[0].Kind
		return &guardRecord{Resource: parent.Table, Key: func(row string) string {
			return g.Spell(kind, row+"."+g.Quote(column), colType)
		}, Match: b.match([]keyKind{kind}, []string{column}, types)}, nil
	}
	ptypes, err := b.columnTypes(parent.Table)
	if err != nil || ptypes == nil {
		return nil, err
	}
	up, err := b.memberRecord(parent, parent.Root.Column, ptypes, depth+1)
	if err != nil || up == nil {
		return nil, err // a table up the chain does not exist yet: guarded when it does
	}
	from, err := b.g.QualifiedName(b.c, parent.Table)
	if err != nil {
		return nil, err
	}
	alias := fmt.Sprintf("offlinelock_p%d", depth)
	pk := parent.Key[0].Name
	return &guardRecord{Resource: up.Resource, Key: func(row string) string {
		return "(SELECT " + up.Key(alias) + " FROM " + from + " " + alias +
			" WHERE " + alias + "." + g.Quote(pk) + " = " + row + "." + g.Quote(column) + g.ShareRow() + ")"
	}, Match: b.matchIn(up, column, from, alias, pk)}, nil
}

// joinRecord is how a row of join table join belongs to side s's record.
func (b *planBuilder) joinRecord(s tableSpec, join string, cols []columnSpec) (*guardRecord, error) {
	types, err := b.columnTypes(join)
	if err != nil || types == nil {
		return nil, err
	}
	g := b.g
	if s.Root == nil {
		var parts []columnSpec
		for _, k := range s.Key {
			for _, c := range cols {
				if c.Key == k.Name || c.Key == "" && len(s.Key) == 1 {
					parts = append(parts, columnSpec{Name: c.Column, Kind: k.Kind})
					break
				}
			}
		}
		if len(parts) != len(s.Key) {
			return nil, fmt.Errorf("offlinelock: guarding join table %s: it does not hold the whole key of %s", join, s.Table)
		}
		rec := &guardRecord{Resource: s.Table, Key: func(row string) string {
			out := make([]string, len(parts))
			for i, p := range parts {
				out[i] = g.Spell(p.Kind, row+"."+g.Quote(p.Name), types[strings.ToLower(p.Name)])
			}
			return encodeKeySQL(out, g.Backslash())
		}}
		if len(parts) == 1 {
			rec.Match = b.match([]keyKind{parts[0].Kind}, []string{parts[0].Name}, types)
		}
		return rec, nil
	}
	if len(s.Key) != 1 || len(cols) != 1 {
		return nil, fmt.Errorf("offlinelock: guarding join table %s: member %s must have a one-column key", join, s.Table)
	}
	mtypes, err := b.columnTypes(s.Table)
	if err != nil || mtypes == nil {
		return nil, err
	}
	up, err := b.memberRecord(s, s.Root.Column, mtypes, 1)
	if err != nil || up == nil {
		return nil, err
	}
	from, err := b.g.QualifiedName(b.c, s.Table)
	if err != nil {
		return nil, err
	}
	const alias = "offlinelock_m"
	col, pk := cols[0].Column, s.Key[0].Name
	return &guardRecord{Resource: up.Resource, Key: func(row string) string {
		return "(SELECT " + up.Key(alias) + " FROM " + from + " " + alias +
			" WHERE " + alias + "." + g.Quote(pk) + " = " + row + "." + g.Quote(col) + g.ShareRow() + ")"
	}, Match: b.matchIn(up, col, from, alias, pk)}, nil
}

// encodeKeySQL is encodeKey in SQL: one part as it is, several escaped
// ('\' and ',') and joined with ','. The parts are text expressions.
func encodeKeySQL(parts []string, bs string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	esc := make([]string, len(parts))
	for i, p := range parts {
		esc[i] = "REPLACE(REPLACE(" + p + ", " + bs + ", CONCAT(" + bs + ", " + bs + ")), ',', CONCAT(" + bs + ", ','))"
	}
	return "CONCAT(" + strings.Join(esc, ", ',', ") + ")"
}

// lockedByGuard turns the guard's refusal in db.Error into the
// *LockedError a plugin caller expects, naming the holders as the lock
// table has them now.
func (p *Plugin) lockedByGuard(db *gorm.DB) {
	if db.Error == nil || p.cfg.DisableGuard {
		return
	}
	var le *LockedError
	if errors.As(db.Error, &le) {
		return
	}
	t, err := p.storeFor(db)
	if err != nil {
		return
	}
	rf := t.caps.Guard
	if rf == nil {
		return
	}
	r, ok := rf.GuardRefusal(db.Error, p.lockableTables())
	if !ok {
		return
	}
	if r.Resource == "" {
		r.Resource = db.Statement.Table // the message was cut: the statement's table is the best name
	}
	out := &LockedError{Resource: r.Resource, ID: r.ID, Wanted: Write}
	if r.ID != "" {
		o, _ := OwnerFrom(db.Statement.Context)
		if locks, err := t.list(direct(p.background(db)), Filter{Resource: r.Resource, ID: r.ID}); err == nil {
			for _, l := range locks {
				if l.Owner.Session != o.Session || o.Session == "" {
					out.Holders = append(out.Holders, l)
				}
			}
		}
	}
	p.tel.refused(ctxOf(db), db, modeImplicit, Write, r.Resource, out)
	db.Error = out
}

// lockableTables are the tables of the catalog and the parsed models.
func (p *Plugin) lockableTables() []string {
	var out []string
	for _, m := range p.reg.lockable() {
		out = append(out, m.table)
	}
	return out
}
