package offlinelock

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"
)

// EventKind names what happened to a record's lock, as Watch tells it.
type EventKind string

const (
	// EventLocked: someone took the lock (also sent first, when Watch
	// starts on a record that is held).
	EventLocked EventKind = "locked"
	// EventReleased: the lock ended and the record is free; Reason says
	// how (ReasonReleased, ReasonExpired, ReasonSignedOut,
	// ReasonTakenOver, ReasonForceReleased). Also sent first, without a Lock or a Reason,
	// when Watch starts on a record that is free, so that a watch always
	// begins with the record's state.
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
	// (ReasonReleased, ReasonExpired, ReasonSignedOut,
	// ReasonForceReleased).
	Reason string
	// At is when the watcher saw the change.
	At time.Time
}

// Watch tells the changes of target's lock on the returned channel until
// ctx ends, then closes it. Changes are read from the database, so a
// change made through any node reaches every node's watches within
// Config.WatchEvery. One watcher per database reads all the records
// watched on it once per interval, in one statement per 100 records,
// however many watch each. A watch that does not keep
// up loses events rather than slow the others: read the channel promptly.
// It needs no owner; authorise callers as for Holders.
func (p *Plugin) Watch(ctx context.Context, db *gorm.DB, target any) (<-chan Event, error) {
	db = onPrimary(db.WithContext(ctx))
	b, err := p.bindingOf(db)
	if err != nil {
		return nil, err
	}
	k, err := p.targetKey(db, target)
	if err != nil {
		return nil, err
	}
	if err := p.notes.ensure(db, b.t, p.cfg.Table); err != nil {
		return nil, err
	}
	w := b.watcher.Load()
	if w == nil {
		b.watcher.CompareAndSwap(nil, &watcher{p: p, t: b.t, pr: &b.presence, subs: map[key]map[*watch]struct{}{}, seen: map[key]*Lock{}, pending: map[*watch]struct{}{}, viewers: map[key][]Viewer{}})
		w = b.watcher.Load()
	}
	sub := &watch{ch: make(chan Event, 16)}
	if err := w.add(db, k, sub); err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { w.remove(k, sub) })
	return sub.ch, nil
}

type watch struct{ ch chan Event }

// send hands e on, or drops it when the watch is not keeping up.
func (s *watch) send(e Event) {
	select {
	case s.ch <- e:
	default:
	}
}

// watcher polls one database's watched records.
type watcher struct {
	p  *Plugin
	t  lockStore
	pr *presence // the Views of this database, whose rows each poll reads too

	mu       sync.Mutex
	db       *gorm.DB // a session of the database, on its own connections
	subs     map[key]map[*watch]struct{}
	seen     map[key]*Lock       // each watched record's lock at the last poll; nil when free
	pending  map[*watch]struct{} // watches of records watched already, told their state by the next poll
	viewers  map[key][]Viewer    // each watched record's viewers as last told
	warned   map[key]time.Time
	lease    map[key]time.Duration // each held record's lease, as last seen granted or renewed
	start    map[key]int64         // the newest note when each record was first watched: older ones are not told
	toldNote map[int64]time.Time   // the notes told within noteWindow, by id, with their At
	polled   time.Time             // when the last poll began
	stop     context.CancelFunc    // the poll loop's, while it runs
}

func (p *Plugin) watchEvery() time.Duration {
	if p.cfg.WatchEvery > 0 {
		return p.cfg.WatchEvery
	}
	return DefaultWatchEvery
}

// add subscribes sub to k and starts the poll loop if it is not running.
// sub is told k's state first, as the database has it: a record nobody
// watched yet is read now; one watched already is told by the next poll,
// whose one read serves every watch added since (what the last poll saw
// may have changed since).
func (w *watcher) add(db *gorm.DB, k key, sub *watch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop == nil {
		w.db = w.p.background(db).Set(resolverWrite, struct{}{})
		w.start, w.warned, w.lease = map[key]int64{}, map[key]time.Time{}, map[key]time.Duration{}
		w.toldNote, w.polled = map[int64]time.Time{}, time.Now()
		ctx, stop := context.WithCancel(context.Background())
		w.stop = stop
		go w.loop(ctx)
	}
	if w.subs[k] != nil {
		w.subs[k][sub] = struct{}{}
		w.pending[sub] = struct{}{}
		return nil
	}
	// The record's notes are told from the newest one now: read before
	// its lock, so that a note committed between the two reads is told.
	last, err := w.p.notes.last(w.db, w.p.cfg.Table)
	var held *Lock
	if err == nil {
		held, err = w.holderOn(w.db, k)
	}
	if err != nil {
		if len(w.subs) == 0 {
			w.stop()
			w.stop = nil
		}
		return err
	}
	w.subs[k], w.seen[k], w.start[k] = map[*watch]struct{}{sub: {}}, held, last
	sub.send(stateOf(k, held, time.Now()))
	return nil
}

