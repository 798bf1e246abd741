package httplock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/offlinelock/offlinelock"
)

// Middleware guards the application's own write handlers.
//
// On a route whose pattern names a served resource followed by a wildcard
// (PATCH /orders/{id}, DELETE /{resource}/{id}, PUT /orders/{orderId}/seat),
// every request except GET, HEAD and OPTIONS is a write of that record and
// is decided here, before the handler runs and whatever its body says:
//
//   - no principal: 401 (an anonymous caller learns nothing of the holder);
//   - someone else holds the record's lock: 423 naming the holder and
//     lockedUntil, with no token, or with a token that is wrong, expired,
//     released, another principal's or another record's;
//   - nobody holds it: 423 lock-required, without a token or with one
//     that is not a live lock of the caller's on this record;
//   - the caller's own live Write lock: the handler runs as the lock's
//     owner (the caller's Read lock, taken through the Go API, is a 403).
//
// A GET, HEAD or OPTIONS (without a method-override header) and a route
// that names no resource pass through. A write whose route it cannot read
// (a whole mux, a subtree such as /api/, another router: see
// MiddlewareFor) is a 500, logged. The request's context carries the
// token's lock owner or an owner holding nothing, so a handler writing
// with db.WithContext(r.Context()) is still checked by the plugin. The
// token is read from the Lock-Token header only.
func (s *Server) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal, err := s.cfg.Principal(r)
		if err != nil || principal == "" {
			if isWrite(r) {
				s.refuse(w, r, s.writeTarget(r), offlinelock.ErrNoOwner)
				return
			}
			next.ServeHTTP(w, r) // nobody: writes of lockable models fail with ErrNoOwner
			return
		}
		owner, err := s.requestOwner(r, principal)
		if err != nil {
			s.refuse(w, r, s.writeTarget(r), err)
			return
		}
		next.ServeHTTP(w, r.WithContext(offlinelock.WithOwner(r.Context(), owner)))
	})
}

// refuse answers err, and records it with the plugin's refusals (counted
// and traced as its own are) when it is the refusal of a write of target.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, target any, err error) {
	if target != nil {
		s.cfg.Locks.Refused(s.cfg.DB.WithContext(r.Context()), target, offlinelock.Write, err)
	}
	s.WriteError(w, r, err)
}

// writeTarget is the record a write request is of, or nil (a read, a route
// that names none or that the Middleware cannot read).
func (s *Server) writeTarget(r *http.Request) any {
	res, id, readable := s.routeRecord(r)
	if !readable || res == nil || !isWrite(r) {
		return nil
	}
	_, target, err := s.target(res, id)
	if err != nil {
		return nil
	}
	return target
}

// MiddlewareFor is Middleware for a router other than http.ServeMux, or a
// route whose pattern does not name the record: its resource by name and
// its id by a function of the request (for chi, chi.URLParam(r, "id");
// for gin or echo, copy the parameters with r.SetPathValue and read
// r.PathValue). An unknown resource name is an error at once.
func (s *Server) MiddlewareFor(resource string, id func(*http.Request) string) (func(http.Handler) http.Handler, error) {
	res, ok := s.resources[resource]
	if !ok || id == nil {
		return nil, fmt.Errorf("httplock: MiddlewareFor(%q): not a served resource, or no id function", resource)
	}
	return func(next http.Handler) http.Handler {
		mw := s.Middleware(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mw.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), routeKey{}, routeOf{res, id(r)})))
		})
	}, nil
}

// routeKey carries the record MiddlewareFor names for the request.
type routeKey struct{}

type routeOf struct {
	res *resource
	id  string
}

// requestOwner decides who the request writes as, or why it may not.
func (s *Server) requestOwner(r *http.Request, principal string) (offlinelock.Owner, error) {
	owner := offlinelock.Owner{Session: newSession("request-"), User: principal}
	token := r.Header.Get(LockTokenHeader)
	res, id, readable := s.routeRecord(r)
	if !readable && isWrite(r) {
		return owner, errUnreadableRoute
	}
	if res == nil || !isWrite(r) {
		if token == "" {
			return owner, nil
		}
		held, err := s.ownLock(r, token, principal)
		if err != nil {
			return owner, err
		}
		return held.Owner, nil
	}
	_, target, err := s.target(res, id)
	if err != nil {
		return owner, err
	}
	return s.writer(r, target, token, principal)
}

