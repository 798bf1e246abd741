package httplock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// consoleEnv is an HTTP server with the lock endpoints, the admin
// endpoints and the console, on one database.
type consoleEnv struct {
	t     *testing.T
	base  string
	db    *gorm.DB
	locks *offlinelock.Plugin
	logs  *bytes.Buffer
}

// eachConsoleDB runs fn on SQLite, PostgreSQL and MySQL/MariaDB, with
// "admin" the only admin.
func eachConsoleDB(t *testing.T, fn func(t *testing.T, e *consoleEnv)) {
	eachConsoleDBWith(t, onlyAdmin, fn)
}

// eachConsoleDBWith is eachConsoleDB with admin as Config.Admin. The
// plugin's Authorize allows "admin" only.
func eachConsoleDBWith(t *testing.T, admin func(*http.Request) error, fn func(t *testing.T, e *consoleEnv)) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			var db *gorm.DB
			if name == "mysql" {
				db = openMySQLDB(t)
			} else {
				db = openDB(t, name)
			}
			logs := &bytes.Buffer{}
			log := slog.New(slog.NewTextHandler(logs, nil))
			locks := offlinelock.New(offlinelock.Config{Logger: log,
				Authorize: func(ctx context.Context, action string, l offlinelock.Lock) error {
					if o, _ := offlinelock.OwnerFrom(ctx); o.User == "admin" {
						return nil
					}
					return errors.New("admins only")
				}})
			require.NoError(t, db.Use(locks))
			require.NoError(t, db.AutoMigrate(&Order{}))
			if name == "mysql" { // binary and not padding, as the plugin requires of a text key
				require.NoError(t, db.Exec("ALTER TABLE orders MODIFY id VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL").Error)
			}
			srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal, Admin: admin, Logger: log,
				Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, Exists: anyID}}})
			require.NoError(t, err)
			mux := http.NewServeMux()
			srv.Register(mux)
			srv.RegisterConsole(mux)
			ts := httptest.NewServer(mux)
			t.Cleanup(ts.Close)
			fn(t, &consoleEnv{t: t, base: ts.URL, db: db, locks: locks, logs: logs})
		})
	}
}

