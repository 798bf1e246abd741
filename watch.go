package offlinelock

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/telemetry"
	"github.com/offlinelock/offlinelock/internal/watch"
)

// EventKind names what happened to a record's lock, as Watch tells it.
type EventKind string

const (
	// EventLocked: someone took the lock (also sent first, when Watch
	// starts on a record that is held).
	EventLocked EventKind = "locked"
	// EventReleased: the lock ended and the record is free; Reason says
	// how. Also sent first, without a Lock or a Reason, when Watch starts
	// on a record that is free.
	EventReleased EventKind = "released"
	// EventTakenOver: TakeOver gave the lock to By, for Reason; the old
	// holder is fenced.
	EventTakenOver EventKind = "taken-over"
	// EventExpiring: the lock runs out soon (within a quarter of its lease
	// as last granted or renewed, at most DefaultExpiringWithin) and no
	// renewal has come.
	EventExpiring EventKind = "expiring"
	// EventRequested: By asks to edit the record (RequestEdit).
	EventRequested EventKind = "requested"
)

// EventViewers: the users who have the record open changed (Event.Viewers).
const EventViewers EventKind = "viewers"

// The reasons an EventReleased gives for a lock's end.
const (
	// ReasonReleased: its holder released it (Release, a save that
	// released it, httplock's unlock), or ReleaseAll ended its session.
	ReasonReleased = "released"
	// ReasonSignedOut: its session ended with EndSession (sign-out, a
	// session's expiry; httplock's EndLogin).
	ReasonSignedOut = "signed-out"
	// ReasonExpired: its lease ran out (a page that was left, or stopped
	// renewing).
	ReasonExpired = "expired"
	// ReasonTakenOver: TakeOver ended it (Event.By names who), and the
	// lock the take-over gave ended before a poll saw it; a take-over
	// seen is told as EventTakenOver.
	ReasonTakenOver = "taken-over"
	// ReasonForceReleased: an admin removed it (ForceRelease).
	ReasonForceReleased = "force-released"
)

// DefaultWatchEvery is how often a watcher reads the locks it watches when
// Config.WatchEvery is zero: a change reaches every Watch within it.
const DefaultWatchEvery = time.Second

// DefaultExpiringWithin is the longest warning EventExpiring gives.
const DefaultExpiringWithin = 30 * time.Second

// ViewerGone is how long after its node last refreshed it a viewer stops
// counting: a View that ended without deleting its row (its process
// stopped) is gone within it.
const ViewerGone = 10 * time.Second

// RequestsPerMinute bounds the requests to edit one user may make in a
// minute, over all records (RequestEdit is ErrTooManyRequests past it),
// so that nobody can fill the notes table every watcher reads.
const RequestsPerMinute = 20

// ErrHeldByYou reports a RequestEdit by the session that holds the lock
// itself: there is nobody to ask.
var ErrHeldByYou = watch.ErrHeldByYou

// ErrTooManyRequests reports a RequestEdit past RequestsPerMinute of the
// same user: ask again in a minute.
var ErrTooManyRequests = watch.ErrTooManyRequests

// Event is one change of a record's lock.
type Event struct {
	Kind         EventKind
	Resource, ID string
	// Lock is the lock after the change (locked, taken-over, expiring,
	// requested) or the lock that ended (released), without its token.
	Lock *Lock
	// By is who took the lock over, or who asks to edit.
	By string
	// Viewers are the users who have the record open (EventViewers; View).
	Viewers []Viewer
	// Reason is the take-over's reason, or how a released lock ended
	// (the Reason constants).
	Reason string
	// At is when the watcher saw the change.
	At time.Time
}

// Viewer is a user who has a record open: its name and since when (the
// earliest of its views). Never a session or a token.
type Viewer struct {
	User  string
	Since time.Time
}

// publicEvent is the hub's event as Watch tells it.
func publicEvent(e watch.Event) Event {
	out := Event{Kind: EventKind(e.Kind), Resource: e.Key.Resource, ID: e.Key.ID, By: e.By, Reason: e.Reason, At: e.At}
	if e.Lock != nil {
		l := publicLock(*e.Lock)
		out.Lock = &l
	}
	for _, v := range e.Viewers {
		out.Viewers = append(out.Viewers, Viewer(v))
	}
	return out
}

// Watch tells the changes of target's lock on the returned channel until
// ctx ends, then closes it. Changes are read from the database, so a
// change made through any node reaches every node's watches within
// Config.WatchEvery; one watcher per database reads all the records watched
// there. A watch that does not keep up loses events rather than slow the
// others: read the channel promptly. It needs no owner; authorise callers
// as for Holders.
func (p *Plugin) Watch(ctx context.Context, db *gorm.DB, target any) (<-chan Event, error) {
	db, b, err := p.on(db.WithContext(ctx))
	var k key
	if err == nil {
		k, err = p.targetKey(db, target)
	}
	if err != nil {
		return nil, err
	}
	return watch.Watch(ctx, b.watch, db, k, publicEvent)
}

