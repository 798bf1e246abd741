package main

import (
	"crypto/rand"
	"net/http"
	"sync"
	"time"

	gsessions "github.com/gorilla/sessions"
)

// sessionCookie is the name of the browser's session cookie, which
// gorilla/sessions signs and encrypts: it carries the user and the id of
// their sign-in, and nothing a browser can forge or read.
const sessionCookie = "editor_session"

// session is one sign-in. login is its id for the lock table
// (httplock.Config.LoginSession): random, and never the cookie itself.
type session struct {
	user, login string
	seen        time.Time
}

// sessions are the example's sessions, on a real session library:
// gorilla/sessions keeps each in the browser's cookie (signed with HMAC
// and encrypted with AES, keys made at start), and the server keeps the
// sign-ins that are live, so that a sign-out or an idle session ends at
// once whatever cookie a browser still sends (a cookie store alone cannot
// revoke a cookie). What matters to the locks is the end hook, which
// releases the sign-in's locks (httplock's EndLogin), whether it ends by
// sign-out or by expiry.
type sessions struct {
	store *gsessions.CookieStore

	mu    sync.Mutex
	live  map[string]*session // by login id
	idle  time.Duration
	ended func(s session) // called outside the lock
	now   func() time.Time
}

func newSessions(idle time.Duration, ended func(session)) *sessions {
	hashKey, blockKey := make([]byte, 64), make([]byte, 32) // HMAC-SHA256, AES-256
	rand.Read(hashKey)
	rand.Read(blockKey)
	store := gsessions.NewCookieStore(hashKey, blockKey)
	// A cookie for as long as the browser runs (MaxAge 0): idleness is
	// the server's to judge, refreshed by every request.
	store.Options = &gsessions.Options{Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode}
	return &sessions{store: store, live: map[string]*session{}, idle: idle, ended: ended, now: time.Now}
}

// start signs user in and sets the cookie on w.
func (s *sessions) start(w http.ResponseWriter, r *http.Request, user string) error {
	login := rand.Text()
	gs, _ := s.store.New(r, sessionCookie) // a fresh session, whatever cookie came
	gs.Values["user"], gs.Values["login"] = user, login
	if err := gs.Save(r, w); err != nil {
		return err
	}
	s.mu.Lock()
	s.live[login] = &session{user: user, login: login, seen: s.now()}
	s.mu.Unlock()
	return nil
}

// of is r's live session, seen now: its cookie decoded by the library,
// its sign-in still live and not idle.
func (s *sessions) of(r *http.Request) (session, bool) {
	gs, err := s.store.Get(r, sessionCookie)
	if err != nil || gs.IsNew {
		return session{}, false
	}
	login, _ := gs.Values["login"].(string)
	user, _ := gs.Values["user"].(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.live[login]
	if !ok || se.user != user || s.now().Sub(se.seen) > s.idle {
		return session{}, false
	}
	se.seen = s.now()
	return *se, true
}

// end signs r's session out, clearing the cookie on w.
func (s *sessions) end(w http.ResponseWriter, r *http.Request) {
	gs, err := s.store.Get(r, sessionCookie)
	if err != nil || gs.IsNew {
		return
	}
	login, _ := gs.Values["login"].(string)
	gs.Options.MaxAge = -1 // the library deletes the cookie
	gs.Save(r, w)
	s.mu.Lock()
	se, ok := s.live[login]
	delete(s.live, login)
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
	for login, se := range s.live {
		if s.now().Sub(se.seen) > s.idle {
			gone = append(gone, *se)
			delete(s.live, login)
		}
	}
	s.mu.Unlock()
	for _, se := range gone {
		s.ended(se)
	}
}