// openMySQLDB opens a database of its own on the MySQL/MariaDB server of
// OFFLINELOCK_MYSQL_DSN: the root package's tests use the same table names.
func openMySQLDB(t *testing.T) *gorm.DB {
	dsn := os.Getenv("OFFLINELOCK_MYSQL_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true needs MySQL or MariaDB: set OFFLINELOCK_MYSQL_DSN")
		}
		t.Skip("set OFFLINELOCK_MYSQL_DSN to run on MySQL or MariaDB")
	}
	cfg, err := mysqldriver.ParseDSN(dsn)
	require.NoError(t, err)
	server, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	serverDB, _ := server.DB()
	t.Cleanup(func() { serverDB.Close() })
	cfg.DBName = "httplock_" + randomHex(6)
	require.NoError(t, server.Exec("CREATE DATABASE "+cfg.DBName).Error)
	t.Cleanup(func() { server.Exec("DROP DATABASE " + cfg.DBName) })
	db, err := gorm.Open(mysql.Open(cfg.FormatDSN()), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := db.DB()
	require.NoError(t, sqlDB.Ping())
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// take locks order id as user over HTTP and returns its token. It returns
// once the clock has moved past the lock's acquiredAt, so that locks taken
// one after another have distinct ages (the database's clock is this
// machine's).
func (e *consoleEnv) take(user, id string) string {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.base+"/orders/"+neturl.PathEscape(id)+"/lock", strings.NewReader(`{"ttlSeconds": 600}`))
	req.Header.Set("Authorization", "Bearer "+user)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(e.t, http.StatusCreated, resp.StatusCode, string(body))
	l, err := e.locks.LockByToken(e.db, resp.Header.Get("Lock-Token"))
	require.NoError(e.t, err)
	for !time.Now().After(l.AcquiredAt.Add(2 * time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
	return resp.Header.Get("Lock-Token")
}

// page is one console response.
type page struct {
	status int
	header http.Header
	body   string
}

var (
	rowRE  = regexp.MustCompile(`<tr class="lock" data-resource="([^"]*)" data-id="([^"]*)" data-user="([^"]*)">`)
	csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// rows are the locks the page lists, in order, as "resource/id user".
func (p page) rows() []string {
	out := []string{}
	for _, m := range rowRE.FindAllStringSubmatch(p.body, -1) {
		out = append(out, html.UnescapeString(m[1])+"/"+html.UnescapeString(m[2])+" "+html.UnescapeString(m[3]))
	}
	return out
}

func (p page) csrf(t *testing.T) string {
	m := csrfRE.FindStringSubmatch(p.body)
	require.NotNil(t, m, "the page has a release form: %s", p.body)
	return html.UnescapeString(m[1])
}

// get opens the console as user with the query q.
func (e *consoleEnv) get(user, q string) page {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.base+"/admin/console?"+q, nil)
	req.Header.Set("Authorization", "Bearer "+user)
	return e.send(req)
}

// post submits a release form as user; header adds browser headers.
func (e *consoleEnv) post(user string, form neturl.Values, header map[string]string) page {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.base+"/admin/console/release", strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return e.send(req)
}

// post2 submits form to path as user.
func (e *consoleEnv) post2(user, path string, form neturl.Values) page {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return e.send(req)
}

func (e *consoleEnv) send(req *http.Request) page {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return page{resp.StatusCode, resp.Header, string(b)}
}

// held is the lock table's view: "resource/id user" of every live lock.
func (e *consoleEnv) held() []string {
	e.t.Helper()
	locks, err := e.locks.List(e.db, offlinelock.Filter{})
	require.NoError(e.t, err)
	out := []string{}
	for _, l := range locks {
		out = append(out, l.Resource+"/"+l.ID+" "+l.Owner.User)
	}
	return out
}

func releaseForm(csrf, id, reason string) neturl.Values {
	return neturl.Values{"csrf": {csrf}, "key_resource": {"orders"}, "key_id": {id}, "reason": {reason}}
}

func TestConsoleListsFiltersAndSortsByAge(t *testing.T) {
	eachConsoleDB(t, func(t *testing.T, e *consoleEnv) {
		tokens := []string{e.take("usr_1", "ord_c"), e.take("usr_2", "ord_a"), e.take("usr_1", "ord_b")}

		p := e.get("admin", "")
		require.Equal(t, http.StatusOK, p.status, p.body)
		assert.Equal(t, "text/html; charset=utf-8", p.header.Get("Content-Type"))
		assert.Equal(t, []string{"orders/ord_c usr_1", "orders/ord_a usr_2", "orders/ord_b usr_1"}, p.rows(), "oldest first")
		assert.Contains(t, p.body, `<td class="mode mode-write" data-label="Mode">write</td>`)
		assert.Regexp(t, `<td class="left" data-label="Time left">(9m5\d|10m0)s</td>`, p.body, "time left of a 600 s lease")
		for _, tok := range tokens {
			assert.NotContains(t, p.body, tok, "no lock token in the page")
		}

		for _, tc := range []struct {
			query string
			rows  []string
		}{
			{"user=usr_1", []string{"orders/ord_c usr_1", "orders/ord_b usr_1"}},
			{"user=usr_2&resource=orders", []string{"orders/ord_a usr_2"}},
			{"resource=orders", []string{"orders/ord_c usr_1", "orders/ord_a usr_2", "orders/ord_b usr_1"}},
			{"user=nobody", []string{}},
		} {
			p := e.get("admin", tc.query)
			require.Equal(t, http.StatusOK, p.status, tc.query)
			assert.Equal(t, tc.rows, p.rows(), tc.query)
		}
		assert.Contains(t, e.get("admin", "user=nobody").body, "No live locks match this filter")
		assert.Equal(t, http.StatusNotFound, e.get("admin", "resource=nothing").status)
	})
}

func TestConsoleReleasesWithAReason(t *testing.T) {
	eachConsoleDB(t, func(t *testing.T, e *consoleEnv) {
		token := e.take("usr_1", "ord_1")
		e.take("usr_2", "ord_2")
		csrf := e.get("admin", "user=usr_1").csrf(t)

		// No reason (absent or blank): 400, nothing released.
		for _, reason := range []string{"", "   ", strings.Repeat("x", 1001)} {
			p := e.post("admin", releaseForm(csrf, "ord_1", reason), nil)
			assert.Equal(t, http.StatusBadRequest, p.status)
			assert.Contains(t, p.body, "needs a reason")
		}
		require.Equal(t, []string{"orders/ord_1 usr_1", "orders/ord_2 usr_2"}, e.held())

		form := releaseForm(csrf, "ord_1", "client crashed")
		form.Set("user", "usr_1") // the filter the page shows again
		p := e.post("admin", form, map[string]string{"Origin": e.base, "Sec-Fetch-Site": "same-origin"})
		require.Equal(t, http.StatusOK, p.status, p.body)
		assert.Contains(t, p.body, `class="result ok"`)
		assert.Contains(t, p.body, `>released order &#39;ord_1&#39; (reason: client crashed)</p>`)
		assert.Equal(t, []string{}, p.rows(), "the page shows the filter again, now empty")
		assert.Equal(t, []string{"orders/ord_2 usr_2"}, e.held(), "the database agrees")
		assert.Contains(t, e.logs.String(), `msg="httplock: force release" admin=admin resource=orders id=ord_1 reason="client crashed" done=true via=console`)
		assert.Contains(t, e.logs.String(), `msg="offlinelock: admin action" action=force_release resource=orders id=ord_1`)
		assert.NotContains(t, e.logs.String(), token)
		assert.NotContains(t, p.body, token)

		again := e.post("admin", form, nil)
		assert.Equal(t, http.StatusNotFound, again.status)
		assert.Contains(t, again.body, "nobody holds a lock on order &#39;ord_1&#39; any more")
	})
}

func TestConsoleIsForAdminsOnly(t *testing.T) {
	eachConsoleDB(t, func(t *testing.T, e *consoleEnv) {
		e.take("usr_1", "ord_1")
		csrf := e.get("admin", "").csrf(t)
		for _, user := range []string{"usr_1", "usr_2", ""} {
			p := e.get(user, "")
			assert.Equal(t, http.StatusForbidden, p.status, user)
			assert.NotContains(t, p.body, "ord_1", "a refusal shows no lock")
			assert.Equal(t, http.StatusForbidden, e.post(user, releaseForm(csrf, "ord_1", "mine now"), nil).status, user)
		}
		assert.Equal(t, []string{"orders/ord_1 usr_1"}, e.held())
	})
}

// TestConsoleRefusesForgedReleases: a release needs the CSRF token of a
// form rendered for this admin, and a browser's cross-origin POST is
// refused even with one.
func TestConsoleRefusesForgedReleases(t *testing.T) {
	eachConsoleDB(t, func(t *testing.T, e *consoleEnv) {
		e.take("usr_1", "ord_1")
		csrf := e.get("admin", "").csrf(t)
		exp, mac, _ := strings.Cut(csrf, ".")
		for name, tc := range map[string]struct {
			csrf   string
			header map[string]string
		}{
			"no token":               {"", nil},
			"garbage":                {"not-a-token", nil},
			"another mac":            {exp + "." + strings.Repeat("A", len(mac)), nil},
			"expiry moved":           {fmt.Sprint(time.Now().Add(time.Hour).Unix()) + "." + mac, nil},
			"expired":                {"1700000000." + mac, nil},
			"cross-site fetch":       {csrf, map[string]string{"Sec-Fetch-Site": "cross-site"}},
			"same-site, not origin":  {csrf, map[string]string{"Sec-Fetch-Site": "same-site"}},
			"foreign Origin":         {csrf, map[string]string{"Origin": "http://evil.example"}},
			"foreign Origin, no SFS": {csrf, map[string]string{"Origin": "https://attacker.test:8443"}},
		} {
			p := e.post("admin", releaseForm(tc.csrf, "ord_1", "forged"), tc.header)
			assert.Equal(t, http.StatusForbidden, p.status, name)
			assert.Equal(t, "DENY", p.header.Get("X-Frame-Options"), name)
		}
		assert.Equal(t, []string{"orders/ord_1 usr_1"}, e.held(), "nothing was released")
		assert.NotContains(t, e.logs.String(), "forged")
	})
}

func TestConsoleHeadersAndEscaping(t *testing.T) {
	eachConsoleDB(t, func(t *testing.T, e *consoleEnv) {
		evil := `<script>alert("x")</script>'`
		token := e.take(`usr_<b>"bold"</b>`, evil)
		p := e.get("admin", "user="+neturl.QueryEscape(`usr_<b>"bold"</b>`))
		require.Equal(t, http.StatusOK, p.status)
		assert.Equal(t, []string{"orders/" + evil + ` usr_<b>"bold"</b>`}, p.rows(), "listed, as it is")
		assert.NotContains(t, p.body, "<script")
		assert.NotContains(t, p.body, "<b>")
		assert.NotContains(t, p.body, token)
		csp := p.header.Get("Content-Security-Policy")
		assert.Regexp(t, `^default-src 'none'; style-src 'nonce-[0-9a-f]{24}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$`, csp)
		nonce := regexp.MustCompile(`nonce-([0-9a-f]+)`).FindStringSubmatch(csp)
		require.NotNil(t, nonce)
		assert.Contains(t, p.body, `<style nonce="`+nonce[1]+`">`)
		assert.NotContains(t, p.body, "<script")
		assert.Equal(t, "no-store", p.header.Get("Cache-Control"))
		assert.Equal(t, "DENY", p.header.Get("X-Frame-Options"))
		refused := e.get("usr_1", "")
		assert.Equal(t, "no-store", refused.header.Get("Cache-Control"), "a refusal too")
		assert.Equal(t, "default-src 'none'; frame-ancestors 'none'", refused.header.Get("Content-Security-Policy"))
		assert.Equal(t, "DENY", refused.header.Get("X-Frame-Options"))

		// The hostile id round-trips through the form: released.
		form := releaseForm(p.csrf(t), evil, "hostile id")
		require.Equal(t, http.StatusOK, e.post("admin", form, nil).status)
		assert.Equal(t, []string{}, e.held())
	})
}

// TestConsoleFormsArePerAdmin: a form rendered for one admin does not work
// for another, and an admin whom the plugin's Authorize refuses sees the
// refusal and releases nothing.
func TestConsoleFormsArePerAdmin(t *testing.T) {
	admins := func(r *http.Request) error {
		if user, _ := principal(r); user != "admin" && user != "auditor" {
			return errors.New("not an admin")
		}
		return nil
	}
	eachConsoleDBWith(t, admins, func(t *testing.T, e *consoleEnv) {
		e.take("usr_1", "ord_1")
		auditors := e.get("auditor", "")
		require.Equal(t, http.StatusOK, auditors.status)
		assert.Equal(t, []string{"orders/ord_1 usr_1"}, auditors.rows())

		p := e.post("admin", releaseForm(auditors.csrf(t), "ord_1", "borrowed form"), nil)
		assert.Equal(t, http.StatusForbidden, p.status, "another admin's form")
		p = e.post("auditor", releaseForm(auditors.csrf(t), "ord_1", "auditing"), nil)
		assert.Equal(t, http.StatusForbidden, p.status, "Authorize allows admin only")
		assert.Contains(t, p.body, "you may not release order &#39;ord_1&#39;")
		assert.Equal(t, []string{"orders/ord_1 usr_1"}, p.rows(), "the page still lists it")
		assert.Equal(t, []string{"orders/ord_1 usr_1"}, e.held(), "nothing was released")
		assert.Contains(t, e.logs.String(), `msg="offlinelock: admin action refused" action=force_release`)
		assert.Contains(t, e.logs.String(), `admin=auditor resource=orders id=ord_1 reason=auditing done=false via=console`)
	})
}

// TestConsoleViews: the console counts and pages the locks, sorts by a
// column, filters by an exact id and by part of a user name, shows the
// reason, a cut session and relative times with the UTC value, lists
// expired rows apart, and answers a non-admin with an HTML page.
func TestConsoleViews(t *testing.T) {
	eachConsoleDB(t, func(t *testing.T, e *consoleEnv) {
		e.take("usr_martin", "ord_c")
		e.take("usr_david", "ord_a")
		e.take("usr_martin", "ord_b")

		p := e.get("admin", "")
		require.Equal(t, http.StatusOK, p.status)
		assert.Contains(t, p.body, `<span>3 locks, showing 1–3</span>`)
		assert.Regexp(t, `<time datetime="[^"]+Z" title="[^"]+Z">just now</time>`, p.body)
		assert.Regexp(t, `<time datetime="[^"]+Z" title="[^"]+Z">in (9|10) min</time>`, p.body)
		assert.Regexp(t, `<td class="session" data-label="Session">http-.{5}…</td>`, p.body, "the session, cut")

		for _, tc := range []struct {
			query string
			rows  []string
		}{
			{"sort=resource", []string{"orders/ord_a usr_david", "orders/ord_b usr_martin", "orders/ord_c usr_martin"}},
			{"sort=user", []string{"orders/ord_a usr_david", "orders/ord_b usr_martin", "orders/ord_c usr_martin"}},
			{"sort=nonsense", []string{"orders/ord_c usr_martin", "orders/ord_a usr_david", "orders/ord_b usr_martin"}},
			{"user=MART", []string{"orders/ord_c usr_martin", "orders/ord_b usr_martin"}},
			{"id=ord_a", []string{"orders/ord_a usr_david"}},
			{"id=ord_", []string{}},
			{"expired=1", []string{}},
		} {
			p := e.get("admin", tc.query)
			require.Equal(t, http.StatusOK, p.status, tc.query)
			assert.Equal(t, tc.rows, p.rows(), tc.query)
		}
		assert.Contains(t, e.get("admin", "expired=1").body, "No expired rows")

		forbidden := e.get("usr_martin", "")
		assert.Equal(t, http.StatusForbidden, forbidden.status)
		assert.Equal(t, "text/html; charset=utf-8", forbidden.header.Get("Content-Type"))
		assert.Contains(t, forbidden.body, `id="forbidden"`)
		assert.NotContains(t, forbidden.body, "ord_")
	})
}

// TestConsolePages: a page shows 100 locks; previous and next keep the
// filter and the order.
func TestConsolePages(t *testing.T) {
	eachConsoleDB(t, func(t *testing.T, e *consoleEnv) {
		for i := range 105 {
			_, err := e.locks.Acquire(e.db.WithContext(offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: fmt.Sprintf("s%03d", i), User: "usr_bulk"})),
				&Order{ID: fmt.Sprintf("ord_%03d", i)}, offlinelock.Write)
			require.NoError(t, err)
		}
		p := e.get("admin", "sort=resource&user=bulk")
		require.Equal(t, http.StatusOK, p.status)
		assert.Contains(t, p.body, `<span>105 locks, showing 1–100</span>`)
		assert.Len(t, p.rows(), 100)
		assert.Equal(t, "orders/ord_000 usr_bulk", p.rows()[0])
		assert.Contains(t, p.body, `href="/admin/console?page=2&amp;sort=resource&amp;user=bulk" id="next"`)
		p2 := e.get("admin", "page=2&sort=resource&user=bulk")
		assert.Contains(t, p2.body, `<span>105 locks, showing 101–105</span>`)
		assert.Equal(t, []string{"orders/ord_100 usr_bulk", "orders/ord_101 usr_bulk", "orders/ord_102 usr_bulk", "orders/ord_103 usr_bulk", "orders/ord_104 usr_bulk"}, p2.rows())
		assert.Contains(t, p2.body, `id="prev"`)
		assert.NotContains(t, p2.body, `id="next"`)
		assert.Equal(t, p2.rows(), e.get("admin", "page=9&sort=resource&user=bulk").rows(), "past the last page: the last")
	})
}

