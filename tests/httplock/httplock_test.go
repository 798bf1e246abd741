package httplock_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"
	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// Order is the order of the HTTP pattern: string ids, locked for writes.
type Order struct {
	ID     string `gorm:"primaryKey" lock:"exclusive_write"`
	Status string
}

// principal reads the caller from "Authorization: Bearer <user>": a test
// stand-in for the application's authentication.
func principal(r *http.Request) (string, error) {
	user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || user == "" {
		return "", errors.New("no bearer")
	}
	return user, nil
}

func openDB(t *testing.T, name string) *gorm.DB {
	t.Helper()
	cfg := &gorm.Config{Logger: logger.Discard}
	switch name {
	case "sqlite":
		db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(t.TempDir(), "t.db"))), cfg)
		require.NoError(t, err)
		return db
	}
	if name == "mysql" {
		return openMySQL(t)
	}
	dsn := os.Getenv("OFFLINELOCK_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true needs PostgreSQL: set OFFLINELOCK_POSTGRES_DSN")
		}
		t.Skip("set OFFLINELOCK_POSTGRES_DSN to run on PostgreSQL")
	}
	// A schema of its own: the root package's tests, run at the same time
	// by go test ./..., create and drop their own "orders" in public.
	admin, err := gorm.Open(postgres.Open(dsn), cfg)
	require.NoError(t, err)
	adminDB, _ := admin.DB()
	t.Cleanup(func() { adminDB.Close() })
	schema := "httplock_" + randomHex(6)
	require.NoError(t, admin.Exec("CREATE SCHEMA "+schema).Error)
	t.Cleanup(func() { admin.Exec("DROP SCHEMA " + schema + " CASCADE") })
	db, err := gorm.Open(postgres.Open(dsn+" search_path="+schema), cfg)
	require.NoError(t, err)
	sqlDB, _ := db.DB()
	require.NoError(t, sqlDB.Ping())
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// openMySQL opens a database of its own on the MySQL or MariaDB server of
// OFFLINELOCK_MYSQL_DSN: the root package's tests use the same table names
// in the DSN's database at the same time.
func openMySQL(t *testing.T) *gorm.DB {
	t.Helper()
	dsn := os.Getenv("OFFLINELOCK_MYSQL_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true needs MySQL or MariaDB: set OFFLINELOCK_MYSQL_DSN")
		}
		t.Skip("set OFFLINELOCK_MYSQL_DSN to run on MySQL or MariaDB")
	}
	cfg := &gorm.Config{Logger: logger.Discard}
	dcfg, err := mysqldriver.ParseDSN(dsn)
	require.NoError(t, err)
	admin, err := gorm.Open(mysql.Open(dsn), cfg)
	require.NoError(t, err)
	adminDB, _ := admin.DB()
	t.Cleanup(func() { adminDB.Close() })
	dcfg.DBName = "httplock_" + randomHex(6)
	require.NoError(t, admin.Exec("CREATE DATABASE "+dcfg.DBName).Error)
	t.Cleanup(func() { admin.Exec("DROP DATABASE " + dcfg.DBName) })
	db, err := gorm.Open(mysql.Open(dcfg.FormatDSN()), cfg)
	require.NoError(t, err)
	sqlDB, _ := db.DB()
	require.NoError(t, sqlDB.Ping())
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// dropLockTable drops the plugin's tables named table.
func dropLockTable(db *gorm.DB, table string) {
	q := func(s string) string { return `"` + s + `"` }
	if db.Dialector.Name() == "mysql" {
		q = func(s string) string { return "`" + s + "`" }
	}
	for _, suffix := range []string{"", "_generation", "_tables", "_notes"} {
		db.Exec(`DROP TABLE IF EXISTS ` + q(table+suffix))
	}
	if db.Dialector.Name() == "postgres" {
		db.Exec(`DROP SEQUENCE IF EXISTS ` + q(table+"_generation"))
	}
}

// eachDB runs fn against an HTTP server over SQLite, PostgreSQL and MySQL
// or MariaDB. Every response is validated against the package's OpenAPI
// document (the test's PATCH handler stands for the application's write,
// which the document describes as the Middleware's).
// anyID is Resource.Exists for the tests that lock ids they never
// create: the application reserves every id.
func anyID(*http.Request, string) (bool, error) { return true, nil }