// stateOf is the event that tells a new watch k's state: locked with l,
// or released (without a lock or a reason) when l is nil.
func stateOf(k key, l *Lock, at time.Time) Event {
	if l != nil {
		return Event{Kind: EventLocked, Resource: k.Resource, ID: k.ID, Lock: l, At: at}
	}
	return Event{Kind: EventReleased, Resource: k.Resource, ID: k.ID, At: at} // free: the state, not a change
}

// firstOf is the first event of a watch added since the last poll: the
// state this poll read (stateOf), told as the take-over this poll saw when
// that is how the lock it read came (the same lock, with who took it over
// and why), so that a page whose stream opened just before a take-over
// (a reconnect, a browser's shared stream opened anew) learns it was one.
func firstOf(k key, l *Lock, changes []Event, at time.Time) Event {
	for _, e := range changes {
		if e.Kind == EventTakenOver && l != nil && e.Lock != nil && e.Lock.Generation == l.Generation {
			return e
		}
	}
	return stateOf(k, l, at)
}

// remove ends sub, and the poll loop with the last one.
func (w *watcher) remove(k key, sub *watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.subs[k], sub)
	delete(w.pending, sub)
	close(sub.ch)
	if len(w.subs[k]) == 0 {
		delete(w.subs, k)
		delete(w.seen, k)
		delete(w.warned, k)
		delete(w.lease, k)
		delete(w.viewers, k)
		delete(w.start, k)
	}
	if len(w.subs) == 0 && w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

func (w *watcher) loop(ctx context.Context) {
	tick := time.NewTicker(w.p.watchEvery())
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			err := w.poll(ctx)
			if err != nil && !failing && ctx.Err() == nil {
				w.p.cfg.Logger.Warn("offlinelock: watching locks failed; trying again every interval", "error", err.Error())
			}
			failing = err != nil
		}
	}
}

// holderOn is k's lock now, read on db: its writer, or its first reader;
// nil when free.
func (w *watcher) holderOn(db *gorm.DB, k key) (*Lock, error) {
	ls, err := w.t.list(direct(db), Filter{Resource: k.Resource, ID: k.ID})
	if err != nil || len(ls) == 0 {
		return nil, err
	}
	return &ls[0], nil
}

// poll reads the notes added since the last poll and each watched
// record's lock, and tells each record's watches what changed.
func (w *watcher) poll(ctx context.Context) error {
	began := time.Now()
	w.mu.Lock()
	db, from := w.db.WithContext(ctx), w.polled.Add(-noteWindow)
	keys := make([]key, 0, len(w.subs))
	start := make(map[key]int64, len(w.subs))
	for k := range w.subs {
		keys = append(keys, k)
		start[k] = w.start[k]
	}
	w.mu.Unlock()
	// The locks first, then the notes: a take-over commits its lock and
	// its note together, so a lock read here has its note in the read
	// below. Notes are read by time, not only by id: ids can commit out of
	// order (a note's transaction still open while a later one commits),
	// so a read of ids above the last one told could pass over one for
	// good.
	locks, err := w.t.ListKeys(direct(db), keys) // one statement per 100 records
	if err != nil {
		return err
	}
	notes, err := w.p.notes.of(db, w.p.cfg.Table, keys, start, from)
	if err != nil {
		return err
	}
	// A failed read of the viewers skips them this poll: the locks' events
	// go on, and the error is the poll's.
	viewers, viewersErr := w.p.viewersNow(db, w.pr, keys)
	now := make(map[key]*Lock, len(keys))
	for _, l := range publicLocks(locks) {
		if k := (key{Resource: l.Resource, ID: l.ID}); now[k] == nil {
			now[k] = &l
		}
	}
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	byKey := w.untold(notes, now, from)
	w.polled = began
	for _, k := range keys {
		subs := w.subs[k]
		if subs == nil {
			continue // no longer watched
		}
		var fresh map[*watch]bool
		changes := w.changes(k, w.seen[k], now[k], byKey[k], at)
		for s := range subs {
			if _, ok := w.pending[s]; ok {
				delete(w.pending, s)
				if fresh == nil {
					fresh = map[*watch]bool{}
				}
				fresh[s] = true
				s.send(firstOf(k, now[k], changes, at)) // its first: the state this poll read, not the changes since the last
			}
		}
		for _, e := range changes {
			for s := range subs {
				if !fresh[s] {
					s.send(e)
				}
			}
		}
		if viewersErr == nil {
			list, changed := viewers[k], !sameViewers(viewers[k], w.viewers[k])
			e := Event{Kind: EventViewers, Resource: k.Resource, ID: k.ID, Viewers: list, At: at}
			for s := range subs {
				if changed || fresh[s] && len(list) > 0 {
					s.send(e)
				}
			}
			w.viewers[k] = list
		}
		w.seen[k] = now[k]
	}
	return viewersErr
}