// writer is the owner a write of target runs as: the caller's Write lock
// that token stands for, when no one else holds target.
func (s *Server) writer(r *http.Request, target any, token, principal string) (offlinelock.Owner, error) {
	db := s.cfg.DB.WithContext(r.Context())
	holders, err := s.cfg.Locks.Holders(db, target)
	if err != nil {
		return offlinelock.Owner{}, err
	}
	var mine *offlinelock.Lock
	var refusal error // why token does not let the caller write target
	if token != "" {
		held, err := s.lockFor(r, token, principal, target)
		var re *requestError
		switch {
		case err == nil && held.Access != offlinelock.Write:
			// The caller's Read lock (the Go API's) is its own, but no write.
			mine, refusal = held, forbidden("this Lock-Token is a Read lock's: a write needs a Write lock")
		case err == nil:
			mine = held
		case errors.As(err, &re) && re.status == http.StatusForbidden:
			// No live lock of the caller's on this record: 423 (seed 003).
			refusal = lockRequired(re.detail)
		default:
			return offlinelock.Owner{}, err
		}
	}
	if rest := others(holders, mine); len(rest) > 0 {
		resource, id, kerr := s.cfg.Locks.KeyOf(db, target)
		if kerr != nil {
			return offlinelock.Owner{}, kerr
		}
		return offlinelock.Owner{}, &offlinelock.LockedError{Resource: resource, ID: id, Holders: rest}
	}
	switch {
	case refusal != nil: // a bad token, and nobody else holds the record
		return offlinelock.Owner{}, refusal
	case mine == nil:
		return offlinelock.Owner{}, offlinelock.ErrNotLocked
	}
	return mine.Owner, nil
}

// others are the holders that are not mine: the ones a 423 names.
func others(holders []offlinelock.Lock, mine *offlinelock.Lock) []offlinelock.Lock {
	var out []offlinelock.Lock
	for _, h := range holders {
		if mine == nil || h.Owner.Session != mine.Owner.Session {
			out = append(out, h)
		}
	}
	return out
}

// isWrite: anything but GET, HEAD or OPTIONS, or any request with a
// method-override header something behind may honour.
func isWrite(r *http.Request) bool {
	for _, h := range []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"} {
		if _, ok := r.Header[http.CanonicalHeaderKey(h)]; ok { // as the server stores them
			return true
		}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// routeRecord finds the record r's route names: the wildcard after a served
// resource's name in r.Pattern. !readable: a write's record is unknown.
func (s *Server) routeRecord(r *http.Request) (res *resource, id string, readable bool) {
	if ro, ok := r.Context().Value(routeKey{}).(routeOf); ok {
		return ro.res, ro.id, true // MiddlewareFor: the application named it
	}
	pattern := r.Pattern
	i := strings.IndexByte(pattern, '/')
	if i < 0 {
		return nil, "", false
	}
	pattern = pattern[i:] // without the method and the host
	segments := strings.Split(strings.Trim(pattern, "/"), "/")
	for i := 1; i < len(segments); i++ {
		name, named := segmentValue(r, segments[i-1])
		wildcard, ok := wildcardName(segments[i])
		if !named || !ok {
			continue
		}
		if res, ok := s.resources[name]; ok {
			return res, r.PathValue(wildcard), true
		}
	}
	if last := segments[len(segments)-1]; strings.HasSuffix(pattern, "/") || strings.HasSuffix(last, "...}") {
		// A subtree ("/", "/{path...}") may lead to any record.
		return nil, "", false
	}
	return nil, "", true
}

// wildcardName is the name of a pattern segment {name} or {name...}.
func wildcardName(segment string) (string, bool) {
	if len(segment) < 3 || segment == "{$}" || segment[0] != '{' || segment[len(segment)-1] != '}' {
		return "", false
	}
	return strings.TrimSuffix(segment[1:len(segment)-1], "..."), true
}

// segmentValue is what a pattern segment matched: the segment itself, or
// a wildcard's value.
func segmentValue(r *http.Request, segment string) (string, bool) {
	if name, ok := wildcardName(segment); ok {
		v := r.PathValue(name)
		return v, v != ""
	}
	return segment, segment != "" && segment != "{$}"
}

// errUnreadableRoute refuses a write whose record the Middleware cannot
// find; it is the application's wiring, so a 500 whose text is logged.
var errUnreadableRoute = errors.New("httplock: Middleware cannot tell which record this write's route names: " +
	"wrap each write handler registered on an http.ServeMux pattern that names the record (PATCH /orders/{id}), not a whole mux, a sub-mux or another router")
