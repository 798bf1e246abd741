package watch

import (
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// stateOf is the event that tells a new watch k's state: locked with l,
// or released (without a lock or a reason) when l is nil.
func stateOf(k key, l *lockstore.Lock, at time.Time) Event {
	if l != nil {
		return Event{Kind: Locked, Key: k, Lock: l, At: at}
	}
	return Event{Kind: Released, Key: k, At: at} // free: the state, not a change
}

// firstOf is the first event of a watch added since the last poll: the
// state this poll read, told as the take-over this poll saw when that is
// how the lock came, so that a stream opened just before one learns it.
func firstOf(k key, l *lockstore.Lock, changes []Event, at time.Time) Event {
	for _, e := range changes {
		if e.Kind == TakenOver && l != nil && e.Lock != nil && e.Lock.Generation == l.Generation {
			return e
		}
	}
	return stateOf(k, l, at)
}

// untold sorts the notes a poll read that it has not told yet by record,
// marking them told, and forgets those out of the window; w.mu is held.
func (w *watcher) untold(notes []Note, now map[key]*lockstore.Lock, from time.Time) map[key][]Note {
	byKey := map[key][]Note{}
	for _, n := range notes {
		if _, told := w.toldNote[n.ID]; told {
			continue
		}
		k := key{Resource: n.Resource, ID: n.LockID}
		if is := now[k]; n.Kind == TakenOver && is != nil && is.Generation < n.Generation {
			// Committed after the locks were read: told by the next poll
			// with the lock it gave. (One whose record was found free has
			// ended already: told now, as the reason of the release.)
			continue
		}
		if is := now[k]; endNote(n.Kind) && is != nil && is.Generation == n.Generation {
			// Released between the two reads: told with it next poll.
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
func (w *watcher) changes(k key, was, is *lockstore.Lock, notes []Note, at time.Time) []Event {
	ev := func(kind string, l *lockstore.Lock) Event { return Event{Kind: kind, Key: k, Lock: l, At: at} }
	var out []Event
	var taken *Note
	for i, n := range notes {
		if n.Kind == TakenOver && is != nil && n.Generation == is.Generation {
			taken = &notes[i]
		}
	}
	changed := (was == nil) != (is == nil) || was != nil && (was.Owner.Session != is.Owner.Session || was.Generation != is.Generation)
	switch {
	case taken != nil: // even when an earlier poll saw the new lock: the note came later
		e := ev(TakenOver, is)
		e.By, e.Reason = taken.ByUser, taken.Reason
		out = append(out, e)
	case changed && was != nil:
		out = append(out, released(ev(Released, was), notes, is == nil, at))
		if is != nil {
			out = append(out, ev(Locked, is))
		}
	case changed:
		out = append(out, ev(Locked, is))
	}
	for _, n := range notes {
		if n.Kind == Requested {
			e := ev(Requested, is)
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
		window := min(ExpiringWithin, w.lease[k]/4)
		if is.ExpiresAt.Sub(at) <= window && !w.warned[k].Equal(is.ExpiresAt) {
			w.warned[k] = is.ExpiresAt
			out = append(out, ev(Expiring, is))
		}
	}
	return out
}

// released is e, the release of e.Lock, with how it ended: by the notes,
// else by its expiry. free says the record is free now.
func released(e Event, notes []Note, free bool, at time.Time) Event {
	was := e.Lock
	e.Reason = ReasonReleased
	if !was.ExpiresAt.After(at) {
		e.Reason = ReasonExpired
	}
	for _, n := range notes {
		switch {
		case endNote(n.Kind) && n.Generation == was.Generation:
			e.Reason = n.Kind // ended by an admin or with its session, maybe before its expiry
		case n.Kind == TakenOver && free && n.Generation > was.Generation:
			e.Reason, e.By = ReasonTakenOver, n.ByUser // and the lock it took ended within the poll
		}
	}
	return e
}

// endNote says whether a note of kind tells how a lock ended (ForceRelease,
// EndSession): its kind is the released event's reason.
func endNote(kind string) bool { return kind == ReasonForceReleased || kind == ReasonSignedOut }
