package offlinelock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
)

// Galera (MariaDB's multi-primary cluster) certifies each transaction's
// write set at COMMIT against the write sets the cluster ordered before it,
// and a failure is error 1213 at COMMIT (docs/scaling.md). Reads take no
// part: row locks are a node's own. The fence reads the key rows, so a
// save certified after another node's takeover could commit, or be
// replayed, after the new grant. So on Galera the fence also writes them:
// it moves the writer's own key rows' expiry by one microsecond, which puts
// them in its write set, where a takeover's or a release's write of the
// same rows makes one of the two fail certification.

// clusterConflict tells a write that lost certification (1213 at COMMIT)
// as the lock answer it is: ErrNotLocked when its lock is gone (another
// node took it over or released it), naming the cluster conflict; when
// the lock still holds, the conflict was over the data, and the error says
// to retry.
func (p *Plugin) clusterConflict(db *gorm.DB, st *state) {
	if st.t == nil || !st.t.Store.Galera() || !lockstore.TxRolledBack(db.Error) || len(st.required) == 0 {
		return
	}
	_, free, err := st.t.check(direct(p.background(db)), st.required, st.owner, false)
	var le *LockedError
	lost := ""
	switch {
	case errors.As(err, &le):
		lost, free = " ("+le.Error()+")", []key{{Resource: le.Resource, ID: le.ID}}
	case err != nil:
		return
	}
	if len(free) > 0 {
		db.Error = fmt.Errorf("%w; the %s was rolled back: another node of the Galera cluster committed a conflicting write of the lock first (a takeover or a release%s), and the cluster refused this one at COMMIT: %w",
			notLockedForWrite(st.op, free), st.op, lost, db.Error)
		return
	}
	db.Error = fmt.Errorf("offlinelock: the %s of %s lost the Galera cluster's certification to a conflicting write on another node and was rolled back; the lock still holds: retry it: %w", st.op, db.Statement.Table, db.Error)
}

// confirmGrants reads back, after the plugin's own transaction of a load
// committed, the locks the load newly took, on Galera: a node that rolled
// the transaction back for another node's conflicting write while a SELECT
// of it ran reports that as a warning, and the COMMIT that follows
// succeeds with nothing to commit (internal/lockstore/galera.go). A lock
// another session holds is refused with its holders, as if the load had
// met it.
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

// commitWatch collects, inside a transaction whose COMMIT the plugin sends
// for its caller (Do, Transaction), the records each fenced write of it
// needed on Galera: a certification failure comes only at that COMMIT,
// after every statement's callbacks have returned, so this is what tells
// it as the lock answer it is. GORM commits a caller's own transaction
// (db.Transaction, Begin and Commit) with no callback: the plugin's pool
// on Galera sees that COMMIT (galera_commit.go).
type commitWatch struct {
	mu     sync.Mutex
	writes []watchedWrite
}

// watchedWrite is one fenced write of a watched transaction.
type watchedWrite struct {
	t     lockStore
	keys  []key
	owner Owner
	op    opKind
}

// commitWatchKey is the context key of a transaction's commitWatch.
type commitWatchKey struct{}

// watchCommit records st's fenced write in the watch of its transaction,
// if any (commitWatchOf), on Galera, once the statement succeeded in its
// caller's transaction.
func watchCommit(db *gorm.DB, st *state) {
	if st.ownTx || st.t == nil || len(st.required) == 0 || !st.t.Store.Galera() {
		return
	}
	w := commitWatchOf(db)
	if w == nil {
		return
	}
	w.mu.Lock()
	w.writes = append(w.writes, watchedWrite{t: st.t, keys: slices.Clone(st.required), owner: st.owner, op: st.op})
	w.mu.Unlock()
}

// commitConflict tells err, the error of a watched transaction, as
// ErrNotLocked when it is a rollback at COMMIT (1213, or ErrTxLost) and a
// lock one of its fenced writes needed is gone: another node took it over
// or released it, and the cluster refused this transaction for it.
func (p *Plugin) commitConflict(db *gorm.DB, w *commitWatch, err error) error {
	if !lockstore.TxRolledBack(err) || errors.Is(err, ErrNotLocked) || errors.Is(err, ErrLocked) {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wr := range w.writes {
		_, free, cerr := wr.t.check(direct(p.background(db)), wr.keys, wr.owner, false)
		var le *LockedError
		switch {
		case errors.As(cerr, &le):
			free = []key{{Resource: le.Resource, ID: le.ID}}
		case cerr != nil:
			continue
		}
		if len(free) > 0 {
			return fmt.Errorf("%w; the transaction was rolled back at COMMIT: another node of the Galera cluster committed a conflicting write of the lock first (a takeover or a release), and the cluster refused this one: %w",
				notLockedForWrite(wr.op, free), err)
		}
	}
	return err
}

// Transaction runs fn in a transaction on db, as db.Transaction does, and
// tells a Galera cluster's refusal of its COMMIT as the lock answer it is:
// ErrNotLocked (naming the record) when a lock one of its writes needed
// was taken over or released on another node meanwhile. Elsewhere, and
// for any other error, it returns what db.Transaction returns. On a pool
// that is database/sql's own, db.Transaction does the same (the plugin's
// pool sees its COMMIT, galera_commit.go); this works on any pool.
func (p *Plugin) Transaction(db *gorm.DB, fn func(tx *gorm.DB) error, opts ...*sql.TxOptions) error {
	w := &commitWatch{}
	err := db.WithContext(context.WithValue(ctxOf(db), commitWatchKey{}, w)).Transaction(fn, opts...)
	if err != nil {
		err = p.commitConflict(db, w, err)
	}
	return err
}
