// Package httplock serves offlinelock's pessimistic offline locks over HTTP:
// a REST client, which keeps no session, takes a lock as a token with a
// lease (POST /{resource}/{id}/lock), sends it back in the Lock-Token
// header with its writes, and gives it up with POST /{resource}/{id}/unlock.
// Middleware refuses, before the application's handler runs, every write of
// a record that anyone but the caller's own Lock-Token holds: 423 Locked
// with an application/problem+json body (RFC 9457) naming the holder and
// lockedUntil, whatever the body and whatever other token is sent; a write
// of a free record without a token is 423 lock-required (the lock comes
// first). The OpenAPI document is served at GET /openapi.yaml. Standard
// library only.
//
//	api, err := httplock.New(httplock.Config{Locks: locks, DB: db,
//		Resources: []httplock.Resource{{Name: "orders", Model: &Order{}}},
//		Principal: userFromRequest}) // func(*http.Request) (string, error)
//	if err != nil {
//		return err
//	}
//	mux := http.NewServeMux()
//	api.Register(mux) // POST /orders/{id}/lock, POST /orders/{id}/unlock, GET /orders/{id}/lock, GET /openapi.yaml
//	mux.Handle("PATCH /orders/{id}", api.Middleware(http.HandlerFunc(patchOrder))) // 423 unless the caller holds the lock
//
// Here locks is the *offlinelock.Plugin registered on db, and patchOrder
// writes with db.WithContext(r.Context()). The example of New runs it.
package httplock

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// Resource is a collection whose records can be locked over HTTP.
type Resource struct {
	// Name is the URL segment: "orders" serves /orders/{id}/lock. It is
	// one path segment of letters, digits and -._~ (New refuses others).
	Name string
	// Model is a pointer to the GORM model, such as &Order{}. Its primary
	// key (one column) is the {id} of the URL.
	Model any
	// Singular names one record in messages ("order 'ord_1' is locked…");
	// default Name without a trailing "s".
	Singular string
	// IDName, if set, is a name under which lock bodies carry the record's
	// id besides "id": "orderId" gives the seed's lock response. It must
	// not be one of the lock body's own names.
	IDName string
	// Exists says whether the record id exists, before POST …/lock takes
	// its lock: a missing record is a 404, so that nobody fills the lock
	// table with invented ids. Default: a count of the model's rows with
	// that key; return true for ids clients may reserve ahead.
	Exists func(r *http.Request, id string) (bool, error)
	// Allow decides who may do what (an Action…) with the record of id
	// over HTTP, after Exists, before anything is read or changed. A nil
	// error allows; one that wraps gorm.ErrRecordNotFound answers 404 (for
	// a record the caller may not know of); any other is a 403 showing its
	// text. Default nil: every principal may do all of them.
	Allow func(r *http.Request, principal, action, id string) error
}

// The actions Resource.Allow is asked about.
const (
	ActionRead     = "read"      // GET …/lock: who holds it
	ActionWatch    = "watch"     // GET …/lock/events
	ActionLock     = "lock"      // POST …/lock, POST …/unlock
	ActionTakeOver = "take_over" // POST …/lock/takeover
	ActionRequest  = "request"   // POST …/lock/request
)

// allow asks res.Allow whether principal may do action with the record
// of r's id: nil, notFound, or a 403.
func (s *Server) allow(r *http.Request, res *resource, principal, action string) error {
	if res.Allow == nil {
		return nil
	}
	err := res.Allow(r, principal, action, r.PathValue("id"))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gorm.ErrRecordNotFound):
		return notFound
	default:
		return forbidden("you may not " + strings.ReplaceAll(action, "_", " ") + " this record: " + err.Error())
	}
}

// Config configures a Server.
type Config struct {
	// Locks and DB are the plugin and the database it is registered on.
	Locks *offlinelock.Plugin
	DB    *gorm.DB
	// Resources are the collections served.
	Resources []Resource
	// Principal says who sends a request (from its Authorization header, a
	// session cookie…). An error means nobody: 401 for the lock endpoints.
	// A lock belongs to its principal: its token works for nobody else.
	Principal func(*http.Request) (string, error)
	// Admin decides who may use the admin endpoints (and the lock
	// console): nil error allows, anything else is a 403. With Admin nil
	// every admin request is a 403. Force releases are also asked of the
	// plugin's Config.Authorize.
	Admin func(*http.Request) error
	// TrustedOrigins are the origins ("https://app.example.com") of browser
	// applications elsewhere that may take and release locks; a browser's
	// lock request from any other origin is a 403. Same-origin pages and
	// API clients need nothing here.
	TrustedOrigins []string
	// LoginSession, if set, names the caller's login session: an opaque
	// id, never the session cookie's value. Each lock taken over HTTP then
	// belongs to that login, and EndLogin releases them all. Without it, a
	// lock ends when its page releases it or its lease runs out.
	LoginSession func(*http.Request) (string, error)
	// TakeOver decides who may take over a lock (POST …/lock/takeover),
	// for each of its holders: nil error allows, anything else is a 403
	// whose text the caller sees. Default SameUserTakeOver: only the
	// holder's own principal (another tab, a reload). Taking over another
	// user's lock is then also asked of the plugin's Config.Authorize
	// ("take_over"), as force releases are.
	TakeOver func(r *http.Request, principal string, holder offlinelock.Lock) error
	// DefaultTTL is the lease when a request names no ttlSeconds (default
	// 5 minutes); MaxTTL is the longest allowed (default 900 s). A
	// ttlSeconds outside 1..MaxTTL is a 400.
	DefaultTTL, MaxTTL time.Duration
	// StreamOpens is how many event streams may be opening (reading the
	// database) at once; the others wait their turn, so that pages opening
	// together take at most this many connections. Default 8.
	StreamOpens int
	// Logger receives admin actions and internal errors (whose text never
	// reaches a response); default slog.Default().
	Logger *slog.Logger
}

