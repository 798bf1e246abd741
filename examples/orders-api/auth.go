package main

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

const (
	// sessionCookie carries a browser's sign-in: a random value that the
	// server maps to the user, so that the cookie alone never names anyone.
	sessionCookie = "orders_session"
	// sessionTTL is how long a sign-in lasts; the cookie's Max-Age says the
	// same, and the server forgets the session then whatever the browser
	// keeps.
	sessionTTL = 8 * time.Hour
	// demoPassword is the demonstration's one password: there are no
	// accounts, as there are none behind the bearer tokens.
	demoPassword = "demo"
	// operator is the demonstration's admin, for the console and the
	// admin endpoints.
	operator = "admin"
)

// auth is the example's authentication, a demonstration: an API client
// names itself with "Authorization: Bearer <user>", a browser signs in at
// /login and then sends the session cookie.
type auth struct {
	sessions *sessions
	password string
}

func newAuth() *auth {
	return &auth{sessions: newSessions(sessionTTL, time.Now), password: demoPassword}
}

// principal is httplock's Config.Principal. An Authorization header decides
// alone, exactly as before the cookie existed: an API client's explicit
// credential is never overridden, nor rescued, by a cookie the same client
// happens to carry.
func (a *auth) principal(r *http.Request) (string, error) {
	if _, ok := r.Header["Authorization"]; ok {
		return bearer(r)
	}
	user, ok := a.signedIn(r)
	if !ok {
		return "", errors.New("no bearer token, and no live session cookie")
	}
	return user, nil
}

// signedIn is the user of r's session cookie, if it names a live session.
func (a *auth) signedIn(r *http.Request) (string, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	return a.sessions.user(c.Value)
}

// check is the demonstration's password check: any well-formed user name,
// with the one password. A real service asks its user store here.
func (a *auth) check(user, password string) bool {
	return validUser(user) && subtle.ConstantTimeCompare([]byte(password), []byte(a.password)) == 1
}

// validUser refuses the names no sign-in should carry into the lock table
// and the logs: empty, too long for the lock table's owner column, not
// UTF-8, or with control characters.
func validUser(user string) bool {
	return user != "" && len(user) <= 255 && utf8.ValidString(user) && !strings.ContainsFunc(user, unicode.IsControl)
}

// admin is httplock's Config.Admin: the operator, by bearer or cookie.
func (a *auth) admin(r *http.Request) error {
	if user, _ := a.principal(r); user != operator {
		return errors.New("not an admin")
	}
	return nil
}

// bearer is the demonstration's API authentication: the bearer token is
// the user name.
func bearer(r *http.Request) (string, error) {
	user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || user == "" {
		return "", errors.New("no bearer token")
	}
	return user, nil
}

// session is one sign-in.
type session struct {
	user    string
	expires time.Time
}

// sessions maps the cookies handed out to their users. It keys them by
// their SHA-256, so that neither a look at its memory nor the timing of a
// map look-up gives a usable cookie away.
type sessions struct {
	mu     sync.Mutex
	byHash map[[sha256.Size]byte]session
	ttl    time.Duration
	now    func() time.Time // time.Now but in tests
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{byHash: map[[sha256.Size]byte]session{}, ttl: ttl, now: now}
}

// start opens a session for user and returns its cookie value: 128 bits
// from crypto/rand, unrelated to the user. Expired sessions are dropped
// here, so the map holds at most the sign-ins of one TTL.
func (s *sessions) start(user string) string {
	value := rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for h, ses := range s.byHash {
		if !now.Before(ses.expires) {
			delete(s.byHash, h)
		}
	}
	s.byHash[sha256.Sum256([]byte(value))] = session{user: user, expires: now.Add(s.ttl)}
	return value
}

// user is the user of the live session whose cookie value is value.
func (s *sessions) user(value string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.byHash[sha256.Sum256([]byte(value))]
	if !ok || !s.now().Before(ses.expires) {
		return "", false
	}
	return ses.user, true
}

// end forgets the session of value: its cookie authenticates no more, even
// if a copy of it survives the browser's logout.
func (s *sessions) end(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byHash, sha256.Sum256([]byte(value)))
}

// takeOver is httplock's Config.TakeOver: the operator may take over
// anyone's lock (POST /orders/{id}/lock/takeover); everyone else only
// their own, from another tab or client. The plugin's Authorize agrees.
func (a *auth) takeOver(r *http.Request, principal string, holder offlinelock.Lock) error {
	if principal == operator {
		return nil
	}
	return httplock.SameUserTakeOver(r, principal, holder)
}
