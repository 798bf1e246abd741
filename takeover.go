package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offlinelock/offlinelock/internal/telemetry"
	"gorm.io/gorm"
)

// ErrHeldByYou reports a RequestEdit by the session that holds the lock
// itself: there is nobody to ask.
var ErrHeldByYou = errors.New("offlinelock: you hold this lock")

// ErrTooManyRequests reports a RequestEdit past RequestsPerMinute of the
// same user: ask again in a minute.
var ErrTooManyRequests = errors.New("offlinelock: too many requests to edit")

// TakeOver ends every other lock on target and gives the owner in db's
// context a new Write lock on it, with a new token and a larger generation,
// in one transaction: nobody can take the record in between. The old
// holders are fenced at once (their tokens and sessions hold nothing, so
// their writes are refused), the take-over is logged, counted
// (offlinelock_lock_releases_total with kind "takeover") and noted in the
// database, so that every Watch of the record, on any node, tells
// EventTakenOver with reason.
//
// Taking over a lock of the same user (another tab, a reload) needs no
// permission; taking over another user's asks Config.Authorize("take_over",
// lock) for each of them, and is ErrForbidden unless all are allowed. A
// record nobody holds is simply locked; a lock the session holds already is
// renewed, as Acquire does. reason is at most MaxReason bytes of printable
// text; it becomes the new lock's Reason.
func (p *Plugin) TakeOver(db *gorm.DB, target any, reason string) (*Lock, error) {
	return p.TakeOverIf(db, target, reason, nil)
}

// TakeOverIf is TakeOver with the application's own policy: allow is asked
// about each lock to be taken over (another session's), inside the
// take-over's transaction, with the lock as it is there, so a holder that
// changed since the caller last looked is judged, not the one it saw. An
// error from allow ends the take-over, changes nothing and is returned as
// it is. Config.Authorize is asked as well, as TakeOver says. A nil allow
// allows all.
func (p *Plugin) TakeOverIf(db *gorm.DB, target any, reason string, allow func(holder Lock) error) (*Lock, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return nil, err
	}
	if err := validReason(reason); err != nil {
		return nil, err
	}
	o, err := ownerOf(db)
	if err != nil {
		return nil, err
	}
	k, err := p.targetKey(db, target)
	if err != nil {
		return nil, err
	}
	if m := p.reg.TableModel(k.Resource); m != nil {
		if err := p.rememberTarget(db, m, k); err != nil {
			return nil, err
		}
	}
	if err := p.checkGuarded(db, k.Resource); err != nil {
		return nil, err // no guard, no grant: nothing released, nothing noted
	}
	if err := p.notes.ensure(db, t, p.cfg.Table); err != nil {
		return nil, err
	}
	ctx := db.Statement.Context
	if reason != "" {
		ctx = WithReason(ctx, reason)
	}
	var l *Lock
	var taken []Lock
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		mine, err := p.heldOnlyBy(tx, t, k, o)
		if err != nil {
			return err
		}
		if mine {
			l, err = p.Acquire(tx, target, Write) // nothing to take: a renewal
			return err
		}
		err = t.forceRelease(direct(tx), k, func(now time.Time, held []Lock) (err error) {
			taken, err = p.judgeTakeOver(ctx, o, now, held, allow)
			return err
		})
		if err != nil && !errors.Is(err, ErrNotLocked) {
			return err
		}
		if l, err = p.Acquire(tx, target, Write); err != nil {
			return err
		}
		if len(taken) == 0 {
			return nil
		}
		return p.notes.add(tx, p.cfg.Table, lockNote{Resource: k.Resource, LockID: k.ID, Kind: string(EventTakenOver),
			ByUser: o.User, Reason: reason, Generation: l.Generation, At: time.Now().UTC()})
	})
	if err != nil {
		return nil, err
	}
	p.hints.dropKey(k)
	p.tel.Released(ctxOf(db), db, telemetry.TakeOver, k.Resource, int64(len(taken)))
	return l, nil
}

// judgeTakeOver asks allow, and Config.Authorize for another user's lock,
// about each lock of held that is not o's session's own, auditing each
// answer. It returns the locks to be taken, or the first refusal.
func (p *Plugin) judgeTakeOver(ctx context.Context, o Owner, now time.Time, held []Lock, allow func(Lock) error) ([]Lock, error) {
	var taken []Lock
	for _, h := range held {
		if h.Owner.Session == o.Session {
			continue
		}
		var err error
		if allow != nil {
			err = allow(h)
		}
		if err == nil && h.Owner.User != o.User {
			err = p.authorize(ctx, "take_over", h)
		}
		p.audit(ctx, "take_over", h, o, now, err)
		if err != nil {
			return nil, err
		}
		taken = append(taken, h)
	}
	return taken, nil
}

// RequestEdit asks the holders of target to let the owner in db's context
// edit it: every Watch of the record, on any node, tells EventRequested
// naming the owner's user. It never waits and takes nothing; the asker
// learns that the record is free from EventReleased. It returns
// ErrNotLocked when nobody holds the record (take it instead) and
// ErrHeldByYou when the asking session holds it. Asking again for the same
// lock within a minute tells nobody again (and returns nil); more than
// RequestsPerMinute requests of one user in a minute are ErrTooManyRequests.
func (p *Plugin) RequestEdit(db *gorm.DB, target any) error {
	db = onPrimary(db)
	o, err := ownerOf(db)
	if err != nil {
		return err
	}
	k, err := p.targetKey(db, target)
	if err != nil {
		return err
	}
	held, err := p.Holders(db, target)
	if err != nil {
		return err
	}
	if len(held) == 0 {
		return fmt.Errorf("%w: nobody holds %s %s", ErrNotLocked, k.Resource, k.ID)
	}
	for _, h := range held {
		if h.Owner.Session == o.Session {
			return ErrHeldByYou
		}
	}
	t, err := p.storeFor(db) // found by Holders already
	if err != nil {
		return err
	}
	if err := p.notes.ensure(db, t, p.cfg.Table); err != nil {
		return err
	}
	now := time.Now().UTC()
	recent, err := p.notes.requestsBy(db, p.cfg.Table, o.User, now.Add(-time.Minute))
	if err != nil {
		return err
	}
	for _, n := range recent {
		if n.Resource == k.Resource && n.LockID == k.ID && n.Generation == held[0].Generation {
			return nil // the holder has been told
		}
	}
	if len(recent) >= RequestsPerMinute {
		return fmt.Errorf("%w: %d in the last minute; ask again later", ErrTooManyRequests, len(recent))
	}
	return p.notes.add(db, p.cfg.Table, lockNote{Resource: k.Resource, LockID: k.ID, Kind: string(EventRequested),
		ByUser: o.User, Generation: held[0].Generation, At: now})
}

// heldOnlyBy says whether k is held by o's session and nobody else.
func (p *Plugin) heldOnlyBy(db *gorm.DB, t lockStore, k key, o Owner) (bool, error) {
	held, err := t.list(direct(db), Filter{Resource: k.Resource, ID: k.ID})
	for _, h := range held {
		if h.Owner.Session != o.Session {
			return false, err
		}
	}
	return len(held) > 0, err
}
