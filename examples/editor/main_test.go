package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// testOptions are quick timings: a lease of a few seconds, renewed every
// second, watched every 100 ms.
func testOptions() options {
	return options{ttl: 4 * time.Second, renew: time.Second, sessionIdle: time.Hour, idleTakeOver: time.Hour, watchEvery: 100 * time.Millisecond}
}

// eachDatabase runs fn with the editor on SQLite, PostgreSQL (a schema of
// its own) and MySQL or MariaDB (a database of its own).
func eachDatabase(t *testing.T, o options, fn func(t *testing.T, a *app, base string)) {
	run := func(t *testing.T, dsn string) {
		a, closeDB, err := build(context.Background(), dsn, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeDB)
		routes := a.routes()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			wire.saw(r)
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/lock") {
				lockPosts.Add(1)
				if faults.lock(w, r) {
					return
				}
				if r.Header.Get("Lock-Token") != "" {
					w = renewals.watch(w, r)
				}
			}
			if strings.HasSuffix(r.URL.Path, "/lock/events") {
				streams.wait(r)
				context.AfterFunc(r.Context(), wire.stream()) // the connection's end, or the handler's
				w = wire.serving(w, r)
			}
			routes.ServeHTTP(w, r)
		}))
		streams.srv = srv
		t.Cleanup(srv.Close)
		t.Cleanup(srv.CloseClientConnections) // event streams
		fn(t, a, srv.URL)
	}
	t.Run("sqlite", func(t *testing.T) { run(t, "") })
	t.Run("postgres", func(t *testing.T) {
		dsn := serverDSN(t, "OFFLINELOCK_POSTGRES_DSN", "PostgreSQL")
		db := openGorm(t, postgres.Open(dsn))
		schema := fmt.Sprintf("editor_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
		if err := db.Exec("CREATE SCHEMA " + schema).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP SCHEMA " + schema + " CASCADE") })
		run(t, dsn+" search_path="+schema)
	})
	t.Run("mysql", func(t *testing.T) {
		dsn := serverDSN(t, "OFFLINELOCK_MYSQL_DSN", "MySQL or MariaDB")
		cfg, err := mysqldriver.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		db := openGorm(t, mysql.Open(dsn))
		cfg.DBName = fmt.Sprintf("editor_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
		if err := db.Exec("CREATE DATABASE " + cfg.DBName).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP DATABASE " + cfg.DBName) })
		run(t, cfg.FormatDSN())
	})
}

// lockPosts counts the POST …/lock requests the test servers answered:
// the pages' lock and renewal requests.
var lockPosts atomic.Int64

// faults makes the test servers fail lock requests, as a network or a
// proxy does: renewals (with a Lock-Token) and first locks (without one)
// each take the next of their own list, while it lasts.
var faults faultList

// A fault is how one lock request fails.
type fault int

const (
	dropConnection fault = iota // the connection closes unanswered: the browser's fetch fails
	badGateway                  // a proxy's 502
)

type faultList struct {
	mu               sync.Mutex
	renewals, firsts []fault
	served           chan fault // each fault served, for the test to wait on
}

// set arms the faults and returns the channel the served ones arrive on.
func (f *faultList) set(renewals, firsts []fault) <-chan fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renewals, f.firsts, f.served = renewals, firsts, make(chan fault, len(renewals)+len(firsts))
	return f.served
}

// lock fails r with the next fault for its kind, if any, and says so.
func (f *faultList) lock(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	list := &f.firsts
	if r.Header.Get("Lock-Token") != "" {
		list = &f.renewals
	}
	if len(*list) == 0 {
		f.mu.Unlock()
		return false
	}
	next := (*list)[0]
	*list = (*list)[1:]
	served := f.served
	f.mu.Unlock()
	switch next {
	case dropConnection:
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	case badGateway:
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}
	served <- next
	return true
}

// streams lets the browser test cut the pages' event streams: while they
// are cut, a page's reconnect waits at the server's door.
var streams streamGate

