package httplock

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"maps"
	"net/http"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/offlinelock/offlinelock"
)

//go:embed console.html
var consoleFiles embed.FS

const (
	// consoleMax is how many locks one view reads (more say "more than");
	// consolePage is how many a page shows.
	consoleMax  = 10000
	consolePage = 100
	// csrfTTL is how long a rendered release form stays usable.
	csrfTTL = 12 * time.Hour
)

// console serves one Server's lock console; its key signs its forms.
type console struct {
	s       *Server
	key     []byte
	page    *template.Template
	origins *http.CrossOriginProtection
}

// ConsoleHandler serves the lock console, an HTML page for admins, to the
// requests Config.Admin accepts (403 to the others):
//
//	GET  /admin/console?resource=orders&user=…  the live locks, oldest first, each with a release form
//	POST /admin/console/release                 force-release one record (a reason is required), logged like the admin endpoint
//
// It needs no JavaScript, loads nothing from elsewhere, and never shows a
// lock's token. Mount it with mux.Handle("/admin/console", h) and
// mux.Handle("/admin/console/", h), or use RegisterConsole.
func (s *Server) ConsoleHandler() http.Handler {
	mux := http.NewServeMux()
	s.RegisterConsole(mux)
	return mux
}

// RegisterConsole adds the lock console's routes (see ConsoleHandler) to
// mux, each behind Config.Admin. A release needs a form the console
// rendered for the same admin within 12 hours, from its own origin.
func (s *Server) RegisterConsole(mux *http.ServeMux) {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand, Go 1.24+)
	c := &console{s: s, key: key, origins: s.sameOrigin(),
		page: template.Must(template.ParseFS(consoleFiles, "console.html"))}
	mux.Handle("GET /admin/console", secureHeaders(c.adminPage(c.list)))
	mux.Handle("POST /admin/console/release", secureHeaders(c.origins.Handler(c.adminPage(c.release))))
	mux.Handle("POST /admin/console/release-user", secureHeaders(c.origins.Handler(c.adminPage(c.releaseUser))))
}

// postedForm reads a release form (admin, CSRF token, filter to show again)
// before anything is released.
func (c *console) postedForm(w http.ResponseWriter, r *http.Request) (admin string, f consoleFilter, err error) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return "", f, badRequest("the form could not be read")
	}
	if admin, err = c.s.cfg.Principal(r); err != nil || admin == "" {
		return "", f, offlinelock.ErrNoOwner
	}
	if !c.validCSRF(r.PostForm.Get("csrf"), admin, time.Now()) {
		return "", f, forbidden("the release form is stale or was not rendered for you: reload the console")
	}
	f = filterOf(r.PostForm)
	return admin, f, c.checkFilter(f)
}

// releaseUser is POST /admin/console/release-user (owner_user, reason,
// csrf): releaseAllOf, each release logged.
func (c *console) releaseUser(w http.ResponseWriter, r *http.Request) {
	admin, f, err := c.postedForm(w, r)
	if err != nil {
		c.s.WriteError(w, r, err)
		return
	}
	user, reason := r.PostForm.Get("owner_user"), strings.TrimSpace(r.PostForm.Get("reason"))
	if user == "" || !utf8.ValidString(user) || len(user) > 255 || reason == "" || len(reason) > 1000 || !utf8.ValidString(reason) || strings.ContainsRune(reason, 0) {
		c.render(w, r, http.StatusBadRequest, f, &consoleResult{Message: "releasing a user's locks needs the user and a reason (at most 1000 bytes): nothing was released"})
		return
	}
	released, skipped, err := c.releaseAllOf(r, admin, user, reason)
	if err != nil {
		status, res := c.outcome(r, err, "the locks of "+user)
		c.render(w, r, status, f, res)
		return
	}
	msg := fmt.Sprintf("released %d records of %s (reason: %s)", len(released), user, reason)
	if len(skipped) > 0 {
		msg += "; skipped, as others hold them too: " + strings.Join(skipped, ", ")
	}
	c.render(w, r, http.StatusOK, f, &consoleResult{OK: true, Message: msg})
}

