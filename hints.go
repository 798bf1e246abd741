package offlinelock

import (
	"sync"
	"time"
)

// maxHints bounds the hint table: it never holds more than maxHints
// locks, nor more sessions than locks (a session whose last hint goes is
// removed), so a process that serves a million short sessions keeps at most
// this many entries. Past it, the table starts over empty: hints are only
// guesses, and a missing one costs one statement on the general path.
const maxHints = 100_000

// hints remembers which locks this process granted to which session, so a
// load can guess whether its session already holds a fresh lock and take
// the read-only path. It is only ever a guess: the read-only path checks
// the lock table in the same statement and falls back when the guess is
// wrong (a lock released on another node, force-released, expired).
type hints struct {
	mu sync.Mutex
	m  map[string]map[key]time.Time // session -> key -> expiry
	n  int
}

func (h *hints) put(session string, k key, exp time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || h.n >= maxHints {
		h.m, h.n = map[string]map[key]time.Time{}, 0
	}
	s := h.m[session]
	if s == nil {
		s = map[key]time.Time{}
		h.m[session] = s
	}
	if _, ok := s[k]; !ok {
		h.n++
	}
	s[k] = exp
}

// putAll is put for every lock of a grant, under one lock of the table.
func (h *hints) putAll(session string, got map[key]granted) {
	if len(got) > maxHints/2 {
		for k, l := range got {
			h.put(session, k, l.ExpiresAt)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || h.n+len(got) > maxHints {
		h.m, h.n = map[string]map[key]time.Time{}, 0
	}
	s := h.m[session]
	if s == nil {
		s = make(map[key]time.Time, len(got))
		h.m[session] = s
	}
	for k, l := range got {
		if _, ok := s[k]; !ok {
			h.n++
		}
		s[k] = l.ExpiresAt
	}
}

// fresh guesses whether session holds k for at least margin more.
func (h *hints) fresh(session string, k key, margin time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	exp, ok := h.m[session][k]
	return ok && time.Until(exp) > margin
}

func (h *hints) drop(session string, k key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.m[session]; s != nil {
		if _, ok := s[k]; ok {
			delete(s, k)
			h.n--
		}
		if len(s) == 0 {
			delete(h.m, session) // a session with no hints takes no memory
		}
	}
}

func (h *hints) dropSession(session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n -= len(h.m[session])
	delete(h.m, session)
}

func (h *hints) dropKey(k key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for session, s := range h.m {
		if _, ok := s[k]; ok {
			delete(s, k)
			h.n--
		}
		if len(s) == 0 {
			delete(h.m, session)
		}
	}
}