func eachDB(t *testing.T, fn func(t *testing.T, e *client)) {
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder) // GET /offlinelock.js
	doc, err := openapi3.NewLoader().LoadFromData(httplock.OpenAPI())
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	router, err := legacyrouter.NewRouter(doc)
	require.NoError(t, err)
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			db := openDB(t, name)
			table := "ol_" + randomHex(6)
			logs := &bytes.Buffer{}
			locks := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.NewTextHandler(logs, nil)),
				Authorize: func(ctx context.Context, action string, l offlinelock.Lock) error {
					if o, _ := offlinelock.OwnerFrom(ctx); o.User == "admin" {
						return nil
					}
					return errors.New("admins only")
				}})
			require.NoError(t, db.Use(locks))
			require.NoError(t, db.Migrator().DropTable(&Order{}))
			require.NoError(t, db.AutoMigrate(&Order{}))
			binaryKeys(t, db)
			t.Cleanup(func() {
				db.Migrator().DropTable(&Order{})
				dropLockTable(db, table)
			})
			require.NoError(t, db.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: "ord_99182", Status: "new"}).Error)

			srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal, Admin: onlyAdmin, TakeOver: adminsTakeOver, Logger: slog.New(slog.NewTextHandler(logs, nil)),
				Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, IDName: "orderId"}}})
			require.NoError(t, err)
			mux := http.NewServeMux()
			srv.Register(mux)
			srv.RegisterAdmin(mux)
			appRoutes(mux, srv, db)
			ts := httptest.NewServer(mux)
			t.Cleanup(ts.Close)
			c := &client{t: t, base: ts.URL, db: db, table: table, logs: logs, validate: func(req *http.Request, resp *http.Response, body []byte) {
				if appOnly(req) {
					return // the test application's reads, not in the document
				}
				u := *req.URL
				u.Host, u.Scheme = "", ""
				vreq := req.Clone(context.Background())
				vreq.URL = &u
				route, params, err := router.FindRoute(vreq)
				require.NoError(t, err, "%s %s is in the OpenAPI document", req.Method, req.URL.Path)
				in := &openapi3filter.ResponseValidationInput{
					RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
					Status:                 resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
					Options: &openapi3filter.Options{IncludeResponseStatus: true},
				}
				require.NoError(t, openapi3filter.ValidateResponse(context.Background(), in), "%s %s -> %d %s", req.Method, req.URL.Path, resp.StatusCode, body)
			}}
			fn(t, c)
		})
	}
}

// appRoutes are the test application's own routes on orders, each behind
// Middleware: a PATCH that writes nothing for a body without "Status" (the
// no-op a check in the handler would let through), a DELETE, a PUT on a
// {resource} wildcard, a GET that writes when a method-override header asks
// for a PATCH, an OPTIONS that (wrongly) writes, and a POST on a deeper
// route whose wildcard is not called {id}.
func appRoutes(mux *http.ServeMux, srv *httplock.Server, db *gorm.DB) {
	write := func(w http.ResponseWriter, r *http.Request, id string, status *string) {
		if status != nil {
			if err := db.WithContext(r.Context()).Model(&Order{ID: id}).Update("status", *status).Error; err != nil {
				srv.WriteError(w, r, err)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}
	mux.Handle("PATCH /orders/{id}", srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Status *string }
		json.NewDecoder(r.Body).Decode(&in)
		write(w, r, r.PathValue("id"), in.Status)
	})))
	mux.Handle("PUT /{resource}/{id}", srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := "replaced"
		write(w, r, r.PathValue("id"), &status)
	})))
	mux.Handle("POST /orders/{orderId}/seat", srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := "seated"
		write(w, r, r.PathValue("orderId"), &status)
	})))
	mux.Handle("DELETE /orders/{id}", srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := db.WithContext(r.Context()).Delete(&Order{ID: r.PathValue("id")}).Error; err != nil {
			srv.WriteError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	mux.Handle("GET /orders/{id}", srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-HTTP-Method-Override") == "PATCH" {
			status := "overridden"
			write(w, r, r.PathValue("id"), &status)
			return
		}
		w.WriteHeader(http.StatusOK)
	})))
	mux.Handle("OPTIONS /orders/{id}", srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := "options"
		write(w, r, r.PathValue("id"), &status)
	})))
}