// Server serves the lock endpoints of Config.Resources.
type Server struct {
	cfg       Config
	resources map[string]*resource

	mu      sync.Mutex
	streams map[string]map[chan struct{}]struct{} // open event streams by loginKey, closed by EndLogin
	opening chan struct{}                         // a token per event stream opening now (Config.StreamOpens)
}

// loginKey names one login of one principal among the open streams.
func loginKey(principal, login string) string { return principal + "\x00" + login }

// openStream registers r's login's stream (Config.LoginSession): ended
// closes when EndLogin ends it; done forgets it.
func (s *Server) openStream(r *http.Request, principal string) (ended <-chan struct{}, done func()) {
	if s.cfg.LoginSession == nil {
		return nil, func() {}
	}
	login, err := s.cfg.LoginSession(r)
	if err != nil || login == "" {
		return nil, func() {}
	}
	k, ch := loginKey(principal, login), make(chan struct{})
	s.mu.Lock()
	if s.streams == nil {
		s.streams = map[string]map[chan struct{}]struct{}{}
	}
	if s.streams[k] == nil {
		s.streams[k] = map[chan struct{}]struct{}{}
	}
	s.streams[k][ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, open := s.streams[k][ch]; open {
			delete(s.streams[k], ch)
			if len(s.streams[k]) == 0 {
				delete(s.streams, k)
			}
		}
	}
}

// endStreams ends the open event streams of principal's login.
func (s *Server) endStreams(principal, login string) {
	k := loginKey(principal, login)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.streams[k] {
		close(ch)
	}
	delete(s.streams, k)
}

type resource struct {
	Resource
	table string
	typ   reflect.Type
	pk    reflect.StructField
	pkCol string
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Locks == nil || cfg.DB == nil || cfg.Principal == nil {
		return nil, errors.New("httplock: Config needs Locks, DB and Principal")
	}
	for _, o := range cfg.TrustedOrigins {
		if err := http.NewCrossOriginProtection().AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("httplock: Config.TrustedOrigins: %w", err)
		}
	}
	if cfg.MaxTTL == 0 {
		cfg.MaxTTL = 900 * time.Second
	}
	if cfg.DefaultTTL == 0 {
		cfg.DefaultTTL = min(5*time.Minute, cfg.MaxTTL)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StreamOpens <= 0 {
		cfg.StreamOpens = 8
	}
	s := &Server{cfg: cfg, resources: map[string]*resource{}, opening: make(chan struct{}, cfg.StreamOpens)}
	for _, r := range cfg.Resources {
		if !pathSegment(r.Name) {
			return nil, fmt.Errorf("httplock: resource name %q must be one URL path segment of letters, digits and -._~ (Middleware finds a route's record by it)", r.Name)
		}
		stmt := &gorm.Statement{DB: cfg.DB}
		if err := stmt.Parse(r.Model); err != nil {
			return nil, fmt.Errorf("httplock: resource %s: %w", r.Name, err)
		}
		if len(stmt.Schema.PrimaryFields) != 1 {
			return nil, fmt.Errorf("httplock: resource %s: model %s needs a single-column primary key", r.Name, stmt.Schema.Name)
		}
		if isLockBodyName(r.IDName) {
			return nil, fmt.Errorf("httplock: resource %s: IDName %q is already a name in lock bodies", r.Name, r.IDName)
		}
		if r.Singular == "" {
			r.Singular = strings.TrimSuffix(r.Name, "s")
		}
		pk := stmt.Schema.PrimaryFields[0]
		switch pk.FieldType.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.String:
		default:
			return nil, fmt.Errorf("httplock: resource %s: primary key %s.%s is a %s; ids in URLs must be integers or strings",
				r.Name, stmt.Schema.Name, pk.Name, pk.FieldType)
		}
		s.resources[r.Name] = &resource{Resource: r, table: stmt.Table, typ: stmt.Schema.ModelType, pk: pk.StructField, pkCol: pk.DBName}
	}
	return s, nil
}