// adminPage is adminOnly for a browser: a refusal is an HTML page (403),
// which says no more than the JSON refusal does.
func (c *console) adminPage(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.s.cfg.Admin != nil && c.s.cfg.Admin(r) == nil {
			next(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Forbidden</title></head>\n"+
			"<body><h1>Forbidden</h1><p id=\"forbidden\">The lock console is for administrators. Sign in as one, or ask one.</p></body></html>\n")
	}
}

// secureHeaders makes every console response unframable, uncached and script-free.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'") // the page sets its own
		h.Set("Cache-Control", "no-store")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// consoleFilter is the console's view (filter, order, page) from GET's query
// or a release form's fields.
type consoleFilter struct {
	Resource, ID, User, Sort string
	Expired                  bool
	Page                     int
}

// consoleSorts are the orders the console offers, by column.
var consoleSorts = map[string]func(a, b offlinelock.Lock) int{
	"since": func(a, b offlinelock.Lock) int { return a.AcquiredAt.Compare(b.AcquiredAt) }, // oldest first: the likeliest forgotten
	"until": func(a, b offlinelock.Lock) int { return a.ExpiresAt.Compare(b.ExpiresAt) },
	"resource": func(a, b offlinelock.Lock) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.ID, b.ID))
	},
	"user": func(a, b offlinelock.Lock) int { return cmp.Compare(a.Owner.User, b.Owner.User) },
}

func filterOf(v interface{ Get(string) string }) consoleFilter {
	f := consoleFilter{Resource: v.Get("resource"), ID: v.Get("id"), User: v.Get("user"), Sort: v.Get("sort"), Expired: v.Get("expired") == "1"}
	if _, ok := consoleSorts[f.Sort]; !ok {
		f.Sort = "since"
	}
	f.Page, _ = strconv.Atoi(v.Get("page"))
	f.Page = max(f.Page, 1)
	return f
}

// Query is the filter as a URL query, for links (with the page and order
// changed by the template).
func (f consoleFilter) query(sort string, page int) string {
	q := neturl.Values{}
	for k, v := range map[string]string{"resource": f.Resource, "id": f.ID, "user": f.User, "sort": sort} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Expired {
		q.Set("expired", "1")
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	return "/admin/console?" + q.Encode()
}

// list is GET /admin/console.
func (c *console) list(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, filterOf(r.URL.Query()), nil)
}

// consoleResult is the outcome of a release, shown above the list.
type consoleResult struct {
	OK      bool
	Message string
}

// release is POST /admin/console/release: key_resource, key_id,
// key_generation (stillShown), reason, csrf and the filter to show again.
func (c *console) release(w http.ResponseWriter, r *http.Request) {
	admin, f, err := c.postedForm(w, r)
	if err != nil {
		c.s.WriteError(w, r, err)
		return
	}
	table, id := r.PostForm.Get("key_resource"), r.PostForm.Get("key_id")
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if table == "" || id == "" {
		c.render(w, r, http.StatusBadRequest, f, &consoleResult{Message: "the form names no lock"})
		return
	}
	if reason == "" || len(reason) > 1000 || !utf8.ValidString(reason) || strings.ContainsRune(reason, 0) {
		c.render(w, r, http.StatusBadRequest, f, &consoleResult{Message: "a force release needs a reason (at most 1000 bytes): nothing was released"})
		return
	}
	ctx := offlinelock.WithOwner(r.Context(), offlinelock.Owner{Session: newSession("admin-"), User: admin})
	err = c.stillShown(r, table, id, r.PostForm.Get("key_generation"))
	if err == nil {
		err = c.s.cfg.Locks.ForceRelease(c.s.cfg.DB.WithContext(ctx), table, id)
	}
	c.s.cfg.Logger.WarnContext(ctx, "httplock: force release", slog.String("admin", admin),
		slog.String("resource", c.s.apiName(table)), slog.String("id", id), slog.String("reason", reason),
		slog.Bool("done", err == nil), slog.String("via", "console"))
	status, res := c.outcome(r, err, c.s.name(table, id))
	if err == nil {
		res.Message += " (reason: " + reason + ")"
	}
	c.render(w, r, status, f, res)
}