// appOnly tells the test application's reads, which the document does not
// describe, from the endpoints it does.
func appOnly(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return regexp.MustCompile(`^/orders/[^/]+$`).MatchString(r.URL.Path)
	case http.MethodPost:
		return strings.HasSuffix(r.URL.Path, "/seat")
	}
	return false
}

// binaryKeys makes the orders' string key binary on MySQL and MariaDB, as
// examples/orders-api does: their default collations take "ord_1" and
// "ORD_1" as one row, and the plugin refuses such a key.
func binaryKeys(t *testing.T, db *gorm.DB) {
	t.Helper()
	if db.Dialector.Name() != "mysql" {
		return
	}
	var version string
	require.NoError(t, db.Raw("SELECT VERSION()").Scan(&version).Error)
	collation := "utf8mb4_0900_bin"
	if strings.Contains(version, "MariaDB") {
		collation = "utf8mb4_nopad_bin"
	}
	require.NoError(t, db.Exec("ALTER TABLE orders MODIFY id VARCHAR(191) CHARACTER SET utf8mb4 COLLATE "+collation+" NOT NULL").Error)
}

type client struct {
	t        *testing.T
	base     string
	db       *gorm.DB
	table    string // the lock table
	logs     *bytes.Buffer
	validate func(*http.Request, *http.Response, []byte)
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), string(r.body))
	return m
}

