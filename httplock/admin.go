package httplock

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/offlinelock/offlinelock"
)

// AdminHandler serves the admin endpoints to the requests Config.Admin
// accepts (403 to the others); force releases are also asked of the
// plugin's Config.Authorize, with the admin as the context's owner.
//
//	GET  /admin/locks?resource=orders&user=…&session=…&expired=true  the locks (never their tokens)
//	POST /admin/locks/{resource}/{id}/release  {"reason": "…"}      force-release one record (204), logged with who and why
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	s.RegisterAdmin(mux)
	return mux
}

// RegisterAdmin adds the admin endpoints to mux, each behind Config.Admin;
// the release also refuses cross-origin browser requests (a 403).
func (s *Server) RegisterAdmin(mux *http.ServeMux) {
	mux.HandleFunc("GET /admin/locks", s.adminOnly(s.handle(s.adminList)))
	mux.Handle("POST /admin/locks/{resource}/{id}/release", s.sameOrigin().Handler(s.adminOnly(s.handle(s.adminRelease))))
}

func (s *Server) adminList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := offlinelock.Filter{User: q.Get("user"), Session: q.Get("session"), Limit: 1000}
	if name := q.Get("resource"); name != "" {
		res, ok := s.resources[name]
		if !ok {
			return errUnknownResource
		}
		f.Resource = res.table
	}
	if v := q.Get("expired"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return badRequest("expired must be true or false")
		}
		f.Expired = b
	}
	locks, err := s.cfg.Locks.List(s.cfg.DB.WithContext(r.Context()), f)
	if err != nil {
		return err
	}
	out := make([]lockBody, 0, len(locks))
	for i := range locks {
		b := s.body(s.byTable(locks[i].Resource), &locks[i], time.Until(locks[i].ExpiresAt)) // as GET …/lock tells it
		b.Resource = s.apiName(locks[i].Resource)
		out = append(out, b)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) adminRelease(w http.ResponseWriter, r *http.Request) error {
	res, target, err := s.target(s.resources[r.PathValue("resource")], r.PathValue("id"))
	if err != nil {
		return err
	}
	admin, err := s.cfg.Principal(r)
	if err != nil || admin == "" {
		return offlinelock.ErrNoOwner
	}
	var req struct {
		Reason string `json:"reason"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Reason == "" || len(req.Reason) > 1000 {
		return badRequest("a force release needs a reason (at most 1000 bytes)")
	}
	ctx := offlinelock.WithOwner(r.Context(), offlinelock.Owner{Session: newSession("admin-"), User: admin})
	resource, id, err := s.cfg.Locks.KeyOf(s.cfg.DB.WithContext(ctx), target)
	if err == nil {
		err = s.cfg.Locks.ForceRelease(s.cfg.DB.WithContext(ctx), resource, id)
	}
	s.cfg.Logger.WarnContext(ctx, "httplock: force release", slog.String("admin", admin),
		slog.String("resource", res.Name), slog.String("id", r.PathValue("id")), slog.String("reason", req.Reason),
		slog.Bool("done", err == nil))
	if isNotLocked(err) {
		return notFoundLock
	}
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
	}
	return err
}

func (s *Server) byTable(table string) *resource {
	for _, res := range s.resources {
		if res.table == table {
			return res
		}
	}
	return &resource{Resource: Resource{Name: table}}
}

func (s *Server) apiName(table string) string { return s.byTable(table).Name }
