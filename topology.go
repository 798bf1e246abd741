package offlinelock

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/offlinelock/offlinelock/internal/galera"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
)

// clusterConflict tells a write that lost certification (1213 at COMMIT)
// as the lock answer it is: ErrNotLocked when its lock is gone (another
// node took it over or released it), naming the cluster conflict; when
// the lock still holds, the conflict was over the data, and the error says
// to retry.
func (p *Plugin) clusterConflict(db *gorm.DB, st *state) {
	if st.t == nil || !st.t.Store.Galera() || !lockstore.TxRolledBack(db.Error) || len(st.required) == 0 {
		return
	}
	free, lost, ok := lostLocks(p.background(db), st.t, st.required, st.owner)
	switch {
	case !ok:
	case len(free) > 0:
		db.Error = fmt.Errorf("%w; the %s was rolled back: another node of the Galera cluster committed a conflicting write of the lock first (a takeover or a release%s), and the cluster refused this one at COMMIT: %w",
			notLockedForWrite(st.op, free), st.op, lost, db.Error)
	default:
		db.Error = fmt.Errorf("offlinelock: the %s of %s lost the Galera cluster's certification to a conflicting write on another node and was rolled back; the lock still holds: retry it: %w", st.op, db.Statement.Table, db.Error)
	}
}

// lostLocks checks on bg, after a rollback on Galera, which of keys owner
// no longer holds: free, and lost saying who holds one now; ok is false
// when the check itself failed.
func lostLocks(bg *gorm.DB, t lockStore, keys []key, owner Owner) (free []key, lost string, ok bool) {
	_, free, err := t.check(direct(bg), keys, owner, false)
	if le := (*LockedError)(nil); errors.As(err, &le) {
		return []key{{Resource: le.Resource, ID: le.ID}}, " (" + le.Error() + ")", true
	}
	return free, "", err == nil
}

// confirmGrants reads back on Galera, after the plugin's own transaction
// of a load committed, the locks the load newly took: a transaction rolled
// back for another node's write while a SELECT ran still commits, with
// nothing in it (internal/lockstore/galera.go). A lock another session
// holds is refused with its holders.
func (p *Plugin) confirmGrants(db *gorm.DB, st *state) error {
	c := st.caps.Certifier
	if c == nil || st.op != opLoad || st.m == nil {
		return nil
	}
	var keys []key
	for k, n := range st.newly {
		if n {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return public(c.Confirm(direct(p.background(db)), keys, lockstore.Owner(st.owner), lockstore.Access(loadAccess(st.m))))
}

// watchCommit adds st's fenced write to the watch of its transaction, if
// any (galera.WatchOf), on Galera, once the statement succeeded in its
// caller's transaction: the cluster may refuse its COMMIT for a lock the
// write needed that another node took over or released meanwhile.
func (p *Plugin) watchCommit(db *gorm.DB, st *state) {
	if st.ownTx || st.t == nil || len(st.required) == 0 || !st.t.Store.Galera() {
		return
	}
	w := galera.WatchOf(ctxOf(db), db)
	if w == nil {
		return
	}
	t, keys, owner, op := st.t, slices.Clone(st.required), st.owner, st.op
	w.Add(func(db *gorm.DB, err error) error {
		if free, _, ok := lostLocks(p.background(db), t, keys, owner); ok && len(free) > 0 {
			return fmt.Errorf("%w; the transaction was rolled back at COMMIT: another node of the Galera cluster committed a conflicting write of the lock first (a takeover or a release), and the cluster refused this one: %w",
				notLockedForWrite(op, free), err)
		}
		return nil
	})
}

// Transaction runs fn in a transaction on db, as db.Transaction does, and
// tells a Galera cluster's refusal of its COMMIT as the lock answer it is:
// ErrNotLocked (naming the record) when a lock one of its writes needed
// was taken over or released on another node meanwhile. Otherwise it
// returns what db.Transaction returns.
func (p *Plugin) Transaction(db *gorm.DB, fn func(tx *gorm.DB) error, opts ...*sql.TxOptions) error {
	w := &galera.Watch{}
	err := db.WithContext(galera.WithWatch(ctxOf(db), w)).Transaction(fn, opts...)
	if err != nil {
		err = w.Told(db, err)
	}
	return err
}

// The primary decides (docs/scaling.md): statements about locks, and loads
// the plugin takes part in or a session makes, go back to a read router's
// source the way dbresolver.Write sends them, by dbresolver's own setting
// names (the plugin does not import it).
const (
	resolverCallback = "gorm:db_resolver"
	resolverWrite    = "gorm:db_resolver:write"
	resolverRead     = "gorm:db_resolver:read"
)

// routeToPrimary moves db's statement to its router's source, unless it
// runs in a transaction (which stays where it began) or no router is
// registered.
func routeToPrimary(db *gorm.DB) {
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx {
		return
	}
	fc := db.Callback().Query().Get(resolverCallback)
	if fc == nil {
		return
	}
	db.Statement.Settings.Delete(resolverRead)
	db.Statement.Settings.Store(resolverWrite, struct{}{})
	fc(db)
}

// onPrimary is db for one of the plugin's own calls (Acquire, …): itself
// on the database's own connection (the router's source), otherwise a new
// session routed to the source (a root *gorm.DB's statement is shared).
func onPrimary(db *gorm.DB) *gorm.DB {
	if db == nil || db.Statement == nil || db.Statement.ConnPool == db.Config.ConnPool {
		return db
	}
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx {
		return db
	}
	if db.Callback().Query().Get(resolverCallback) == nil {
		return db
	}
	s := db.Session(&gorm.Session{})
	routeToPrimary(s)
	return s
}

// loadOnPrimary routes a load of m to the source when the plugin takes
// part in it (m locks on load) or a session makes it (its reads of records
// it holds must not be stale). An owner-less load of an exclusive_write
// model, and one that asks for a replica itself (dbresolver.Read), stay
// where the router sent them.
func (p *Plugin) loadOnPrimary(db *gorm.DB, m *model.Model) {
	if m == nil || !m.Lockable || db.Statement.ConnPool == db.Config.ConnPool {
		return
	}
	if !m.LocksOnLoad() {
		if _, asked := db.Statement.Settings.Load(resolverRead); asked {
			return
		}
		if _, err := ownerOf(db); err != nil {
			return
		}
	}
	routeToPrimary(db)
}
