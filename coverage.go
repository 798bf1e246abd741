package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/guard"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// No guard, no grant (docs/guard.md): on PostgreSQL and MySQL/MariaDB with
// the guard on, a lock is granted only when the guard is in place, current
// and enabled on every table that can hold a row of its record: its own
// table, its members' at every level, their many2many join tables and the
// tables whose foreign-key actions reach them (MySQL/MariaDB). A grant
// reads what the plugin last showed (a coverage): one atomic load and one
// map read. The coverage is shown again, before the next grant, whenever
// the plugin's own installs, repairs, removals or DDL change what it knows
// of the guard, or when it learns a model; and in the background every
// Config.GuardCheckEvery, which finds what others changed (a trigger
// disabled or dropped by the tables' owner, a table created outside GORM).

// DefaultGuardCheckEvery is how often, by default, the plugin reads again
// from the database whether the guard covers every lockable table.
const DefaultGuardCheckEvery = 30 * time.Second

// coverWait bounds how long a grant waits for the coverage it needs
// shown again (a few catalog reads).
const coverWait = 5 * time.Second

// ErrUnguarded reports a lock refused because the database guard does not
// cover every table that can hold a row of the record (docs/guard.md, "No
// guard, no grant"): a table without the guard's triggers, with one
// disabled or replaced, or one whose foreign-key actions the guard cannot
// follow. Nothing was written to the lock table. The message names the
// table, what is missing and the command that fixes it; errors.Is(err,
// ErrUnenforceable) is true as well. Plugin.UnguardedTables lists such
// tables without a grant being tried.
var ErrUnguarded = errors.New("offlinelock: the database guard does not cover the record")

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

// unguardedError is a grant refused by the coverage: errors.Is holds for
// ErrUnguarded and ErrUnenforceable.
type unguardedError struct{ msg string }

func (e *unguardedError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrUnguarded) and errors.Is(err,
// ErrUnenforceable) true.
func (e *unguardedError) Is(target error) bool {
	return target == ErrUnguarded || target == ErrUnenforceable
}

// coverage is what the plugin last showed of the guard on one database.
type coverage struct {
	gen, reg, tables uint64 // guardState.gen, the registry's Changes and TablesGen it was shown at
	at               time.Time
	gaps             map[string][]UnguardedTable // lock resource (lower case) → its tables not covered
	all              []UnguardedTable
	err              error // the coverage could not be read: every grant is refused with it
}

// checkEvery is Config.GuardCheckEvery or its default.
func (p *Plugin) checkEvery() time.Duration {
	if p.cfg.GuardCheckEvery > 0 {
		return p.cfg.GuardCheckEvery
	}
	return DefaultGuardCheckEvery
}

// guardGoverns says whether grants on db's database need the guard: it is
// on (not DisableGuard) and the database has one (not SQLite).
func (p *Plugin) guardGoverns(b *binding) (lockstore.Guard, bool) {
	if p.cfg.DisableGuard || b.t == nil || b.t.caps.Guard == nil {
		return nil, false
	}
	return b.t.caps.Guard, true
}

// checkGuarded refuses a grant on resource when the guard does not cover
// every table that can hold a row of its records. It costs one atomic
// load and one map read while the coverage is current
// (BenchmarkGrantGuardCheck).
func (p *Plugin) checkGuarded(db *gorm.DB, resource string) error {
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	return b.checkGuarded(db, resource)
}

// checkGuarded is the Plugin's checkGuarded for a statement of b's
// database, which a callback of b's needs not look up again.
func (b *binding) checkGuarded(db *gorm.DB, resource string) error {
	p := b.p
	if p.cfg.DisableGuard || b.t == nil || b.t.caps.Guard == nil { // guardGoverns
		return nil
	}
	g := b.t.caps.Guard
	cv := b.coverageFor(db, g)
	if cv.err == nil && len(cv.gaps) == 0 {
		return nil
	}
	gaps := cv.gaps[strings.ToLower(resource)]
	if (cv.err != nil || len(gaps) > 0) && b.repairFor(db, resource) {
		cv = b.coverageFor(db, g)
		gaps = cv.gaps[strings.ToLower(resource)]
	}
	if cv.err != nil {
		return &unguardedError{msg: fmt.Sprintf("%v: reading whether the database guard covers %s failed: %v; the lock is refused until it can be read", ErrUnguarded, resource, cv.err)}
	}
	if len(gaps) > 0 {
		return p.unguarded(resource, gaps)
	}
	return nil
}

// repairFor installs, on a grant's way, the guard of resource's
// aggregate that the coverage found missing (an install in the background
// that planned before a join table or member was learnt, a table found
// uncovered by the periodic check), where the plugin installs the guard
// on a statement's way and the grant is outside a transaction of the
// caller's (whose locks the install could wait for). It reports whether
// it tried.
func (b *binding) repairFor(db *gorm.DB, resource string) bool {
	p := b.p
	m := p.reg.TableModel(resource)
	if g := b.t.caps.Guard; m == nil || p.cfg.LeaveGuard || g != nil && !g.InstallOnStatementsWay() {
		return false
	}
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx {
		return false
	}
	// Once a second at most: a table the guard cannot follow would
	// otherwise cost every refused grant an install's statements.
	at := b.guard.repairAt.Load()
	if now := time.Now().UnixNano(); now-at < int64(time.Second) || !b.guard.repairAt.CompareAndSwap(at, now) {
		return false
	}
	ctx, cancel := detached(db)
	defer cancel()
	b.guard.waitPending(ctx, true)
	p.logGuardError(db, m, p.guardTableFor(p.guardSession(db).WithContext(ctx), m))
	return true
}

// unguarded is the refusal of a grant on resource, naming its first table
// not covered, what is missing and the command that fixes it.
func (p *Plugin) unguarded(resource string, gaps []UnguardedTable) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: a lock on %s is refused: table %s %s", ErrUnguarded, resource, gaps[0].Table, gaps[0].Reason)
	if len(gaps) > 1 {
		others := make([]string, 0, len(gaps)-1)
		for _, g := range gaps[1:] {
			others = append(others, g.Table+" ("+g.State+")")
		}
		fmt.Fprintf(&b, "; so are %s", strings.Join(others, ", "))
	}
	fmt.Fprintf(&b, "; other clients could write the record while it is held. %s", p.installAdvice(gaps))
	return &unguardedError{msg: b.String()}
}

