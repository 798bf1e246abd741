package guard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// No guard, no grant (docs/guard.md, "What a grant costs").

// ErrUnguarded reports a lock refused because the guard does not cover
// every table that can hold a row of the record (the root's ErrUnguarded).
var ErrUnguarded = errors.New("offlinelock: the database guard does not cover the record")

// coverWait bounds how long a grant waits for the coverage it needs
// shown again (a few catalog reads).
const coverWait = 5 * time.Second

// tableStateWait bounds the read of one table's guard for a coverage: one
// queued behind an install's lock is taken as not shown.
const tableStateWait = time.Second

// coverage is what the Keeper last showed of the guard.
type coverage struct {
	gen, learnt uint64 // Keeper.gen, and the models' Changes + TablesGen, it was shown at
	at          time.Time
	gaps        map[string][]Gap // lock resource (lower case) → its tables not covered
	all         []Gap
	err         error // the coverage could not be read: every grant is refused with it
}

// refusal is a grant refused by the coverage: errors.Is holds for
// ErrUnguarded and the Keeper's Config.Unenforceable.
type refusal struct {
	msg  string
	also error
}

func (e *refusal) Error() string { return e.msg }

// Is makes errors.Is true for ErrUnguarded and Config.Unenforceable.
func (e *refusal) Is(target error) bool {
	return target == ErrUnguarded || target == e.also && target != nil
}

// Check refuses a grant on resource when the guard does not cover every
// table that can hold a row of its records (BenchmarkGrantGuardCheck).
func (k *Keeper) Check(db *gorm.DB, resource string) error {
	if k.cfg.Off || k.cfg.Guard == nil { // Governs, without a call on every grant
		return nil
	}
	cv := k.coverageFor(db)
	if cv.err == nil && len(cv.gaps) == 0 {
		return nil
	}
	gaps := cv.gaps[strings.ToLower(resource)]
	if (cv.err != nil || len(gaps) > 0) && k.repair(db, resource) {
		cv = k.coverageFor(db)
		gaps = cv.gaps[strings.ToLower(resource)]
	}
	if cv.err != nil {
		return &refusal{msg: fmt.Sprintf("%v: reading whether the database guard covers %s failed: %v; the lock is refused until it can be read", ErrUnguarded, resource, cv.err), also: k.cfg.Unenforceable}
	}
	if len(gaps) > 0 {
		return k.refuse(resource, gaps)
	}
	return nil
}

// repair installs, on a grant's way outside a caller's transaction, the
// guard of resource's aggregate that the coverage found missing, and
// reports whether it tried.
func (k *Keeper) repair(db *gorm.DB, resource string) bool {
	m := k.cfg.Models.TableModel(resource)
	if m == nil || k.cfg.Leave || !k.cfg.Guard.InstallOnStatementsWay() || inTx(db) {
		return false
	}
	// Once a second at most: a table the guard cannot follow would
	// otherwise cost every refused grant an install's statements.
	at := k.repairAt.Load()
	if now := time.Now().UnixNano(); now-at < int64(time.Second) || !k.repairAt.CompareAndSwap(at, now) {
		return false
	}
	ctx, cancel := detached(db)
	defer cancel()
	k.waitPending(ctx, true)
	k.logError(db, m, k.install(k.session(db).WithContext(ctx), m))
	return true
}

// refuse is the refusal of a grant on resource, naming its first table
// not covered, what is missing and the command that fixes it.
func (k *Keeper) refuse(resource string, gaps []Gap) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: a lock on %s is refused: table %s %s", ErrUnguarded, resource, gaps[0].Table, gaps[0].Reason)
	if len(gaps) > 1 {
		others := make([]string, 0, len(gaps)-1)
		for _, g := range gaps[1:] {
			others = append(others, g.Table+" ("+g.State+")")
		}
		fmt.Fprintf(&b, "; so are %s", strings.Join(others, ", "))
	}
	fmt.Fprintf(&b, "; other clients could write the record while it is held. %s", k.advice(gaps))
	return &refusal{msg: b.String(), also: k.cfg.Unenforceable}
}

// advice is the way out for gaps.
func (k *Keeper) advice(gaps []Gap) string {
	for _, g := range gaps {
		if g.State == lockstore.GuardNewer {
			return "Upgrade this node's offlinelock to the version that installed the guard: it grants nothing until then, and leaves the guard as it is"
		}
	}
	for _, g := range gaps {
		if g.State != "unguardable" {
			return fmt.Sprintf("Run `offlinelock guard install --dsn <the tables' owner's DSN> --table %s` (or Plugin.InstallGuard as the tables' owner), "+
				"or set Config.DisableGuard to run without the guard", k.cfg.LockTable)
		}
	}
	return fmt.Sprintf("Change the schema as said, then run `offlinelock guard install --dsn <the tables' owner's DSN> --table %s`", k.cfg.LockTable)
}

