package main

import (
	"crypto/rand"
	"net/http"
	"sync"
	"time"
)

// sessionCookie carries a browser's sign-in: a random value the server maps
// to its session, so that the cookie alone never names anyone.
const sessionCookie = "editor_session"

// session is one sign-in. login is its id for the lock table
// (httplock.Config.LoginSession): random too, and not the cookie's value,
// which is the secret.
type session struct {
	user, login string
	seen        time.Time
}

// sessions is the example's session store: in memory, each session ending
// after idle without a request. A real application uses its session
// library here; what matters is the end hook, which releases the
// session's locks (httplock's EndLogin), whether it ends by sign-out or by
// expiry.
type sessions struct {
	mu    sync.Mutex
	byKey map[string]*session
	idle  time.Duration
	ended func(s session) // called outside the lock
	now   func() time.Time
}

func newSessions(idle time.Duration, ended func(session)) *sessions {
	return &sessions{byKey: map[string]*session{}, idle: idle, ended: ended, now: time.Now}
}

// start signs user in and sets the cookie on w.
func (s *sessions) start(w http.ResponseWriter, user string) {
	key, login := rand.Text(), rand.Text()
	s.mu.Lock()
	s.byKey[key] = &session{user: user, login: login, seen: s.now()}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: key, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// of is r's live session, seen now.
func (s *sessions) of(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.byKey[c.Value]
	if !ok || s.now().Sub(se.seen) > s.idle {
		return session{}, false
	}
	se.seen = s.now()
	return *se, true
}

// end signs r's session out, clearing the cookie on w.
func (s *sessions) end(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return
	}
	s.mu.Lock()
	se, ok := s.byKey[c.Value]
	delete(s.byKey, c.Value)
	s.mu.Unlock()
	if ok {
		s.ended(*se)
	}
}

// expire ends the sessions idle for longer than s.idle; the example's
// sweeper calls it every few seconds.
func (s *sessions) expire() {
	var gone []session
	s.mu.Lock()
	for key, se := range s.byKey {
		if s.now().Sub(se.seen) > s.idle {
			gone = append(gone, *se)
			delete(s.byKey, key)
		}
	}
	s.mu.Unlock()
	for _, se := range gone {
		s.ended(se)
	}
}
