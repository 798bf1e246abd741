package httplock

import "net/http"

// adminOnly serves next only to a request that Config.Admin accepts, and
// answers 403 to every other one, so that the admin endpoints and the lock
// console share one check. With no Config.Admin nobody is an admin: the
// admin surface is closed until the application says who may use it.
func (s *Server) adminOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Admin == nil {
			s.WriteError(w, r, forbidden("no one is an admin here (httplock.Config.Admin is not set)"))
			return
		}
		if err := s.cfg.Admin(r); err != nil {
			s.WriteError(w, r, forbidden("admins only"))
			return
		}
		next(w, r)
	}
}