// installAdvice is the way out for gaps.
func (p *Plugin) installAdvice(gaps []UnguardedTable) string {
	for _, g := range gaps {
		if g.State == lockstore.GuardNewer {
			return "Upgrade this node's offlinelock to the version that installed the guard: it grants nothing until then, and leaves the guard as it is"
		}
	}
	for _, g := range gaps {
		if g.State != "unguardable" {
			return fmt.Sprintf("Run `offlinelock guard install --dsn <the tables' owner's DSN> --table %s` (or Plugin.InstallGuard as the tables' owner), "+
				"or set Config.DisableGuard to run without the guard", p.cfg.Table)
		}
	}
	return fmt.Sprintf("Change the schema as said, then run `offlinelock guard install --dsn <the tables' owner's DSN> --table %s`", p.cfg.Table)
}

// coverageFor is the coverage a grant reads: the last one shown while
// nothing the plugin knows of has changed since, else shown again now.
// A coverage older than Config.GuardCheckEvery is read again in the
// background.
func (b *binding) coverageFor(db *gorm.DB, g lockstore.Guard) *coverage {
	gs, reg := &b.guard, b.p.reg
	if cv := gs.cover.Load(); cv != nil && cv.gen == gs.gen.Load() && cv.reg == reg.Changes.Load() && cv.tables == reg.TablesGen.Load() {
		if time.Since(cv.at) >= b.p.checkEvery() && gs.refreshing.CompareAndSwap(false, true) {
			bg := b.p.guardSession(db)
			go func() {
				defer gs.refreshing.Store(false)
				b.showCoverage(bg, g, true)
			}()
		}
		return cv
	}
	ctx, cancel := detached(db)
	defer cancel()
	gs.waitPending(ctx, !inTx(db)) // an install under way in the background: its end is shown, not its start
	return b.showCoverage(b.p.guardSession(db).WithContext(ctx), g, false)
}