// untold sorts the notes a poll read that it has not told yet by record,
// marking them told, and forgets those out of the window; w.mu is held.
func (w *watcher) untold(notes []lockNote, now map[key]*Lock, from time.Time) map[key][]lockNote {
	byKey := map[key][]lockNote{}
	for _, n := range notes {
		if _, told := w.toldNote[n.ID]; told {
			continue
		}
		k := key{Resource: n.Resource, ID: n.LockID}
		if is := now[k]; n.Kind == string(EventTakenOver) && is != nil && is.Generation < n.Generation {
			// Committed after the locks were read: told by the next poll,
			// with the lock it gave (or, once the window passes, not). A
			// take-over whose record the locks read found free has ended
			// already (it wrote its lock and its note together, and took
			// a lock that was live): told now, as the reason of the
			// release of the lock it took.
			continue
		}
		if is := now[k]; endNote(n.Kind) && is != nil && is.Generation == n.Generation {
			// The end of a lock the locks read still saw: its release
			// committed between the two reads; told with it next poll.
			continue
		}
		w.toldNote[n.ID] = n.At
		byKey[k] = append(byKey[k], n)
	}
	for id, at := range w.toldNote {
		if at.Before(from) {
			delete(w.toldNote, id) // out of the window: never read again
		}
	}
	return byKey
}

// changes are the events of k between two polls: its lock was, its lock
// is, and the notes added meanwhile.
func (w *watcher) changes(k key, was, is *Lock, notes []lockNote, at time.Time) []Event {
	ev := func(kind EventKind, l *Lock) Event {
		return Event{Kind: kind, Resource: k.Resource, ID: k.ID, Lock: l, At: at}
	}
	var out []Event
	var taken *lockNote
	for i, n := range notes {
		if n.Kind == string(EventTakenOver) && is != nil && n.Generation == is.Generation {
			taken = &notes[i]
		}
	}
	changed := (was == nil) != (is == nil) || was != nil && (was.Owner.Session != is.Owner.Session || was.Generation != is.Generation)
	switch {
	case taken != nil: // even when an earlier poll saw the new lock: the note came later
		e := ev(EventTakenOver, is)
		e.By, e.Reason = taken.ByUser, taken.Reason
		out = append(out, e)
	case changed && was != nil:
		e := ev(EventReleased, was)
		e.Reason = ReasonReleased
		if !was.ExpiresAt.After(at) {
			e.Reason = ReasonExpired
		}
		for _, n := range notes {
			switch {
			case endNote(n.Kind) && n.Generation == was.Generation:
				e.Reason = n.Kind // ended by an admin or with its session, maybe before its expiry
			case n.Kind == string(EventTakenOver) && is == nil && n.Generation > was.Generation:
				e.Reason, e.By = ReasonTakenOver, n.ByUser // and the lock it took ended within the poll
			}
		}
		out = append(out, e)
		if is != nil {
			out = append(out, ev(EventLocked, is))
		}
	case changed:
		out = append(out, ev(EventLocked, is))
	}
	for _, n := range notes {
		if n.Kind == string(EventRequested) {
			e := ev(EventRequested, is)
			e.By = n.ByUser
			out = append(out, e)
		}
	}
	if is != nil {
		// The lease is what was left when its expiry was last seen to move
		// (a grant or a renewal): renewals keep AcquiredAt.
		if was == nil || !was.ExpiresAt.Equal(is.ExpiresAt) || w.lease[k] == 0 {
			w.lease[k] = is.ExpiresAt.Sub(at)
		}
		window := min(DefaultExpiringWithin, w.lease[k]/4)
		if is.ExpiresAt.Sub(at) <= window && !w.warned[k].Equal(is.ExpiresAt) {
			w.warned[k] = is.ExpiresAt
			out = append(out, ev(EventExpiring, is))
		}
	}
	return out
}

// endNote says whether a note of kind tells how a lock ended: the notes
// ForceRelease and EndSession write, whose kind is the released event's
// reason.
func endNote(kind string) bool { return kind == ReasonForceReleased || kind == ReasonSignedOut }