// errGone is a release form whose lock is no longer on the record.
var errGone = errors.New("httplock: the lock the console showed is gone")

// releaseAllOf force-releases the records user alone locks, logged one by
// one, naming those released and those skipped (shared with others).
func (c *console) releaseAllOf(r *http.Request, admin, user, reason string) (released, skipped []string, err error) {
	db := c.s.cfg.DB.WithContext(r.Context())
	theirs, err := c.s.cfg.Locks.List(db, offlinelock.Filter{User: user})
	if err != nil {
		return nil, nil, err
	}
	ctx := offlinelock.WithOwner(r.Context(), offlinelock.Owner{Session: newSession("admin-"), User: admin})
	done := map[[2]string]bool{}
	for _, l := range theirs {
		if k := [2]string{l.Resource, l.ID}; done[k] {
			continue
		} else {
			done[k] = true
		}
		holders, err := c.s.cfg.Locks.List(db, offlinelock.Filter{Resource: l.Resource, ID: l.ID})
		if err != nil {
			return released, skipped, err
		}
		if slices.ContainsFunc(holders, func(h offlinelock.Lock) bool { return h.Owner.User != user }) {
			skipped = append(skipped, c.s.name(l.Resource, l.ID))
			continue
		}
		err = c.s.cfg.Locks.ForceRelease(c.s.cfg.DB.WithContext(ctx), l.Resource, l.ID)
		c.s.cfg.Logger.WarnContext(ctx, "httplock: force release", slog.String("admin", admin),
			slog.String("resource", c.s.apiName(l.Resource)), slog.String("id", l.ID), slog.String("reason", reason),
			slog.Bool("done", err == nil), slog.String("via", "console, all of "+user))
		if err != nil && !errors.Is(err, offlinelock.ErrNotLocked) {
			return released, skipped, err
		}
		released = append(released, c.s.name(l.Resource, l.ID))
	}
	return released, skipped, nil
}

// stillShown checks that the locks the form showed (by generation) still
// hold the record; a form without generations releases whatever holds it.
func (c *console) stillShown(r *http.Request, table, id, generations string) error {
	if generations == "" {
		return nil
	}
	shown := map[int64]bool{}
	for _, g := range strings.Split(generations, ",") {
		gen, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: key_generation is not a list of numbers", offlinelock.ErrInvalid)
		}
		shown[gen] = true
	}
	locks, err := c.s.cfg.Locks.List(c.s.cfg.DB.WithContext(r.Context()), offlinelock.Filter{Resource: table, ID: id})
	if err != nil {
		return err
	}
	if len(locks) == 0 {
		return errGone
	}
	for _, l := range locks {
		if !shown[l.Generation] {
			return errGone
		}
	}
	return nil
}

// checkFilter refuses a filter the page cannot be drawn for: an unknown
// resource, an id no key can be.
func (c *console) checkFilter(f consoleFilter) error {
	if _, ok := c.s.resources[f.Resource]; f.Resource != "" && !ok {
		return errUnknownResource
	}
	if len(f.ID) > 255 || !utf8.ValidString(f.ID) || strings.ContainsRune(f.ID, 0) {
		return badRequest("the id filter is not an id")
	}
	return nil
}