// do sends a request as user (none if empty) with an optional Lock-Token.
func (c *client) do(method, path, user, token, body string) reply {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	require.NoError(c.t, err)
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	if token != "" {
		req.Header.Set("Lock-Token", token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	c.validate(req, resp, b)
	return reply{resp.StatusCode, resp.Header, b}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func TestLockLifecycle(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		got := c.do("POST", path+"/lock", "usr_client_1", "", `{"ttlSeconds": 300, "reason": "Seat reservation checkout"}`)
		require.Equal(t, http.StatusCreated, got.status, string(got.body))
		token := got.header.Get("Lock-Token")
		require.Regexp(t, `^[0-9a-f]{32}$`, token)
		body := got.json(t)
		assert.Equal(t, token, body["lockToken"])
		assert.Equal(t, "orders", body["resource"])
		assert.Equal(t, "ord_99182", body["id"])
		assert.Equal(t, "ord_99182", body["orderId"], "Resource.IDName")
		assert.Equal(t, "usr_client_1", body["lockedBy"])
		assert.Equal(t, "Seat reservation checkout", body["reason"])
		assert.EqualValues(t, 300, body["ttlRemainingSeconds"])
		generation := body["generation"]

		// The lock table holds the token's hash, never the token.
		var stored []string
		require.NoError(t, c.db.Raw(`SELECT token FROM `+c.table+` WHERE token <> ''`).Scan(&stored).Error)
		sum := sha256.Sum256([]byte(token))
		assert.Equal(t, []string{hex.EncodeToString(sum[:])}, stored)
		assert.Equal(t, http.StatusForbidden, c.do("POST", path+"/unlock", "usr_client_1", stored[0], "").status,
			"the hash read from the table is no token")

		// The holder refreshes with its own token: 200, the same lock, the
		// token it presented (the server has no other to give).
		got = c.do("POST", path+"/lock", "usr_client_1", token, `{"ttlSeconds": 600}`)
		require.Equal(t, http.StatusOK, got.status, string(got.body))
		assert.Equal(t, token, got.header.Get("Lock-Token"))
		assert.Equal(t, token, got.json(t)["lockToken"])
		assert.Equal(t, generation, got.json(t)["generation"])

		// The same principal without its token is a new client: 423, and
		// no second token for the lock; the first one still works.
		got = c.do("POST", path+"/lock", "usr_client_1", "", `{"ttlSeconds": 300}`)
		require.Equal(t, http.StatusLocked, got.status, string(got.body))
		assert.Empty(t, got.header.Get("Lock-Token"))
		assert.NotContains(t, string(got.body), token)
		assert.Equal(t, http.StatusNoContent, c.do("PATCH", "/orders/ord_99182", "usr_client_1", token, `{"Status": "held"}`).status)

		// Another client: 423, who and until when, never the token.
		got = c.do("POST", path+"/lock", "usr_client_2", "", `{"ttlSeconds": 300}`)
		require.Equal(t, http.StatusLocked, got.status)
		assert.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
		p := got.json(t)
		assert.Equal(t, "usr_client_1", p["lockedBy"])
		assert.Regexp(t, regexp.MustCompile(`^order 'ord_99182' is locked by usr_client_1 until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`), p["detail"])
		assert.EqualValues(t, 423, p["status"])
		assert.NotContains(t, string(got.body), token)
		assert.Empty(t, got.header.Get("Lock-Token"))

		got = c.do("GET", path+"/lock", "usr_client_2", "", "")
		require.Equal(t, http.StatusOK, got.status)
		assert.Equal(t, "usr_client_1", got.json(t)["lockedBy"])
		assert.NotContains(t, string(got.body), token, "GET never shows the token")

		// Unlock: missing token 400; wrong 403; another principal's 403 (its
		// refresh 423, as any lock of a held record); the holder's 204.
		assert.Equal(t, http.StatusBadRequest, c.do("POST", path+"/unlock", "usr_client_1", "", "").status)
		assert.Equal(t, http.StatusForbidden, c.do("POST", path+"/unlock", "usr_client_1", strings.Repeat("0", 32), "").status)
		assert.Equal(t, http.StatusForbidden, c.do("POST", path+"/unlock", "usr_client_1", "not-a-token", "").status)
		assert.Equal(t, http.StatusForbidden, c.do("POST", path+"/unlock", "usr_client_2", token, "").status)
		assert.Equal(t, http.StatusLocked, c.do("POST", path+"/lock", "usr_client_2", token, "").status, "nor can it refresh: locked by usr_client_1")
		assert.Equal(t, http.StatusNoContent, c.do("POST", path+"/unlock", "usr_client_1", token, "").status)
		assert.Equal(t, http.StatusForbidden, c.do("POST", path+"/unlock", "usr_client_1", token, "").status, "a released token is dead")
		assert.Equal(t, http.StatusNotFound, c.do("GET", path+"/lock", "usr_client_1", "", "").status)
		assert.Equal(t, http.StatusCreated, c.do("POST", path+"/lock", "usr_client_2", "", "").status, "free again")
	})
}

func TestTTLSecondsIsChecked(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		for _, body := range []string{`{"ttlSeconds": 0}`, `{"ttlSeconds": -5}`, `{"ttlSeconds": 901}`, `{"ttlSeconds": "ten"}`, `not json`} {
			got := c.do("POST", "/orders/ord_99182/lock", "usr_client_1", "", body)
			assert.Equal(t, http.StatusBadRequest, got.status, body)
			assert.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
		}
		got := c.do("POST", "/orders/ord_99182/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, got.status)
		assert.EqualValues(t, 300, got.json(t)["ttlRemainingSeconds"], "absent: the default lease")
		assert.Equal(t, http.StatusUnauthorized, c.do("POST", "/orders/ord_1/lock", "", "", "").status)
		assert.Equal(t, http.StatusNotFound, c.do("GET", "/admin/locks?resource=nothing", "admin", "", "").status)
	})
}

