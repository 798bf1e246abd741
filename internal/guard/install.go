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

// Lazily guards m's table if it is not yet known to be, logging a
// failure: the statement at hand is still checked by the plugin, and the
// next one tries again. Inside a transaction it works in the background:
// the caller's transaction may hold the pool's last connection, and on
// MySQL DDL would commit it.
//
// It reports whether nothing is left to do for m's table on this
// database: guarded, or nothing to guard.
func (k *Keeper) Lazily(db *gorm.DB, m *model.Model) bool {
	g := k.cfg.Guard
	switch {
	case g == nil:
		return true // SQLite has no guard
	case inTx(db) && g.InstallWaitsForTransactions():
		// MySQL's CREATE TRIGGER waits for the metadata locks of open
		// transactions, and a metadata-lock deadlock with one fails that
		// transaction's statement (1213): not beside a transaction of the
		// caller's. The next statement outside one guards the table.
		return k.has(m.Table)
	case k.cfg.Off:
		k.learnPartitions(db, m) // turned off: the names still count
		return k.has(m.Table)
	case !g.InstallOnStatementsWay() || k.cfg.Leave:
		// Galera: the guard is installed by db.Use, InstallGuard, the
		// CLI and DDL through GORM, never on a statement's way
		// (lockstore.GuardTraits, docs/scaling.md).
		return true
	}
	k.guardTable(db, m, !inTx(db))
	return k.has(m.Table)
}

// AfterDDL guards m's table again after DDL named it: on MySQL at once,
// on a connection of its own, when the DDL ran outside a transaction (a
// table just created is in nobody's transaction), waiting at most
// guardDDLWait for that connection (the migrator may hold the pool's last
// one); elsewhere, and on PostgreSQL, in the background.
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
// with wait, before it returns (waiting for an install under way); else
// in the background.
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
		// An install under way normally ends in milliseconds; it waits
		// longer only for a transaction that has the table in use, which
		// this statement need not wait for.
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
// chain, which a member's records are spelled through, and the members
// its associations name, which a table created after db.Use, without
// Config.Models, would otherwise leave unguarded until the plugin
// happened on a statement of theirs), on db's connection pool.
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
// statement goes on (the plugin checks it), and grants of the table's
// records are refused until the guard is in place (coverage.go).
func (k *Keeper) logError(db *gorm.DB, m *model.Model, err error) {
	if err != nil {
		k.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: the database guard could not be installed; grants of the table's records are refused until it is (offlinelock guard install)", "table", m.Table, "error", err)
	}
}

// learnPartitions makes the names of the partitions and inheritance
// children of m's table (PostgreSQL) names of m's to the plugin (Strict,
// Table("…")) when the guard is off, as its install does when it is on:
// once per table and database. A partition attached later is learnt by
// the next process; a failure is logged and tried again by the next
// statement.
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
// after one timed out waiting for it: each statement would otherwise wait
// the install's lock timeout for it again.
const busyFor = 10 * time.Second

// installPlans installs (or upgrades in place) the triggers of each of
// plans that k does not show at its version, and records what it
// installed. A table dropped since the plan was made is skipped. With
// skipBusy (an install on a statement's way) a table left alone in
// k.busy is skipped too. A table in use (a lock wait timed out) stops the
// install at once, since the next tables would likely wait as long, and
// is left alone for busyFor; any other failure is returned, first one
// first, after the other tables are installed. k.mu is held.
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