// outcome is the status and message of a release that ended with err.
func (c *console) outcome(r *http.Request, err error, what string) (int, *consoleResult) {
	switch {
	case err == nil:
		return http.StatusOK, &consoleResult{OK: true, Message: "released " + what}
	case errors.Is(err, errGone):
		return http.StatusConflict, &consoleResult{Message: "the lock on " + what + " shown on your page is gone (released, or taken by someone else since): nothing was released; reload the console"}
	case errors.Is(err, offlinelock.ErrNotLocked):
		return http.StatusNotFound, &consoleResult{Message: "nobody holds a lock on " + what + " any more: nothing was released"}
	case errors.Is(err, offlinelock.ErrForbidden):
		return http.StatusForbidden, &consoleResult{Message: "you may not release " + what + " (refused by the plugin's Authorize)"}
	case errors.Is(err, offlinelock.ErrInvalid):
		return http.StatusBadRequest, &consoleResult{Message: "the form names no valid lock"}
	}
	c.s.cfg.Logger.ErrorContext(r.Context(), "httplock: internal error", slog.String("method", r.Method),
		slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	return http.StatusInternalServerError, &consoleResult{Message: "the server could not complete the release"}
}

// csrf is the release forms' token for admin: an expiry and its HMAC with
// the admin under the console's key, good for 12 hours.
func (c *console) csrf(admin string, now time.Time) string {
	exp := strconv.FormatInt(now.Add(csrfTTL).Unix(), 10)
	return exp + "." + c.mac(admin, exp)
}

func (c *console) validCSRF(token, admin string, now time.Time) bool {
	exp, mac, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || now.Unix() >= unix || unix > now.Add(csrfTTL).Unix() {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(c.mac(admin, exp)))
}

func (c *console) mac(admin, exp string) string {
	m := hmac.New(sha256.New, c.key)
	fmt.Fprintf(m, "offlinelock console release\x00%s\x00%s", admin, exp)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// consoleRow is one lock as the console shows it.
type consoleRow struct {
	Resource, Table, ID, Access, User, Session, Reason string
	Since, Until, Left, SinceAgo, UntilIn              string
	Generation                                         int64  // the row's lock
	Generations                                        string // every lock the page shows on the record: the release form's key_generation
}

// consoleView is what console.html renders.
type consoleView struct {
	Nonce, CSRF, Admin string
	Filter             consoleFilter
	Resources          []string
	Rows               []consoleRow
	Count              int  // the locks the filter matches (at most consoleMax)
	More               bool // more than consoleMax match
	First, Last        int  // the rows of this page, counted from 1
	Prev, Next, Self   string
	SortBy             map[string]string // column → the link that sorts by it
	Result             *consoleResult
	Now                string
	Users              []string // the users on this page, for the bulk release
}

// render writes the console page: f's page of locks and a release's result.
func (c *console) render(w http.ResponseWriter, r *http.Request, status int, f consoleFilter, res *consoleResult) {
	admin, err := c.s.cfg.Principal(r)
	if err != nil || admin == "" {
		c.s.WriteError(w, r, offlinelock.ErrNoOwner)
		return
	}
	if err := c.checkFilter(f); err != nil {
		c.s.WriteError(w, r, err)
		return
	}
	locks, err := c.matching(r, f)
	if err != nil {
		c.s.WriteError(w, r, err)
		return
	}
	now := time.Now()
	v := consoleView{Nonce: newSession(""), CSRF: c.csrf(admin, now), Admin: admin, Filter: f, Result: res,
		Now: now.UTC().Format(time.RFC3339), More: len(locks) > consoleMax, SortBy: map[string]string{}}
	v.Resources = slices.Sorted(maps.Keys(c.s.resources))
	for col := range consoleSorts {
		v.SortBy[col] = f.query(col, 1)
	}
	locks = locks[:min(len(locks), consoleMax)]
	v.Count = len(locks)
	c.sortLocks(locks, f.Sort)
	from, to := v.paginate(f, len(locks))
	v.Rows = c.rows(locks[from:to], now, generationsByRecord(locks))
	for _, row := range v.Rows {
		v.Users = append(v.Users, row.User)
	}
	slices.Sort(v.Users)
	v.Users = slices.Compact(v.Users)
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+v.Nonce+"'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.page.Execute(w, v); err != nil {
		c.s.cfg.Logger.ErrorContext(r.Context(), "httplock: console page", slog.String("error", err.Error()))
	}
}

// matching is the locks f selects, consoleMax+1 at most (one more tells
// the page there are more).
func (c *console) matching(r *http.Request, f consoleFilter) ([]offlinelock.Lock, error) {
	filter := offlinelock.Filter{ID: f.ID, Expired: f.Expired, Limit: consoleMax + 1}
	if f.Resource != "" {
		filter.Resource = c.s.resources[f.Resource].table
	}
	locks, err := c.s.cfg.Locks.List(c.s.cfg.DB.WithContext(r.Context()), filter)
	if err != nil {
		return nil, err
	}
	if f.User != "" { // part of a user name, in any case
		part := strings.ToLower(f.User)
		locks = slices.DeleteFunc(locks, func(l offlinelock.Lock) bool { return !strings.Contains(strings.ToLower(l.Owner.User), part) })
	}
	return locks, nil
}

// paginate sets v's page of n locks from f (a page past the last is the
// last) and returns the page's bounds.
func (v *consoleView) paginate(f consoleFilter, n int) (from, to int) {
	pages := max((n+consolePage-1)/consolePage, 1)
	f.Page = min(f.Page, pages)
	v.Filter = f
	from, to = (f.Page-1)*consolePage, min(f.Page*consolePage, n)
	v.First, v.Last = from+1, to
	v.Self = f.query(f.Sort, f.Page)
	if f.Page > 1 {
		v.Prev = f.query(f.Sort, f.Page-1)
	}
	if f.Page < pages {
		v.Next = f.query(f.Sort, f.Page+1)
	}
	return from, to
}

// sortLocks orders locks by the column sort, then by resource, id and
// user, so that every order is total.
func (c *console) sortLocks(locks []offlinelock.Lock, sort string) {
	by := consoleSorts[sort]
	slices.SortStableFunc(locks, func(a, b offlinelock.Lock) int {
		return cmp.Or(by(a, b), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Owner.User, b.Owner.User))
	})
}