func TestWritesThroughTheMiddlewareAreEnforced(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		got := c.do("POST", "/orders/ord_99182/lock", "usr_client_1", "", `{"ttlSeconds": 300}`)
		require.Equal(t, http.StatusCreated, got.status)
		token := got.header.Get("Lock-Token")

		assert.Equal(t, http.StatusNoContent, c.do("PATCH", "/orders/ord_99182", "usr_client_1", token, `{"Status": "paid"}`).status)
		refused := c.do("PATCH", "/orders/ord_99182", "usr_client_2", "", `{"Status": "cancelled"}`)
		assert.Equal(t, http.StatusLocked, refused.status)
		assert.Contains(t, refused.json(t)["detail"], "locked by usr_client_1")
		assert.Equal(t, http.StatusLocked, c.do("PATCH", "/orders/ord_99182", "usr_client_2", token, `{"Status": "cancelled"}`).status,
			"a token presented by another principal is refused")
		assert.Equal(t, http.StatusUnauthorized, c.do("PATCH", "/orders/ord_99182", "", "", `{"Status": "cancelled"}`).status)
		assert.Equal(t, http.StatusNoContent, c.do("POST", "/orders/ord_99182/unlock", "usr_client_1", token, "").status)
		needs := c.do("PATCH", "/orders/ord_99182", "usr_client_1", "", `{"Status": "shipped"}`)
		assert.Equal(t, http.StatusLocked, needs.status)
		assert.Contains(t, needs.json(t)["detail"], "must be locked")

		var o Order
		require.NoError(t, c.db.WithContext(offlinelock.Bypass(context.Background(), "check")).First(&o, "id = ?", "ord_99182").Error)
		assert.Equal(t, "paid", o.Status)
	})
}

func TestAdminEndpoints(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		got := c.do("POST", "/orders/ord_99182/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, got.status)
		token := got.header.Get("Lock-Token")

		list := c.do("GET", "/admin/locks?resource=orders&user=usr_client_1", "admin", "", "")
		require.Equal(t, http.StatusOK, list.status)
		var locks []map[string]any
		require.NoError(t, json.Unmarshal(list.body, &locks))
		require.Len(t, locks, 1)
		assert.Equal(t, "orders", locks[0]["resource"])
		assert.NotContains(t, string(list.body), token)
		info := c.do("GET", "/orders/ord_99182/lock", "usr_client_1", "", "").json(t)
		assert.Positive(t, locks[0]["ttlRemainingSeconds"].(float64), "the admin list tells the lease left")
		assert.InDelta(t, info["ttlRemainingSeconds"].(float64), locks[0]["ttlRemainingSeconds"].(float64), 1, "as GET …/lock tells it")

		assert.Equal(t, http.StatusBadRequest, c.do("POST", "/admin/locks/orders/ord_99182/release", "admin", "", `{}`).status, "a reason is required")
		assert.Equal(t, http.StatusForbidden, c.do("POST", "/admin/locks/orders/ord_99182/release", "usr_client_2", "", `{"reason": "mine now"}`).status)
		assert.Equal(t, http.StatusNoContent, c.do("POST", "/admin/locks/orders/ord_99182/release", "admin", "", `{"reason": "client crashed"}`).status)
		assert.Equal(t, http.StatusNotFound, c.do("POST", "/admin/locks/orders/ord_99182/release", "admin", "", `{"reason": "again"}`).status)
		assert.Contains(t, c.logs.String(), `reason="client crashed"`)
		assert.Contains(t, c.logs.String(), "admin=admin")
		assert.NotContains(t, c.logs.String(), token, "tokens never reach the logs")
		assert.Equal(t, http.StatusForbidden, c.do("POST", "/orders/ord_99182/unlock", "usr_client_1", token, "").status, "the token died with the lock")
	})
}

func TestWriteErrorNeverLeaksInternalText(t *testing.T) {
	db := openDB(t, "sqlite")
	locks := offlinelock.New(offlinelock.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, db.Use(locks))
	srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal, Admin: onlyAdmin, Logger: slog.New(slog.DiscardHandler),
		Resources: []httplock.Resource{{Name: "orders", Model: &Order{}}}})
	require.NoError(t, err)
	until := time.Date(2026, 8, 3, 14, 35, 0, 0, time.UTC)
	cases := []struct {
		err    error
		status int
		detail string
	}{
		{&offlinelock.LockedError{Resource: "orders", ID: "ord_99182", Holders: []offlinelock.Lock{{Owner: offlinelock.Owner{User: "usr_client_1"}, ExpiresAt: until}}},
			423, "order 'ord_99182' is locked by usr_client_1 until 2026-08-03T14:35:00Z"},
		{fmt.Errorf("wrapped: %w", offlinelock.ErrNotLocked), 423, "must be locked"},
		{offlinelock.ErrNoOwner, 401, "who"},
		{fmt.Errorf("%w: session contains a NUL byte", offlinelock.ErrInvalid), 400, "not valid"},
		{offlinelock.ErrForbidden, 403, "may not"},
		{gorm.ErrRecordNotFound, 404, "no such record"},
		{errors.New(`pq: password authentication failed for user "secret"`), 500, "could not complete"},
	}
	for _, tc := range cases {
		w := httptest.NewRecorder()
		srv.WriteError(w, httptest.NewRequest("PATCH", "/orders/ord_99182", nil), tc.err)
		assert.Equal(t, tc.status, w.Code, tc.err.Error())
		assert.Equal(t, "application/problem+json", w.Header().Get("Content-Type"))
		assert.Contains(t, w.Body.String(), tc.detail)
		assert.NotContains(t, w.Body.String(), "secret")
		assert.NotContains(t, w.Body.String(), "NUL")
	}
}

