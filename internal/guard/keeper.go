package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Keeper is what a Plugin knows and does of the guard on one database:
// its tables, installs, key and coverage. Until Init it has no guard.
type Keeper struct {
	cfg     Config
	mu      sync.Mutex
	routine bool                     // the shared routine is installed, this process
	tables  map[string]string        // table (lower case) → the version installed
	pending map[string]chan struct{} // tables being guarded in the background: closed when done
	busy    map[string]time.Time     // tables whose install timed out waiting for a lock → until when statements leave them alone

	// MarkKey is the guard's key on MySQL/MariaDB, which the identity's
	// mark is keyed with (LoadKey). Callers only read it.
	MarkKey atomic.Pointer[string]

	// What grants read: gen advances with every change of tables.
	gen        atomic.Uint64
	cover      atomic.Pointer[coverage] // the last coverage shown, as of gen
	coverMu    sync.Mutex               // one coverage computed at a time
	refreshing atomic.Bool              // a periodic check is under way
	repairAt   atomic.Int64             // when a grant last tried to repair, in Unix nanoseconds (repair)
}

// Config is what the plugin on one database gives its Keeper.
type Config struct {
	Guard         lockstore.Guard // the store's guard; nil where the database has none (SQLite)
	Off, Leave    bool            // Config.DisableGuard, Config.LeaveGuard
	RecordOnly    bool            // Config.GuardNamesRecordOnly
	CheckEvery    time.Duration   // how old a coverage may grow before it is read again
	LockTable     string          // named in the ways out
	Logger        *slog.Logger
	Unenforceable error           // what a grant refused for a gap also is (errors.Is)
	Models        *model.Registry // the plugin's models, whose tables are guarded
	Host          Host
}

// Host is what a Keeper asks of the plugin on its database.
type Host interface {
	// Background is a session on db's pool, outside any transaction of
	// the caller's, that outlives db's context.
	Background(db *gorm.DB) *gorm.DB
	// Conn is a connection for the plugin's statements on db.
	Conn(db *gorm.DB) lockstore.Conn
	// Catalog reads the catalog's rows on db.
	Catalog(db *gorm.DB) ([]model.Spec, error)
	// Remember writes m's row to the catalog on db.
	Remember(db *gorm.DB, m *model.Model) error
	// Forget makes every model be prepared again: its next statement
	// guards its table.
	Forget()
}

// Init gives k its configuration, before any other call.
func (k *Keeper) Init(cfg Config) { k.cfg = cfg }

// Governs says whether grants need the guard: it is on and the database has one.
func (k *Keeper) Governs() bool { return !k.cfg.Off && k.cfg.Guard != nil }

// Key is the guard's key, or "" while it is not known (no guard: a mark
// no guard reads).
func (k *Keeper) Key() string {
	if key := k.MarkKey.Load(); key != nil {
		return *key
	}
	return ""
}

// LoadKey reads the guard's key, for the identity's mark on MySQL/MariaDB
// (PostgreSQL signs in the database itself).
func (k *Keeper) LoadKey(c lockstore.Conn) error {
	g := k.cfg.Guard
	if k.cfg.Off || g == nil || !g.KeyedMark() {
		return nil
	}
	key, err := g.GuardKey(c)
	if err != nil && !lockstore.IsMissingTable(err) {
		return fmt.Errorf("offlinelock: reading the guard's key: %w%s", err, lockstore.OwnerHint(err))
	}
	k.MarkKey.Store(&key)
	return nil
}

// changed makes the next grant show the guard's coverage again: called
// with every change of tables.
func (k *Keeper) changed() { k.gen.Add(1) }

// ForgetSoon makes table be guarded again by its next install unless one
// under way holds mu, and the next grant show the coverage again.
func (k *Keeper) ForgetSoon(table string) {
	if k.mu.TryLock() {
		delete(k.tables, strings.ToLower(table))
		k.mu.Unlock()
	}
	k.changed()
}

// forget makes the next install of table look at the database again.
func (k *Keeper) forget(table string) {
	k.mu.Lock()
	delete(k.tables, strings.ToLower(table))
	k.mu.Unlock()
	k.changed()
}

// has says whether table is known to carry the guard (or, with the guard
// off, to have had its partitions' names learnt).
func (k *Keeper) has(table string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.tables[strings.ToLower(table)]
	return ok
}

// busyTable says whether an install timed out waiting for table in the
// last busyFor.
func (k *Keeper) busyTable(table string) bool {
	if !k.mu.TryLock() {
		return false // an install under way: it knows better soon
	}
	defer k.mu.Unlock()
	until, ok := k.busy[strings.ToLower(table)]
	return ok && time.Now().Before(until)
}

