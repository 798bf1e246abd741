package guard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
)

// guardWait bounds how long a statement outside a transaction waits for
// its table's guard being installed in the background.
const guardWait = 250 * time.Millisecond

// guardDDLWait bounds how long DDL through GORM waits to guard its table.
const guardDDLWait = 2 * time.Second

// Lazily guards m's table if it is not yet known to be (in a transaction,
// in the background), and reports whether nothing is left to do for it.
func (k *Keeper) Lazily(db *gorm.DB, m *model.Model) bool {
	g := k.cfg.Guard
	switch {
	case g == nil:
		return true // SQLite has no guard
	case inTx(db) && g.InstallWaitsForTransactions():
		// MySQL's CREATE TRIGGER beside a caller's transaction could
		// deadlock on metadata locks: the next statement outside one.
		return k.has(m.Table)
	case k.cfg.Off:
		k.learnPartitions(db, m) // turned off: the names still count
		return k.has(m.Table)
	case !g.InstallOnStatementsWay() || k.cfg.Leave:
		// Galera: never on a statement's way (docs/scaling.md).
		return true
	}
	k.guardTable(db, m, !inTx(db))
	return k.has(m.Table)
}

// AfterDDL guards m's table again after DDL named it: on MySQL at once
// (outside a transaction, within guardDDLWait), elsewhere in the background.
func (k *Keeper) AfterDDL(db *gorm.DB, m *model.Model) {
	k.forget(m.Table)
	k.cfg.Host.Forget() // a table made again has lost its triggers
	if k.cfg.Off || k.cfg.Leave {
		return
	}
	if g := k.cfg.Guard; g == nil || !g.InstallWaitsForTransactions() {
		k.guardTable(db, m, false)
		return
	}
	if inTx(db) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctxOf(db)), guardDDLWait)
	defer cancel()
	bg := k.session(db).WithContext(ctx)
	k.logError(db, m, k.install(bg, m))
}

// guardTable guards m's table unless this process knows it is guarded:
// with wait, before it returns; else in the background.
func (k *Keeper) guardTable(db *gorm.DB, m *model.Model, wait bool) {
	if k.cfg.Off || k.cfg.Leave {
		return
	}
	name := strings.ToLower(m.Table)
	k.mu.Lock()
	_, done := k.tables[name]
	pending := k.pending[name]
	if !done && pending == nil && !wait {
		pending = make(chan struct{})
		if k.pending == nil {
			k.pending = map[string]chan struct{}{}
		}
		k.pending[name] = pending
		bg := k.session(db)
		go func() {
			defer func() {
				k.mu.Lock()
				delete(k.pending, name)
				k.mu.Unlock()
				close(pending)
			}()
			k.logError(bg, m, k.install(bg, m))
		}()
	}
	k.mu.Unlock()
	switch {
	case done || !wait:
	case pending != nil:
		// Longer waits are for a transaction using the table: not ours.
		select {
		case <-pending:
		case <-time.After(guardWait):
		case <-ctxOf(db).Done():
		}
	default:
		k.logError(db, m, k.install(k.session(db), m))
	}
}

// install guards m's table and the tables of its aggregate (its root
// chain and the members its associations name), on db's pool.
func (k *Keeper) install(db *gorm.DB, m *model.Model) error {
	if k.cfg.Off || k.cfg.Guard == nil {
		return nil
	}
	tables, err := k.cfg.Host.Catalog(db)
	if err != nil {
		return err
	}
	for _, x := range append([]*model.Model{m}, k.cfg.Models.Aggregate(m)...) {
		if !slices.ContainsFunc(tables, func(s model.Spec) bool { return strings.EqualFold(s.Table, x.Table) }) {
			tables = append(tables, k.cfg.Models.SpecOf(x))
			if x != m {
				if err := k.cfg.Host.Remember(db, x); err != nil {
					return err
				}
			}
		}
		k.forget(x.Table)
	}
	if err = k.ensure(db, tables, true); err != nil {
		k.cfg.Host.Forget() // the tables forgotten above are tried again by their next statements
	}
	return err
}

// logError logs an install that failed on a statement's way: the
// statement goes on, and grants are refused until the guard is in place.
func (k *Keeper) logError(db *gorm.DB, m *model.Model, err error) {
	if err != nil {
		k.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: the database guard could not be installed; grants of the table's records are refused until it is (offlinelock guard install)", "table", m.Table, "error", err)
	}
}

// learnPartitions makes the partitions of m's table (PostgreSQL) names of
// m's when the guard is off, as its install does when it is on.
func (k *Keeper) learnPartitions(db *gorm.DB, m *model.Model) {
	if m == nil || !m.Lockable {
		return
	}
	name := strings.ToLower(m.Table)
	k.mu.Lock()
	_, done := k.tables[name]
	if !done {
		if k.tables == nil {
			k.tables = map[string]string{}
		}
		k.tables[name] = "" // names only: no guard version
	}
	k.mu.Unlock()
	if done {
		return
	}
	children, _, err := k.cfg.Guard.Inheritors(k.cfg.Host.Conn(k.session(db)), m.Table)
	if err != nil {
		k.forget(m.Table)
		k.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: reading the partitions of a lockable table", "table", m.Table, "error", err)
		return
	}
	for _, ch := range children {
		k.cfg.Models.StoreAlias(ch, m)
	}
}

// busyFor is how long installs on statements' ways leave a table alone
// after one timed out waiting for it.
const busyFor = 10 * time.Second

// installPlans installs or upgrades each plan not at its version, skipping
// dropped (and, with skipBusy, busy) tables. A lock timeout stops it and
// marks the table busy; else the first failure returns after the rest. k.mu
// is held.
func (k *Keeper) installPlans(c lockstore.Conn, plans []lockstore.GuardPlan, skipBusy bool) error {
	var first error
	for _, plan := range plans {
		name := strings.ToLower(plan.Table)
		if v, ok := k.tables[name]; ok && v == plan.Version {
			continue
		}
		if until, ok := k.busy[name]; skipBusy && ok && time.Now().Before(until) {
			continue
		}
		err := k.cfg.Guard.GuardTable(c, plan)
		switch {
		case lockstore.IsMissingTable(err):
			continue // dropped since the plan was made: nothing to guard
		case lockstore.IsLockTimeout(err):
			k.busy[name] = time.Now().Add(busyFor)
			return installError("table "+plan.Table, err)
		case err != nil:
			if first == nil {
				first = installError("table "+plan.Table, err)
			}
			continue
		}
		k.tables[name] = plan.Version
		delete(k.busy, name)
	}
	return first
}

// installError explains a failed install of what (the routine, a table):
// most often the role lacks a privilege, and the way out is explicit.
func installError(what string, err error) error {
	return fmt.Errorf("offlinelock: installing the database guard on %s: %w; "+
		"the database role needs to create triggers on the lockable tables and functions or procedures in their schema "+
		"(PostgreSQL: own the tables and have CREATE on the schema; MySQL/MariaDB: the TRIGGER and CREATE ROUTINE privileges, "+
		"and SUPER or log_bin_trust_function_creators=1 when binary logging is on), "+
		"or set Config.DisableGuard to run without it (then writes that do not pass through the plugin are not checked)%s", what, err, lockstore.OwnerHint(err))
}