// coverageFor is the last coverage shown while nothing it knows of changed,
// else shown again now; one older than CheckEvery is read in the background.
func (k *Keeper) coverageFor(db *gorm.DB) *coverage {
	if cv := k.cover.Load(); cv != nil && cv.gen == k.gen.Load() && cv.learnt == k.cfg.Models.Changes.Load()+k.cfg.Models.TablesGen.Load() {
		if time.Since(cv.at) >= k.cfg.CheckEvery && k.refreshing.CompareAndSwap(false, true) {
			bg := k.session(db)
			go func() {
				defer k.refreshing.Store(false)
				k.showCoverage(bg, true)
			}()
		}
		return cv
	}
	ctx, cancel := detached(db)
	defer cancel()
	k.waitPending(ctx, !inTx(db)) // an install under way in the background: its end is shown, not its start
	return k.showCoverage(k.session(db).WithContext(ctx), false)
}

// Unguarded reads now the gaps of the guard, and shows them to grants; nil
// where grants do not depend on the guard.
func (k *Keeper) Unguarded(db *gorm.DB) ([]Gap, error) {
	if !k.Governs() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctxOf(db), coverWait)
	k.waitPending(ctx, !inTx(db)) // an install under way: its end is shown
	cancel()
	cv := k.showCoverage(k.cfg.Host.Background(db).WithContext(ctxOf(db)).Session(&gorm.Session{Logger: logger.Discard}), true)
	if cv.err != nil {
		return nil, cv.err
	}
	return slices.Clone(cv.all), nil
}

// detached is the context of the Keeper's work on a grant's way: bounded
// by coverWait, ended with the caller's, outside its trace.
func detached(db *gorm.DB) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), coverWait)
	stop := context.AfterFunc(ctxOf(db), cancel)
	return ctx, func() { stop(); cancel() }
}

// Count is how many tables the last coverage shown found not covered,
// for the gauge; -1 when none was shown yet.
func (k *Keeper) Count() int64 {
	cv := k.cover.Load()
	if cv == nil {
		return -1
	}
	return int64(len(cv.all))
}

// showCoverage reads again which tables the guard covers, and keeps it
// for grants. Without full, a table this process installed at the version
// it plans now counts as covered without a read; with full, a table found
// not covered is forgotten, so that its next statement installs again.
func (k *Keeper) showCoverage(db *gorm.DB, full bool) *coverage {
	k.coverMu.Lock()
	defer k.coverMu.Unlock()
	cv := &coverage{gen: k.gen.Load(), learnt: k.cfg.Models.Changes.Load() + k.cfg.Models.TablesGen.Load(), at: time.Now()}
	if old := k.cover.Load(); !full && old != nil && old.gen == cv.gen && old.learnt == cv.learnt {
		return old // shown by another grant meanwhile
	}
	k.cfg.Models.LearnParsed(db)
	cv.learnt = k.cfg.Models.Changes.Load() + k.cfg.Models.TablesGen.Load()
	cv.all, cv.err = k.readCoverage(db, full)
	if cv.err == nil {
		cv.gaps = map[string][]Gap{}
		for _, g := range cv.all {
			for _, r := range g.Resources {
				cv.gaps[r] = append(cv.gaps[r], g)
			}
		}
		if full {
			k.forgetUncovered(cv.all)
		}
	}
	k.cover.Store(cv)
	return cv
}

// readCoverage reads which tables that can hold rows of lockable records
// the guard does not cover.
func (k *Keeper) readCoverage(db *gorm.DB, full bool) ([]Gap, error) {
	tables, err := k.cfg.Host.Catalog(db)
	if err != nil && !lockstore.IsMissingTable(err) {
		return nil, err
	}
	// Models whose catalog rows are not committed yet count too.
	for _, m := range k.cfg.Models.Lockable() {
		if m.Type == nil || m.Err != nil || slices.ContainsFunc(tables, func(s model.Spec) bool { return strings.EqualFold(s.Table, m.Table) }) {
			continue
		}
		tables = append(tables, k.cfg.Models.SpecOf(m))
	}
	shown := Shown{Busy: k.busyTable, State: func(plan lockstore.GuardPlan) (string, error) {
		ctx, cancel := context.WithTimeout(ctxOf(db), tableStateWait)
		defer cancel()
		return k.cfg.Guard.TableState(k.cfg.Host.Conn(db.WithContext(ctx)), plan)
	}}
	if !full && k.mu.TryLock() { // else an install under way holds it (and may wait for the caller's connection): every table is read
		shown.Installed = maps.Clone(k.tables)
		k.mu.Unlock()
	}
	return Gaps(k.cfg.Host.Conn(db), k.cfg.Guard, tables, shown)
}

// forgetUncovered makes the tables of gaps that this process took for
// guarded be guarded again by their next statement.
func (k *Keeper) forgetUncovered(gaps []Gap) {
	forgot := false
	k.mu.Lock()
	for _, u := range gaps {
		for _, name := range append([]string{u.Table}, u.Resources...) {
			if _, ok := k.tables[name]; ok {
				delete(k.tables, name)
				forgot = true
			}
		}
	}
	k.mu.Unlock()
	if forgot {
		k.cfg.Host.Forget() // every model is prepared again: its next statement installs
	}
}