// View announces that user has target open until ctx ends: every Watch of
// the record, on any node, tells EventViewers with the users who have it
// open (each user once, with the earliest of their views). A view whose
// node stopped is gone within ViewerGone. It needs no owner and takes no
// lock: authorise callers as for Watch.
func (p *Plugin) View(ctx context.Context, db *gorm.DB, target any, user string) error {
	db, b, err := p.on(db.WithContext(ctx))
	if err == nil {
		err = model.CheckText("user", user, model.MaxTextLen, false)
	}
	var k key
	if err == nil {
		k, err = p.targetKey(db, target)
	}
	if err != nil {
		return err
	}
	return b.watch.View(ctx, db, k, user)
}

// RequestEdit asks the holders of target to let the owner in db's context
// edit it: every Watch of the record, on any node, tells EventRequested
// naming the owner's user. It never waits and takes nothing. It returns
// ErrNotLocked when nobody holds the record, ErrHeldByYou when the asking
// session holds it, and ErrTooManyRequests past RequestsPerMinute; asking
// again for the same lock within a minute tells nobody again.
func (p *Plugin) RequestEdit(db *gorm.DB, target any) error {
	db = onPrimary(db)
	o, err := ownerOf(db)
	var k key
	if err == nil {
		k, err = p.targetKey(db, target)
	}
	var b *binding
	if err == nil {
		b, err = p.bindingOf(db)
	}
	if err != nil {
		return err
	}
	return b.watch.Request(db, k, lockstore.Owner(o))
}

// TakeOver ends every other lock on target and gives the owner in db's
// context a new Write lock on it, with a new token and a larger generation,
// in one transaction. The old holders are fenced at once; the take-over is
// logged, counted and noted, so that every Watch of the record, on any
// node, tells EventTakenOver with reason.
//
// Taking over a lock of the same user (another tab, a reload) needs no
// permission; taking over another user's asks Config.Authorize("take_over",
// lock) for each of them, and is ErrForbidden unless all are allowed. A
// record nobody holds is simply locked; a lock the session holds already is
// renewed, as Acquire does. reason (at most MaxReason bytes of printable
// text) becomes the new lock's Reason.
func (p *Plugin) TakeOver(db *gorm.DB, target any, reason string) (*Lock, error) {
	return p.TakeOverIf(db, target, reason, nil)
}

// TakeOverIf is TakeOver with the application's own policy: allow is asked
// about each other session's lock, as it is inside the take-over's
// transaction; an error from allow ends the take-over, changes nothing and
// is returned as it is. Config.Authorize is asked as well. A nil allow
// allows all.
func (p *Plugin) TakeOverIf(db *gorm.DB, target any, reason string, allow func(holder Lock) error) (*Lock, error) {
	db, b, err := p.on(db)
	if err == nil {
		err = validReason(reason)
	}
	var o Owner
	var k key
	if err == nil {
		o, k, err = p.ownerAndKey(db, target)
	}
	if m := p.reg.TableModel(k.Resource); err == nil && m != nil {
		err = p.rememberTarget(db, m, k)
	}
	if err == nil {
		err = p.checkGuarded(db, k.Resource) // no guard, no grant: nothing released, nothing noted
	}
	if err == nil {
		err = b.watch.EnsureNotes(db)
	}
	if err != nil {
		return nil, err
	}
	ctx := db.Statement.Context
	if reason != "" {
		ctx = WithReason(ctx, reason)
	}
	var l *Lock
	var taken []Lock
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if mine, err := heldOnlyBy(tx, b.t, k, o); err != nil || mine {
			if err == nil {
				l, err = p.Acquire(tx, target, Write) // nothing to take: a renewal
			}
			return err
		}
		err := b.t.ForceRelease(direct(tx), k, func(now time.Time, held []lockstore.Lock) (err error) {
			taken, err = p.judgeTakeOver(ctx, o, now, publicLocks(held), allow)
			return err
		})
		if err != nil && !errors.Is(err, ErrNotLocked) {
			return err
		}
		if l, err = p.Acquire(tx, target, Write); err != nil || len(taken) == 0 {
			return err
		}
		return b.watch.Note(tx, watch.Note{Resource: k.Resource, LockID: k.ID, Kind: watch.TakenOver,
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

// heldOnlyBy says whether k is held by o's session and nobody else.
func heldOnlyBy(db *gorm.DB, t lockStore, k key, o Owner) (bool, error) {
	held, err := t.list(direct(db), Filter{Resource: k.Resource, ID: k.ID})
	for _, h := range held {
		if h.Owner.Session != o.Session {
			return false, err
		}
	}
	return len(held) > 0, err
}
