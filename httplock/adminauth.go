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

// sameOrigin refuses, with a 403, the browser requests that come from
// another origin (Sec-Fetch-Site, or Origin against Host): when Principal
// and Admin read a cookie, a page elsewhere could otherwise post to an
// admin endpoint in the admin's name (a text/plain form can carry a JSON
// body). Requests without those headers, from API clients, pass.
func (s *Server) sameOrigin() *http.CrossOriginProtection {
	return s.crossOrigin(nil, "cross-origin request refused: an admin action comes from the application's own pages or from an API client")
}

// crossOrigin is sameOrigin that also trusts origins.
func (s *Server) crossOrigin(origins []string, detail string) *http.CrossOriginProtection {
	p := http.NewCrossOriginProtection()
	for _, o := range origins {
		_ = p.AddTrustedOrigin(o) // New checked each
	}
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.WriteError(w, r, forbidden(detail))
	}))
	return p
}