type streamGate struct {
	srv     *httptest.Server
	mu      sync.Mutex
	cutOff  chan struct{} // while cut: closed when the streams may open again
	lastIDs []string      // the Last-Event-ID of each reconnect while cut
}

// cut closes every connection to the server and holds each new event
// stream until reopen.
func (g *streamGate) cut() {
	g.mu.Lock()
	g.cutOff, g.lastIDs = make(chan struct{}), nil
	g.mu.Unlock()
	g.srv.CloseClientConnections()
}

// reopen lets the held streams in, and says how many came, with which
// Last-Event-ID.
func (g *streamGate) reopen() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.cutOff)
	g.cutOff = nil
	return g.lastIDs
}

func (g *streamGate) wait(r *http.Request) {
	g.mu.Lock()
	cutOff := g.cutOff
	if cutOff != nil {
		g.lastIDs = append(g.lastIDs, r.Header.Get("Last-Event-ID"))
	}
	g.mu.Unlock()
	if cutOff != nil {
		select {
		case <-cutOff:
		case <-r.Context().Done():
		}
	}
}

func openGorm(t *testing.T, d gorm.Dialector) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// serverDSN is env's DSN: the test skips without it, and fails under CI=true.
func serverDSN(t *testing.T, env, server string) string {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs %s: set %s", server, env)
		}
		t.Skipf("set %s to run on %s", env, server)
	}
	return dsn
}

// browser is a signed-in HTTP client with its own cookies.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func signIn(t *testing.T, base, user string) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, base: base, c: &http.Client{Jar: jar}}
	resp, err := b.c.PostForm(base+"/login", url.Values{"user": {user}, "password": {"demo"}})
	if err != nil || resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
		t.Fatalf("sign-in as %s: %v %v", user, resp, err)
	}
	resp.Body.Close()
	return b
}

// do sends a request with the browser's cookies; it answers the status,
// the Lock-Token header and the body.
func (b *browser) do(method, path, token, body string) (int, string, string) {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Lock-Token", token)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Lock-Token"), string(out)
}