func TestAnExpiredTokenIsRefused(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		got := c.do("POST", "/orders/ord_99182/lock", "usr_client_1", "", `{"ttlSeconds": 1}`)
		require.Equal(t, http.StatusCreated, got.status)
		token := got.header.Get("Lock-Token")
		expires, err := time.Parse(time.RFC3339Nano, got.json(t)["expiresAt"].(string))
		require.NoError(t, err)
		for time.Now().Before(expires.Add(50 * time.Millisecond)) { // the database clock runs on this machine
			time.Sleep(20 * time.Millisecond)
		}
		assert.Equal(t, http.StatusForbidden, c.do("POST", "/orders/ord_99182/unlock", "usr_client_1", token, "").status)
		assert.Equal(t, http.StatusLocked, c.do("PATCH", "/orders/ord_99182", "usr_client_1", token, `{"Status": "late"}`).status, "seed 003: 200 or 423")
		assert.Equal(t, http.StatusCreated, c.do("POST", "/orders/ord_99182/lock", "usr_client_2", "", "").status, "the lease ran out: free")
	})
}

// TestHostileInputIsBoundNotExecuted sends quotes, semicolons, NUL and 10 kB
// strings as ids, reasons, principals and tokens: each gets a 2xx or 4xx,
// the strings reach SQL only as bound parameters, and the tables survive.
func TestHostileInputIsBoundNotExecuted(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		evil := `x'; DROP TABLE orders; --`
		big := strings.Repeat("é", 5000)
		for _, r := range []struct{ method, path, user, token, body string }{
			{"POST", "/orders/" + url(evil) + "/lock", "usr_client_1", "", `{"reason": "` + evil + `"}`},
			{"POST", "/orders/ord_99182/lock", `usr'"; DELETE FROM orders; --`, "", `{"reason": "` + evil + `"}`},
			{"POST", "/orders/ord_99182/unlock", "usr_client_1", evil, ""},
			{"POST", "/orders/" + url(big) + "/lock", "usr_client_1", "", ""},
			{"POST", "/orders/ord_99182/lock", "usr_client_3", "", `{"reason": "` + big + `"}`},
			{"POST", "/orders/a%00b/lock", "usr_client_1", "", ""},
			{"GET", "/admin/locks?user=" + url(evil), "admin", "", ""},
		} {
			got := c.do(r.method, r.path, r.user, r.token, r.body)
			assert.Less(t, got.status, 500, "%s %s", r.method, r.path)
		}
		var n int64
		require.NoError(t, c.db.WithContext(offlinelock.Bypass(context.Background(), "check")).Model(&Order{}).Count(&n).Error)
		assert.EqualValues(t, 1, n, "the orders table is intact")
		got := c.do("GET", "/orders/ord_99182/lock", "x", "", "")
		require.Equal(t, http.StatusOK, got.status)
		assert.Equal(t, `usr'"; DELETE FROM orders; --`, got.json(t)["lockedBy"], "a hostile principal is stored as it is")
	})
}

func url(s string) string {
	return strings.NewReplacer("%", "%25", "'", "%27", " ", "%20", ";", "%3B", "/", "%2F", "#", "%23", "?", "%3F").Replace(s)
}

func onlyAdmin(r *http.Request) error {
	if user, _ := principal(r); user != "admin" {
		return errors.New("not an admin")
	}
	return nil
}

