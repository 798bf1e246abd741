package httplock

import "net/http"

// adminOnly serves next only to requests Config.Admin accepts (403 else; no
// Admin, nobody).
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

// sameOrigin refuses a browser's cross-origin request, which could post in
// an admin's cookie name; API clients pass.
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