// TestConsoleReleasesOnlyWhatItShowed: a release form carries every lock
// the page showed on the record; a reader who joined since is not
// released with them (409), and a form whose filter the page cannot show
// releases nothing.
func TestConsoleReleasesOnlyWhatItShowed(t *testing.T) {
	eachConsoleDB(t, func(t *testing.T, e *consoleEnv) {
		read := func(session, user string) {
			_, err := e.locks.Acquire(e.db.WithContext(offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: session, User: user})),
				&Order{ID: "ord_r"}, offlinelock.Read)
			require.NoError(t, err)
		}
		read("sa", "reader_a")
		page := e.get("admin", "id=ord_r")
		require.Equal(t, []string{"orders/ord_r reader_a"}, page.rows())
		gens := regexp.MustCompile(`name="key_generation" value="([^"]+)"`).FindStringSubmatch(page.body)
		require.NotNil(t, gens)
		read("sb", "reader_b_unseen")

		form := releaseForm(page.csrf(t), "ord_r", "stuck reader")
		form.Set("key_generation", gens[1])
		p := e.post("admin", form, nil)
		assert.Equal(t, http.StatusConflict, p.status, p.body)
		assert.ElementsMatch(t, []string{"orders/ord_r reader_a", "orders/ord_r reader_b_unseen"}, e.held())

		page = e.get("admin", "id=ord_r")
		require.Len(t, page.rows(), 2)
		gens = regexp.MustCompile(`name="key_generation" value="([^"]+)"`).FindStringSubmatch(page.body)
		assert.Contains(t, gens[1], ",", "both readers' generations")
		form.Set("key_generation", gens[1])
		form.Set("resource", "bogus")
		p = e.post("admin", form, nil)
		assert.Equal(t, http.StatusNotFound, p.status)
		assert.Len(t, e.held(), 2, "a form the page cannot be drawn for released nothing")
		form.Del("resource")
		p = e.post("admin", form, nil)
		assert.Equal(t, http.StatusOK, p.status, p.body)
		assert.Empty(t, e.held())
	})
}

