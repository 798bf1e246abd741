package httplock

import (
	"net/http"

	"github.com/offlinelock/offlinelock"
)

// Middleware puts the owner of a request's lock into its context, so that
// the application's handlers, writing with GORM on
// db.WithContext(r.Context()), are checked by the plugin: a write with a
// valid Lock-Token of the caller's is the lock holder's; a write without
// one is an owner that holds nothing (ErrNotLocked or *LockedError, 423); a
// Lock-Token that is wrong, expired or another principal's is refused here
// with 403. The token is read from the Lock-Token header only.
func (s *Server) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal, err := s.cfg.Principal(r)
		if err != nil || principal == "" {
			next.ServeHTTP(w, r) // nobody: writes of lockable models fail with ErrNoOwner
			return
		}
		owner := offlinelock.Owner{Session: newSession("request-"), User: principal}
		if token := r.Header.Get(LockTokenHeader); token != "" {
			held, err := s.ownLock(r, token, principal)
			if err != nil {
				s.WriteError(w, r, err)
				return
			}
			owner = held.Owner
		}
		next.ServeHTTP(w, r.WithContext(offlinelock.WithOwner(r.Context(), owner)))
	})
}