// waitPending waits, until ctx ends, for the installs under way in the
// background (guardTable) to end.
//
// Inside a caller's transaction (block false) it does not wait for mu: an
// install holding it may wait for the connection the transaction holds.
func (gs *guardState) waitPending(ctx context.Context, block bool) {
	if block {
		gs.mu.Lock()
	} else if !gs.mu.TryLock() {
		return
	}
	pending := slices.Collect(maps.Values(gs.pending))
	gs.mu.Unlock()
	for _, ch := range pending {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// showCoverage reads again which tables the guard covers, and keeps it
// for grants. With full, every table's triggers and routines are read
// from the database (the periodic check, UnguardedTables); else a table
// this process installed the guard on, at the version it plans now,
// counts as covered without a read. A table found not covered that this
// process took for guarded is forgotten, so that the next statement on it
// installs the guard again.
func (b *binding) showCoverage(db *gorm.DB, g lockstore.Guard, full bool) *coverage {
	p, gs := b.p, &b.guard
	gs.coverMu.Lock()
	defer gs.coverMu.Unlock()
	cv := &coverage{gen: gs.gen.Load(), reg: p.reg.Changes.Load(), tables: p.reg.TablesGen.Load(), at: time.Now()}
	if old := gs.cover.Load(); !full && old != nil && old.gen == cv.gen && old.reg == cv.reg && old.tables == cv.tables {
		return old // shown by another grant meanwhile
	}
	p.learnParsed(db)
	cv.reg, cv.tables = p.reg.Changes.Load(), p.reg.TablesGen.Load()
	cv.gaps, cv.all, cv.err = b.readCoverage(db, g, full)
	if cv.err == nil && full {
		b.forgetUncovered(db, cv.all)
	}
	gs.cover.Store(cv)
	return cv
}

// readCoverage reads which tables that can hold rows of lockable records
// the guard does not cover, by resource and in all.
func (b *binding) readCoverage(db *gorm.DB, g lockstore.Guard, full bool) (map[string][]UnguardedTable, []UnguardedTable, error) {
	p, gs := b.p, &b.guard
	c := direct(db)
	specs, err := b.t.specs(c)
	if err != nil && !tableGone(err) {
		return nil, nil, err
	}
	// The models this process knows whose catalog rows it has not read
	// (written in a caller's transaction not yet committed): their
	// tables count too.
	for _, m := range p.reg.Lockable() {
		if m.Type == nil || m.Err != nil || slices.ContainsFunc(specs, func(s model.Spec) bool { return strings.EqualFold(s.Table, m.Table) }) {
			continue
		}
		specs = append(specs, p.reg.SpecOf(m))
	}
	shown := guard.Shown{Busy: gs.busyTable, State: func(plan guardPlan) (string, error) { return b.tableState(db, g, plan) }}
	if !full && gs.mu.TryLock() { // else an install under way holds it (and may wait for the caller's connection): every table is read
		shown.Installed = maps.Clone(gs.tables)
		gs.mu.Unlock()
	}
	found, err := guard.Gaps(c, g, guardTables(specs), shown)
	if err != nil {
		return nil, nil, err
	}
	var all []UnguardedTable
	gaps := map[string][]UnguardedTable{}
	for _, f := range found {
		u := UnguardedTable{Table: f.Table, Resources: f.Resources, State: f.State, Reason: f.Reason}
		all = append(all, u)
		for _, r := range u.Resources {
			gaps[r] = append(gaps[r], u)
		}
	}
	return gaps, all, nil
}

// tableStateWait bounds the read of one table's guard for a coverage: a
// table whose metadata waits behind an install queued for a lock is
// taken as not shown, not waited for.
const tableStateWait = time.Second

// tableState is g.TableState of plan, read within tableStateWait.
func (b *binding) tableState(db *gorm.DB, g lockstore.Guard, plan guardPlan) (string, error) {
	ctx, cancel := context.WithTimeout(ctxOf(db), tableStateWait)
	defer cancel()
	return g.TableState(direct(db.WithContext(ctx)), plan)
}

// forgetUncovered makes the tables of gaps that this process took for
// guarded be guarded again by their next statement.
func (b *binding) forgetUncovered(db *gorm.DB, gaps []UnguardedTable) {
	gs := &b.guard
	forgot := false
	gs.mu.Lock()
	for _, u := range gaps {
		// the table, and its records' root tables: their next statement
		// installs the guard of their whole aggregate (guardTableFor)
		for _, name := range append([]string{u.Table}, u.Resources...) {
			if _, ok := gs.tables[name]; ok {
				delete(gs.tables, name)
				forgot = true
			}
		}
	}
	gs.mu.Unlock()
	if forgot {
		b.forget() // every model is prepared again: its next statement installs
	}
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
	g, ok := p.guardGoverns(b)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctxOf(db), coverWait)
	b.guard.waitPending(ctx, !inTx(db)) // an install under way: its end is shown
	cancel()
	cv := b.showCoverage(p.background(db).WithContext(ctxOf(db)).Session(&gorm.Session{Logger: logger.Discard}), g, true)
	if cv.err != nil {
		return nil, cv.err
	}
	return slices.Clone(cv.all), nil
}

// detached is the context of the plugin's own work on a grant's way
// (showing the coverage, a repair): bounded by coverWait and ended with
// the caller's, but outside its trace, as the plugin's installs are.
func detached(db *gorm.DB) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), coverWait)
	stop := context.AfterFunc(ctxOf(db), cancel)
	return ctx, func() { stop(); cancel() }
}

// inTx says whether db's statement runs in a caller's transaction.
func inTx(db *gorm.DB) bool {
	_, ok := db.Statement.ConnPool.(gorm.TxCommitter)
	return ok
}

// unguardedCount is how many tables the last coverage shown on b found
// not covered, for the gauge; -1 when none was shown yet.
func (b *binding) unguardedCount() int64 {
	cv := b.guard.cover.Load()
	if cv == nil {
		return -1
	}
	return int64(len(cv.all))
}