// generationsByRecord lists, per record, the generations of its locks
// among locks: a release form carries them all (stillShown).
func generationsByRecord(locks []offlinelock.Lock) map[[2]string]string {
	out := map[[2]string]string{}
	for _, l := range locks {
		k := [2]string{l.Resource, l.ID}
		if out[k] != "" {
			out[k] += ","
		}
		out[k] += strconv.FormatInt(l.Generation, 10)
	}
	return out
}

// rows formats locks; the tokens stay behind, and sessions are shown cut
// (enough to tell two apart, not to present one).
func (c *console) rows(locks []offlinelock.Lock, now time.Time, gens map[[2]string]string) []consoleRow {
	out := make([]consoleRow, 0, len(locks))
	for _, l := range locks {
		out = append(out, consoleRow{Resource: c.s.apiName(l.Resource), Table: l.Resource, ID: l.ID,
			Access: string(l.Access), User: l.Owner.User, Session: redact(l.Owner.Session), Reason: l.Reason,
			Generation: l.Generation, Generations: gens[[2]string{l.Resource, l.ID}],
			Since: l.AcquiredAt.UTC().Format(time.RFC3339), Until: l.ExpiresAt.UTC().Format(time.RFC3339),
			SinceAgo: ago(now.Sub(l.AcquiredAt)), UntilIn: ahead(l.ExpiresAt.Sub(now)),
			Left: max(l.ExpiresAt.Sub(now), 0).Round(time.Second).String()})
	}
	return out
}

// redact shows the first characters of a session, enough to tell two
// apart on one page.
func redact(session string) string {
	if n := 10; utf8.RuneCountInString(session) > n {
		return string([]rune(session)[:n]) + "…"
	}
	return session
}

// ago is d as people say it: "just now", "3 min ago", "2 h ago", "4 days ago".
func ago(d time.Duration) string {
	if d < time.Minute {
		return "just now"
	}
	return relative(d) + " ago"
}

// ahead is d as people say it: "in 3 min", or "expired" when past.
func ahead(d time.Duration) string {
	if d <= 0 {
		return "expired"
	}
	if d < time.Minute {
		return "in under a minute"
	}
	return "in " + relative(d)
}

func relative(d time.Duration) string {
	switch {
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days"
}