// TestConsoleReleasesAUsersLocks: one form releases every record a user
// locks, with one reason, skipping the records others hold too.
func TestConsoleReleasesAUsersLocks(t *testing.T) {
	eachConsoleDB(t, func(t *testing.T, e *consoleEnv) {
		e.take("usr_gone", "ord_1")
		e.take("usr_gone", "ord_2")
		e.take("usr_stays", "ord_3")
		for _, o := range []offlinelock.Owner{{Session: "g1", User: "usr_gone"}, {Session: "s1", User: "usr_stays"}} {
			_, err := e.locks.Acquire(e.db.WithContext(offlinelock.WithOwner(context.Background(), o)), &Order{ID: "ord_shared"}, offlinelock.Read)
			require.NoError(t, err)
		}
		page := e.get("admin", "")
		require.Contains(t, page.body, `id="release-user"`)
		form := neturl.Values{"csrf": {page.csrf(t)}, "owner_user": {"usr_gone"}, "reason": {""}}
		p := e.post2("admin", "/admin/console/release-user", form)
		assert.Equal(t, http.StatusBadRequest, p.status, "a reason is required")
		form.Set("reason", "left the company")
		p = e.post2("admin", "/admin/console/release-user", form)
		require.Equal(t, http.StatusOK, p.status, p.body)
		assert.Contains(t, p.body, "released 2 records of usr_gone (reason: left the company); skipped, as others hold them too: order &#39;ord_shared&#39;")
		assert.ElementsMatch(t, []string{"orders/ord_3 usr_stays", "orders/ord_shared usr_gone", "orders/ord_shared usr_stays"}, e.held())
		assert.Equal(t, 2, strings.Count(e.logs.String(), `via="console, all of usr_gone"`))
		assert.Equal(t, http.StatusForbidden, e.post2("usr_stays", "/admin/console/release-user", form).status)
	})
}