func TestIDNameMayNotShadowALockBodyName(t *testing.T) {
	db := openDB(t, "sqlite")
	locks := offlinelock.New(offlinelock.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, db.Use(locks))
	for _, name := range []string{"id", "lockToken", "lockedBy", "expiresAt", "holders"} {
		_, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal,
			Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, IDName: name}}})
		assert.ErrorContains(t, err, "already a name in lock bodies", name)
	}
}

// TestALockOfNothingIs404: POST …/lock of a record that does not exist is
// a 404 and leaves no lock row, so nobody fills the lock table with
// invented ids; an existing record is locked as before.
func TestALockOfNothingIs404(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		got := c.do("POST", "/orders/nope/lock", "usr_client_1", "", "")
		assert.Equal(t, http.StatusNotFound, got.status)
		assert.Equal(t, httplockProblem("not-found"), got.json(t)["type"])
		var n int64
		require.NoError(t, c.db.Table(c.table).Count(&n).Error)
		assert.Zero(t, n, "a lock row of nothing")
		assert.Equal(t, http.StatusLocked, c.do("PATCH", "/orders/nope", "usr_client_2", "", `{"Status": "x"}`).status, "a write without a lock")
		assert.Equal(t, http.StatusCreated, c.do("POST", "/orders/ord_99182/lock", "usr_client_1", "", "").status)
	})
}

// TestTheSamePersonInAnotherSession: a principal whose own lock (another
// token, another session) holds the record is refused like anyone else,
// each lock being its session's, and told it is theirs.
func TestTheSamePersonInAnotherSession(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		require.Equal(t, http.StatusCreated, c.do("POST", "/orders/ord_99182/lock", "usr_client_1", "", "").status)
		got := c.do("PATCH", "/orders/ord_99182", "usr_client_1", "", `{"Status": "x"}`)
		require.Equal(t, http.StatusLocked, got.status)
		p := got.json(t)
		assert.Equal(t, "usr_client_1", p["lockedBy"])
		assert.Contains(t, p["detail"], "locked by you (usr_client_1) in another session")
		other := c.do("PATCH", "/orders/ord_99182", "usr_client_2", "", `{"Status": "x"}`).json(t)
		assert.Contains(t, other["detail"], "locked by usr_client_1 until")
	})
}

// TestTheLocksReasonIsKept: the reason of POST …/lock is kept with the
// lock and shown by GET …/lock and the admin list; a refresh without one
// keeps it; an over-long one is a 400 and locks nothing.
func TestTheLocksReasonIsKept(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		tooLong := `{"reason": "` + strings.Repeat("x", offlinelock.MaxReason+1) + `"}`
		assert.Equal(t, http.StatusBadRequest, c.do("POST", path+"/lock", "usr_client_1", "", tooLong).status)
		assert.Equal(t, http.StatusNotFound, c.do("GET", path+"/lock", "usr_client_1", "", "").status, "nothing locked")

		got := c.do("POST", path+"/lock", "usr_client_1", "", `{"reason": "Seat reservation checkout"}`)
		require.Equal(t, http.StatusCreated, got.status)
		assert.Equal(t, "Seat reservation checkout", got.json(t)["reason"])
		token := got.header.Get("Lock-Token")
		assert.Equal(t, "Seat reservation checkout", c.do("GET", path+"/lock", "usr_client_2", "", "").json(t)["reason"])
		list := c.do("GET", "/admin/locks?resource=orders", "admin", "", "")
		var locks []map[string]any
		require.NoError(t, json.Unmarshal(list.body, &locks))
		require.Len(t, locks, 1)
		assert.Equal(t, "Seat reservation checkout", locks[0]["reason"])

		refreshed := c.do("POST", path+"/lock", "usr_client_1", token, "")
		require.Equal(t, http.StatusOK, refreshed.status)
		assert.Equal(t, "Seat reservation checkout", refreshed.json(t)["reason"], "a refresh without a reason keeps it")
		assert.Equal(t, "Seat reservation checkout", c.do("GET", path+"/lock", "usr_client_2", "", "").json(t)["reason"])
	})
}
