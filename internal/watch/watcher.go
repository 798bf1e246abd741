package watch

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

type key = lockstore.Key

// sub is one Watch.
type sub struct{ send func(Event) }

// watcher polls one database's watched records.
type watcher struct {
	mu       sync.Mutex
	db       *gorm.DB // a session of the database, on its own connections
	subs     map[key]map[*sub]struct{}
	seen     map[key]*lockstore.Lock // each watched record's lock at the last poll; nil when free
	pending  map[*sub]struct{}       // watches of records watched already, told their state by the next poll
	viewers  map[key][]Viewer        // each watched record's viewers as last told
	warned   map[key]time.Time
	lease    map[key]time.Duration // each held record's lease, as last seen granted or renewed
	start    map[key]int64         // the newest note when each record was first watched: older ones are not told
	toldNote map[int64]time.Time   // the notes told within noteWindow, by id, with their At
	polled   time.Time             // when the last poll began
	stop     context.CancelFunc    // the poll loop's, while it runs
}

// add subscribes s to k, starting the poll loop if need be. s is told k's
// state first: read now for a record nobody watched yet, else by the next
// poll (what the last one saw may have changed since).
func (h *Hub) add(db *gorm.DB, k key, s *sub) error {
	w := &h.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop == nil {
		w.db = own(db)
		w.subs, w.seen, w.pending, w.viewers = map[key]map[*sub]struct{}{}, map[key]*lockstore.Lock{}, map[*sub]struct{}{}, map[key][]Viewer{}
		w.start, w.warned, w.lease = map[key]int64{}, map[key]time.Time{}, map[key]time.Duration{}
		w.toldNote, w.polled = map[int64]time.Time{}, time.Now()
		ctx, stop := context.WithCancel(context.Background())
		w.stop = stop
		go h.loop(ctx)
	}
	if w.subs[k] != nil {
		w.subs[k][s] = struct{}{}
		w.pending[s] = struct{}{}
		return nil
	}
	// The record's notes are told from the newest one now: read before
	// its lock, so that a note committed between the two reads is told.
	last, err := h.lastNote(w.db)
	var held []lockstore.Lock
	if err == nil {
		held, err = h.locks(w.db, []key{k})
	}
	if err != nil {
		if len(w.subs) == 0 {
			w.stop()
			w.stop = nil
		}
		return err
	}
	w.subs[k], w.seen[k], w.start[k] = map[*sub]struct{}{s: {}}, nil, last
	if len(held) > 0 {
		w.seen[k] = &held[0]
	}
	s.send(stateOf(k, w.seen[k], time.Now()))
	return nil
}

// remove ends s, and the poll loop with the last one.
func (h *Hub) remove(k key, s *sub) {
	w := &h.w
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.subs[k], s)
	delete(w.pending, s)
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

func (h *Hub) loop(ctx context.Context) {
	tick := time.NewTicker(h.cfg.Every)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			err := h.poll(ctx)
			if err != nil && !failing && ctx.Err() == nil {
				h.cfg.Logger.Warn("offlinelock: watching locks failed; trying again every interval", "error", err.Error())
			}
			failing = err != nil
		}
	}
}

// poll reads the notes added since the last poll and each watched
// record's lock, and tells each record's watches what changed.
func (h *Hub) poll(ctx context.Context) error {
	w := &h.w
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
	// The locks first, then the notes: a take-over commits both together,
	// so a lock read here has its note below. Notes are read by time, since
	// ids can commit out of order.
	locks, err := h.locks(db, keys) // one statement per 100 records
	if err != nil {
		return err
	}
	notes, err := h.notesOf(db, keys, start, from)
	if err != nil {
		return err
	}
	// A failed read of the viewers skips them this poll, not the locks.
	viewers, viewersErr := h.viewersNow(db, keys)
	now := make(map[key]*lockstore.Lock, len(keys))
	for i, l := range locks {
		if k := (key{Resource: l.Resource, ID: l.ID}); now[k] == nil {
			now[k] = &locks[i]
		}
	}
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	byKey := w.untold(notes, now, from)
	w.polled = began
	for _, k := range keys {
		if subs := w.subs[k]; subs != nil { // else no longer watched
			w.tell(k, subs, w.changes(k, w.seen[k], now[k], byKey[k], at), now[k], at)
			if viewersErr == nil {
				w.tellViewers(k, subs, viewers[k], at)
			}
			for s := range subs {
				delete(w.pending, s)
			}
			w.seen[k] = now[k]
		}
	}
	return viewersErr
}

// tell sends k's changes to its watches, and to a watch added since the
// last poll its first event instead (firstOf); w.mu is held.
func (w *watcher) tell(k key, subs map[*sub]struct{}, changes []Event, is *lockstore.Lock, at time.Time) {
	for s := range subs {
		if _, fresh := w.pending[s]; fresh {
			s.send(firstOf(k, is, changes, at))
			continue
		}
		for _, e := range changes {
			s.send(e)
		}
	}
}

// tellViewers sends k's viewers to its watches when they changed, and to
// a watch added since the last poll when there are any; w.mu is held.
func (w *watcher) tellViewers(k key, subs map[*sub]struct{}, list []Viewer, at time.Time) {
	changed := !sameViewers(list, w.viewers[k])
	e := Event{Kind: Viewers, Key: k, Viewers: list, At: at}
	for s := range subs {
		if _, fresh := w.pending[s]; changed || fresh && len(list) > 0 {
			s.send(e)
		}
	}
	w.viewers[k] = list
}