func held(t *testing.T, a *app) []string {
	t.Helper()
	locks, err := a.locks.List(a.db, offlinelock.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range locks {
		out = append(out, l.ID+" "+l.Owner.User)
	}
	return out
}

// TestSignOutAndExpiryReleaseTheLocks: the locks a browser took end with
// its sign-in, whether it signs out or its session expires; another
// sign-in of the same user keeps its own.
func TestSignOutAndExpiryReleaseTheLocks(t *testing.T) {
	eachDatabase(t, testOptions(), func(t *testing.T, a *app, base string) {
		martin, laptop := signIn(t, base, "martin"), signIn(t, base, "martin")
		if status, _, _ := martin.do("POST", "/customers/129/lock", "", ""); status != http.StatusCreated {
			t.Fatalf("lock 129: %d", status)
		}
		if status, _, _ := laptop.do("POST", "/customers/130/lock", "", ""); status != http.StatusCreated {
			t.Fatalf("lock 130: %d", status)
		}
		if status, _, body := martin.do("POST", "/logout", "", ""); status != http.StatusOK {
			t.Fatalf("sign-out: %d %s", status, body)
		}
		if got := held(t, a); len(got) != 1 || got[0] != "130 martin" {
			t.Fatalf("after the sign-out the lock table holds %q", got)
		}

		a.sessions.now = func() time.Time { return time.Now().Add(2 * time.Hour) } // the laptop's session idles out
		a.sessions.expire()
		if got := held(t, a); len(got) != 0 {
			t.Fatalf("after the session expired the lock table holds %q", got)
		}
		if status, _, _ := laptop.do("POST", "/customers/130/lock", "", ""); status != http.StatusUnauthorized {
			t.Fatalf("an expired session locks: %d", status)
		}
	})
}

// TestTakeOverPolicy: David may not take Martin's lock while Martin's
// page keeps it; an admin may, and Martin's save is refused with a
// sentence.
func TestTakeOverPolicy(t *testing.T) {
	eachDatabase(t, testOptions(), func(t *testing.T, a *app, base string) {
		martin, david, admin := signIn(t, base, "martin"), signIn(t, base, "david"), signIn(t, base, "admin")
		_, token, _ := martin.do("POST", "/customers/129/lock", "", "")
		if status, _, body := david.do("POST", "/customers/129/lock/takeover", "", `{"reason": "mine"}`); status != http.StatusForbidden ||
			!strings.Contains(body, "martin is still editing") {
			t.Fatalf("David's take-over: %d %s", status, body)
		}
		if status, _, body := admin.do("POST", "/customers/129/lock/takeover", "", `{"reason": "the customer called"}`); status != http.StatusCreated {
			t.Fatalf("the admin's take-over: %d %s", status, body)
		}
		status, _, body := martin.do("PATCH", "/customers/129", token, `{"name": "Martin's", "credit": 1}`)
		if status != http.StatusLocked || !strings.Contains(body, "customer '129' is locked by admin until") {
			t.Fatalf("Martin's save after the take-over: %d %s", status, body)
		}
	})
}

// TestGuestsOnlyLook: the example's Resource.Allow lets "guest" see who
// holds a customer and watch it, and nothing else: a 403, and nothing
// changes.
func TestGuestsOnlyLook(t *testing.T) {
	eachDatabase(t, testOptions(), func(t *testing.T, a *app, base string) {
		martin, guest := signIn(t, base, "martin"), signIn(t, base, "guest")
		status, token, _ := martin.do("POST", "/customers/129/lock", "", "")
		if status != http.StatusCreated {
			t.Fatalf("martin's lock: %d", status)
		}
		for _, path := range []string{"/customers/129/lock", "/customers/130/lock", "/customers/129/lock/request", "/customers/129/lock/takeover"} {
			if status, _, body := guest.do("POST", path, "", ""); status != http.StatusForbidden || !strings.Contains(body, "guests may only look") {
				t.Errorf("a guest's POST %s: %d %s", path, status, body)
			}
		}
		if status, _, body := guest.do("POST", "/customers/129/unlock", token, ""); status != http.StatusForbidden {
			t.Errorf("a guest's unlock with martin's token: %d %s", status, body)
		}
		if status, _, body := guest.do("GET", "/customers/129/lock", "", ""); status != http.StatusOK || !strings.Contains(body, `"lockedBy":"martin"`) {
			t.Errorf("a guest's look: %d %s", status, body)
		}
		if got := held(t, a); len(got) != 1 || got[0] != "129 martin" {
			t.Fatalf("the guest changed the locks: %q", got)
		}
	})
}

// TestPagesRunUnderAStrictCSP: the pages allow only the application's own
// script and style files (no inline script or style, which
// offlinelock.js does not need either), and serve those files.
func TestPagesRunUnderAStrictCSP(t *testing.T) {
	eachDatabase(t, testOptions(), func(t *testing.T, a *app, base string) {
		martin := signIn(t, base, "martin")
		for _, path := range []string{"/", "/customers/129/edit"} {
			resp, err := martin.c.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := resp.Header.Get("Content-Security-Policy"); got != csp {
				t.Errorf("%s: Content-Security-Policy %q", path, got)
			}
			page := string(body)
			if strings.Count(page, "<script") != strings.Count(page, `<script type="module" src="/static/`) || strings.Contains(page, "style=") || strings.Contains(page, "<style") {
				t.Errorf("%s has inline script or style:\n%s", path, page)
			}
		}
		for path, kind := range map[string]string{"/static/edit.js": "text/javascript", "/static/list.js": "text/javascript", "/static/editor.css": "text/css"} {
			resp, err := martin.c.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), kind) {
				t.Errorf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
	})
}