// waitPending waits, until ctx ends, for the background installs; without
// block, not for mu, whose holder may wait for the caller's connection.
func (k *Keeper) waitPending(ctx context.Context, block bool) {
	if block {
		k.mu.Lock()
	} else if !k.mu.TryLock() {
		return
	}
	pending := slices.Collect(maps.Values(k.pending))
	k.mu.Unlock()
	for _, ch := range pending {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// Install installs, or upgrades in place, the guard on every table of the
// catalog that exists (Plugin.InstallGuard), after the background ones.
func (k *Keeper) Install(db *gorm.DB) error {
	if k.cfg.Guard == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctxOf(db), coverWait)
	k.waitPending(ctx, !inTx(db))
	cancel()
	tables, err := k.cfg.Host.Catalog(k.cfg.Host.Background(db))
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.routine, k.tables = false, nil // a table may have been made again, without its triggers
	k.mu.Unlock()
	k.changed()
	k.cfg.Host.Forget()
	return k.ensure(db, tables, false)
}

// Remove drops the guard from every table that carries it, and its
// routines (Plugin.RemoveGuard, which checks the privileges first).
func (k *Keeper) Remove(db *gorm.DB) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.routine, k.tables = false, nil
	defer k.changed()
	defer k.cfg.Host.Forget() // the next statement on a table guards it again
	return k.cfg.Guard.RemoveGuard(k.cfg.Host.Conn(k.cfg.Host.Background(db)))
}

// ensure installs or upgrades the guard of every table of tables that
// exists, on a connection of its own; with skipBusy, not a busy table's.
func (k *Keeper) ensure(db *gorm.DB, tables []model.Spec, skipBusy bool) error {
	g, h := k.cfg.Guard, k.cfg.Host
	c := h.Conn(h.Background(db).WithContext(ctxOf(db))) // a deadline of db's bounds the install
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tables == nil {
		k.tables = map[string]string{}
	}
	if k.busy == nil {
		k.busy = map[string]time.Time{}
	}
	if !k.routine {
		if err := g.InstallGuardRoutine(c); errors.Is(err, lockstore.ErrGrantExecute) {
			return err // in place: the grant it names is the way out, not an install
		} else if err != nil {
			return installError("the guard routine", err)
		}
		if err := k.LoadKey(c); err != nil {
			return err
		}
		k.routine = true
	}
	defer k.changed()
	// A table the guard cannot follow is left out; the first failure is returned.
	fails := map[string]Failure{}
	plans, err := Plan(c, g, tables, fails)
	if err != nil {
		return err
	}
	var first error
	if len(fails) > 0 {
		first = fails[slices.Min(slices.Collect(maps.Keys(fails)))].Err
	}
	for _, plan := range plans {
		if m := k.cfg.Models.TableModel(plan.Inherits); plan.Inherits != "" && m != nil {
			k.cfg.Models.StoreAlias(plan.Table, m) // a partition's name is its table's, to the plugin too (Strict, Table("…"))
		}
	}
	if err := k.installPlans(c, plans, skipBusy); err != nil && (first == nil || lockstore.IsLockTimeout(err)) {
		first = err
	}
	return first
}

// session is where an install on a statement's way runs: outside the
// caller's transaction and statement log.
func (k *Keeper) session(db *gorm.DB) *gorm.DB {
	return k.cfg.Host.Background(db).Session(&gorm.Session{Logger: logger.Discard})
}

// Refused reads in db.Error the guard's refusal of a write of a held
// record; its Resource is the statement's table where the message was cut.
func (k *Keeper) Refused(db *gorm.DB) (lockstore.GuardRefusal, bool) {
	if !k.Governs() {
		return lockstore.GuardRefusal{}, false
	}
	var tables []string
	for _, m := range k.cfg.Models.Lockable() {
		tables = append(tables, m.Table)
	}
	r, ok := k.cfg.Guard.GuardRefusal(db.Error, tables)
	if ok && r.Resource == "" {
		r.Resource = db.Statement.Table
	}
	return r, ok
}

// Guarded lists, in order, the tables that carry the guard, as the
// database reports them (lower case).
func Guarded(c lockstore.Conn, g lockstore.Guard) ([]string, error) {
	have, err := g.GuardedTables(c)
	if err != nil {
		return nil, err
	}
	out := slices.AppendSeq(make([]string, 0, len(have)), maps.Keys(have))
	slices.Sort(out)
	return out, nil
}

// ctxOf is db's statement context, never nil.
func ctxOf(db *gorm.DB) context.Context {
	if ctx := db.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}

// inTx says whether db's statement runs in a caller's transaction.
func inTx(db *gorm.DB) bool {
	_, ok := db.Statement.ConnPool.(gorm.TxCommitter)
	return ok
}
