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

	"github.com/offlinelock/offlinelock/internal/guard"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/telemetry"
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
	if p.cfg.DisableGuard {
		return nil
	}
	t, err := p.storeFor(db)
	if err != nil || t.caps.Guard == nil || !t.caps.Guard.KeyedMark() {
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
// timed out waiting for a lock in the last guard.BusyFor is left to the
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
			return guard.InstallError("the guard routine", err)
		}
		if err := p.loadGuardKey(db, c); err != nil {
			return err
		}
		gs.routine = true
	}
	defer gs.changed()
	// A table the guard cannot follow (guard.Failure) is left unguarded,
	// and its records' grants refused (coverage.go); every other table is
	// guarded all the same, and the first failure is returned.
	fails := map[string]guard.Failure{}
	plans, err := guard.Plan(c, g, guardTables(specs), fails)
	if err != nil {
		return err
	}
	var first error
	for _, table := range slices.Sorted(maps.Keys(fails)) {
		if first == nil {
			first = fails[table].Err
		}
	}
	for _, plan := range plans {
		if m := p.reg.TableModel(plan.Inherits); plan.Inherits != "" && m != nil {
			p.reg.StoreAlias(plan.Table, m) // a partition's name is its table's, to the plugin too (Strict, Table("…"))
		}
	}
	if gs.busy == nil {
		gs.busy = map[string]time.Time{}
	}
	// A table in use stops the install: tried again later (retryGuard,
	// the tables' next statements after guard.BusyFor); their grants are
	// refused meanwhile.
	if err := guard.Install(c, g, plans, guard.Memory{Tables: gs.tables, Busy: gs.busy}, skipBusy); err != nil && (first == nil || lockstore.IsLockTimeout(err)) {
		first = err
	}
	return first
}

// routineInPlace says whether this process found or installed the
// guard's shared routine.
func (gs *guardState) routineInPlace() bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return gs.routine
}

// busyTable says whether an install timed out waiting for table in the
// last guard.BusyFor.
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
			for _, m := range p.reg.Lockable() {
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
	if t, err := p.storeFor(db); err != nil || t.caps.Guard == nil || !t.caps.Guard.InstallEndsWithContext() {
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
func (p *Plugin) learnPartitions(db *gorm.DB, g lockstore.Guard, m *model.Model) {
	if m == nil || !m.Lockable {
		return
	}
	name := strings.ToLower(m.Table)
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
	children, _, err := g.Inheritors(direct(p.guardSession(db)), m.Table)
	if err != nil {
		p.forgetGuard(db, m.Table)
		p.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: reading the partitions of a lockable table", "table", m.Table, "error", err)
		return
	}
	for _, ch := range children {
		p.reg.StoreAlias(ch, m)
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
func (b *binding) guardLazily(db *gorm.DB, m *model.Model) bool {
	p := b.p
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	if g := b.t.caps.Guard; inTx && g != nil && g.InstallWaitsForTransactions() {
		// MySQL's CREATE TRIGGER waits for the metadata locks of open
		// transactions, and a metadata-lock deadlock with one fails that
		// transaction's statement (1213): not beside a transaction of the
		// caller's. The next statement outside one guards the table.
		return b.guard.has(m.Table)
	}
	if _, ok := p.guardOn(b.t); !ok {
		if b.t.caps.Guard != nil {
			p.learnPartitions(db, b.t.caps.Guard, m) // turned off: the names still count
			return b.guard.has(m.Table)
		}
		return true // SQLite has no guard
	}
	if !b.t.caps.Guard.InstallOnStatementsWay() {
		// Galera: the guard is installed by db.Use, InstallGuard, the
		// CLI and DDL through GORM, never on a statement's way
		// (lockstore.GuardTraits, docs/scaling.md).
		return true
	}
	if p.cfg.LeaveGuard {
		return true
	}
	p.guardTable(db, m, !inTx)
	return b.guard.has(m.Table)
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
func (p *Plugin) guardAfterDDL(db *gorm.DB, m *model.Model) {
	p.forgetGuard(db, m.Table)
	p.forgetModels(db) // a table made again has lost its triggers
	if p.cfg.DisableGuard || p.cfg.LeaveGuard {
		return
	}
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	if t, err := p.storeFor(db); err != nil || t.caps.Guard == nil || !t.caps.Guard.InstallWaitsForTransactions() {
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
func (p *Plugin) guardTable(db *gorm.DB, m *model.Model, wait bool) {
	if p.cfg.DisableGuard || p.cfg.LeaveGuard || m == nil || !m.Lockable {
		return
	}
	name := strings.ToLower(m.Table)
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
func (p *Plugin) logGuardError(db *gorm.DB, m *model.Model, err error) {
	if err != nil {
		p.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: the database guard could not be installed; grants of the table's records are refused until it is (offlinelock guard install)", "table", m.Table, "error", err)
	}
}

// guardTableFor guards m's table (and the tables that belong to it), on
// db's connection pool.
func (p *Plugin) guardTableFor(db *gorm.DB, m *model.Model) error {
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
	for _, x := range append([]*model.Model{m}, p.aggregateOf(m)...) {
		if !slices.ContainsFunc(specs, func(s tableSpec) bool { return strings.EqualFold(s.Table, x.Table) }) {
			specs = append(specs, p.specOf(x))
			if x != m {
				if err := p.rememberModelOn(db, x); err != nil {
					return err
				}
			}
		}
		p.forgetGuard(db, x.Table)
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
func (p *Plugin) aggregateOf(m *model.Model) []*model.Model {
	var out []*model.Model
	if m.Root != nil && p.reg.Resolve(m) == nil {
		out = append(out, m.Chain()...)
	}
	seen := map[string]bool{strings.ToLower(m.Table): true}
	var walk func(x *model.Model, depth int)
	walk = func(x *model.Model, depth int) {
		if depth > 8 || len(x.PK) == 0 || x.PK[0].Schema == nil {
			return
		}
		for _, rel := range x.PK[0].Schema.Relationships.Relations {
			if rel.Type != schema.HasOne && rel.Type != schema.HasMany || rel.FieldSchema == nil {
				continue
			}
			c := p.reg.ModelOf(rel.FieldSchema, nil)
			if c.Root == nil || c.Err != nil || seen[strings.ToLower(c.Table)] || p.reg.Resolve(c) != nil || !slices.Contains(c.Chain(), x) {
				continue
			}
			seen[strings.ToLower(c.Table)] = true
			out = append(out, c)
			walk(c, depth+1)
		}
	}
	walk(m, 0)
	// Members that name their root on their own side only (lock:"root",
	// no association on the root's): known once GORM parsed them.
	for _, c := range p.reg.Lockable() {
		if c.Root == nil || c.Err != nil || c.Type == nil || seen[strings.ToLower(c.Table)] || p.reg.Resolve(c) != nil || !slices.Contains(c.Chain(), m) {
			continue
		}
		seen[strings.ToLower(c.Table)] = true
		out = append(out, c)
	}
	return out
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
	p.tel.Refused(ctxOf(db), db, telemetry.Implicit, string(Write), r.Resource, out)
	db.Error = out
}

// lockableTables are the tables of the catalog and the parsed models.
func (p *Plugin) lockableTables() []string {
	var out []string
	for _, m := range p.reg.Lockable() {
		out = append(out, m.Table)
	}
	return out
}
