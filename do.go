package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ErrLockLost is the cause with which Do cancels its edit's context when
// the lock it holds for the edit is lost meanwhile (expired and taken
// over, or force-released); errors.Is(err, ErrNotLocked) is true of it.
var ErrLockLost = fmt.Errorf("%w: the lock was lost while the edit ran", ErrNotLocked)

// Do runs edit while the owner in db's context holds target's Write lock:
// the pattern of a background job, in the spirit of pglock's Do. It
//
//   - takes the lock with Acquire: a record another session holds is
//     refused at once with a *LockedError (skip it; try again later);
//   - runs edit in a transaction on db, whose context is cancelled, with
//     cause ErrLockLost, if the lock is lost while edit runs;
//   - renews the lock every third of its lifetime until edit returns, on
//     a connection of its own (with Renew, which extends every live lock of
//     the session: give each job run a session of its own). Edit's transaction holds the key row from
//     its first write of the record (PostgreSQL, MySQL) and SQLite's one
//     write lock from its start, and a renewal waits for it: so nobody can
//     take the lock over while edit runs, and the lock must outlive what
//     edit does after its first write (on SQLite, all of edit);
//   - releases the lock it took in edit's transaction when edit succeeds,
//     so that the save and the release commit together, or on its own
//     when edit fails or panics (the panic goes on). A lock the session
//     held before Do is used, and kept.
//
// It returns edit's error, or ErrLockLost when the lock was lost (edit's
// statements then fail with the cancelled context).
func (p *Plugin) Do(db *gorm.DB, target any, edit func(tx *gorm.DB) error) (err error) {
	if edit == nil {
		return invalid("Do needs an edit")
	}
	l, err := p.Acquire(db, target, Write)
	if err != nil {
		return err
	}
	took := l.Token != "" // a new lock: a lock held before comes back without its token
	base := ctxOf(db)
	cleanup := db.WithContext(context.WithoutCancel(base)) // releases even when the caller's context ended
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	committed := false
	defer func() {
		if !committed && took {
			if rerr := p.Release(cleanup, target); rerr != nil && !errors.Is(rerr, ErrNotLocked) {
				err = errors.Join(err, rerr)
			}
		}
	}()
	err = p.Transaction(db.WithContext(ctx), func(tx *gorm.DB) error {
		// A renewal waiting for the edit's row lock is cancelled with stop:
		// never a wait for the commit that waits for it. Deferred, so that a
		// panicking edit stops it too.
		renewCtx, stop := context.WithCancel(base)
		renewed := make(chan struct{})
		go func() {
			defer close(renewed)
			p.keepLock(renewCtx, db.WithContext(renewCtx), target, l, cancel)
		}()
		defer func() {
			stop()
			<-renewed
		}()
		if err := edit(tx); err != nil {
			return err
		}
		if !took {
			return nil
		}
		return p.Release(tx, target)
	})
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrLockLost) {
			err = cause
		}
		return err
	}
	// (A committed edit released a lock it still held: its fence and its
	// Release say so. A loss noticed after that commit is none.)
	committed = true
	return nil
}

// keepLock renews l through db every third of its lifetime until ctx
// ends, and cancels the edit with ErrLockLost when the session no longer
// holds it with the same generation (a lock lost and taken again since is
// lost: the record may have changed in between).
func (p *Plugin) keepLock(ctx context.Context, db *gorm.DB, target any, l *Lock, cancel context.CancelCauseFunc) {
	every := l.ExpiresAt.Sub(l.AcquiredAt) / 3
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := p.Renew(db, l.Owner.Session); err != nil {
			continue // busy or no answer: the next tick tries again
		}
		holders, err := p.Holders(db, target)
		if err != nil {
			continue
		}
		held := false
		for _, h := range holders {
			held = held || h.Owner.Session == l.Owner.Session && h.Access == Write && h.Generation == l.Generation
		}
		if !held && ctx.Err() == nil {
			cancel(ErrLockLost)
			return
		}
	}
}