// Register adds the lock endpoints to mux:
//
//	POST /{resource}/{id}/lock           take a lock (201), or refresh it with its Lock-Token (200)
//	POST /{resource}/{id}/unlock         give it up with its Lock-Token (204)
//	GET  /{resource}/{id}/lock           who holds it and until when (200), or 404
//	POST /{resource}/{id}/lock/takeover  take it over (201; Config.TakeOver decides who may)
//	POST /{resource}/{id}/lock/request   ask its holder to let the caller edit (202)
//	GET  /{resource}/{id}/lock/events    its lock events, as a text/event-stream
//	GET  /lock/events?watch=res/id…      several records' events in one stream (a browser's tabs share it)
//	GET  /offlinelock.js                 the browser client (ServeClient)
//	GET  /openapi.yaml                   the OpenAPI document (ServeOpenAPI)
//
// Each resource gets its own patterns, beside the application's routes;
// the application must not register GET /openapi.yaml itself.
func (s *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /openapi.yaml", s.ServeOpenAPI)
	mux.HandleFunc("GET /offlinelock.js", s.ServeClient)
	mux.HandleFunc("GET /lock/events", s.sharedEvents)
	origins := s.crossOrigin(s.cfg.TrustedOrigins, "cross-origin request refused: lock from the application's own pages, an origin in httplock.Config.TrustedOrigins, or an API client")
	for name, res := range s.resources {
		with := func(h func(http.ResponseWriter, *http.Request, *resource) error) http.HandlerFunc {
			return s.handle(func(w http.ResponseWriter, r *http.Request) error { return h(w, r, res) })
		}
		mux.Handle("POST /"+name+"/{id}/lock", origins.Handler(with(s.lock)))
		mux.Handle("POST /"+name+"/{id}/unlock", origins.Handler(with(s.unlock)))
		mux.HandleFunc("GET /"+name+"/{id}/lock", with(s.info))
		mux.Handle("POST /"+name+"/{id}/lock/takeover", origins.Handler(with(s.takeOver)))
		mux.Handle("POST /"+name+"/{id}/lock/request", origins.Handler(with(s.request)))
		mux.HandleFunc("GET /"+name+"/{id}/lock/events", with(s.events))
	}
}

// handle is h with its error answered by WriteError.
func (s *Server) handle(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.WriteError(w, r, err)
		}
	}
}

// Handler is a mux with the lock endpoints only; anything else is a 404 problem.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.Register(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.WriteError(w, r, errUnknownResource) })
	return mux
}

// target builds a model value of res with id (from the URL) as its primary key.
func (s *Server) target(res *resource, id string) (*resource, any, error) {
	if res == nil {
		return nil, nil, errUnknownResource
	}
	if id == "" || len(id) > 255 || strings.ContainsRune(id, 0) || !utf8.ValidString(id) {
		return nil, nil, badRequest("the id is empty, too long, or not UTF-8 text")
	}
	v := reflect.New(res.typ)
	f := v.Elem().FieldByIndex(res.pk.Index)
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || f.OverflowInt(n) || n == 0 {
			return nil, nil, notFound
		}
		f.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil || f.OverflowUint(n) || n == 0 {
			return nil, nil, notFound
		}
		f.SetUint(n)
	default: // a string: New refused other kinds
		f.SetString(id)
	}
	return res, v.Interface(), nil
}

// newSession is a fresh opaque session for one HTTP lock.
func newSession(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// lockSession is newSession tagged with a hash of r's login session, so that
// EndLogin finds it.
func (s *Server) lockSession(r *http.Request) string {
	if s.cfg.LoginSession != nil {
		if login, err := s.cfg.LoginSession(r); err == nil && login != "" {
			return newSession(loginPrefix(login))
		}
	}
	return newSession("http-")
}

func loginPrefix(login string) string {
	h := sha256.Sum256([]byte("offlinelock login\x00" + login))
	return "http-" + hex.EncodeToString(h[:8]) + "-"
}

// EndLogin releases every lock that principal took over HTTP in login
// session login (Config.LoginSession), at sign-out or when the session
// expires, and returns how many. Their pages are told (released,
// signed-out); the login's event streams on this Server end at once,
// elsewhere at their next event, once Config.Principal no longer answers.
func (s *Server) EndLogin(ctx context.Context, principal, login string) (int64, error) {
	if principal == "" || login == "" {
		return 0, nil
	}
	s.endStreams(principal, login)
	held, err := s.cfg.Locks.List(s.cfg.DB.WithContext(ctx), offlinelock.Filter{User: principal})
	if err != nil {
		return 0, err
	}
	prefix, done, total := loginPrefix(login), map[string]bool{}, int64(0)
	for _, l := range held {
		if !strings.HasPrefix(l.Owner.Session, prefix) || done[l.Owner.Session] {
			continue
		}
		done[l.Owner.Session] = true
		n, err := s.cfg.Locks.EndSession(s.cfg.DB.WithContext(offlinelock.WithOwner(ctx, l.Owner)), l.Owner.Session)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// pathSegment says whether name is one URL path segment needing no escape,
// as Register and Middleware require.
func pathSegment(name string) bool {
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)) {
			return false
		}
	}
	return name != ""
}
