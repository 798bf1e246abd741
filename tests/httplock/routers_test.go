package httplock_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// routerApp builds an application on a router other than http.ServeMux:
// PATCH /orders/{id} through MiddlewareFor (write, the guarded handler),
// and httplock's own endpoints on a ServeMux behind it.
type routerApp func(t *testing.T, srv *httplock.Server, lockMux http.Handler, write http.Handler) http.Handler

var routers = map[string]routerApp{
	"chi": func(t *testing.T, srv *httplock.Server, lockMux, write http.Handler) http.Handler {
		mw, err := srv.MiddlewareFor("orders", func(r *http.Request) string { return chi.URLParam(r, "id") })
		require.NoError(t, err)
		r := chi.NewRouter()
		r.With(mw).Patch("/orders/{id}", write.ServeHTTP)
		r.NotFound(lockMux.ServeHTTP)
		r.MethodNotAllowed(lockMux.ServeHTTP)
		return r
	},
	"gin": func(t *testing.T, srv *httplock.Server, lockMux, write http.Handler) http.Handler {
		gin.SetMode(gin.ReleaseMode)
		mw, err := srv.MiddlewareFor("orders", func(r *http.Request) string { return r.PathValue("id") })
		require.NoError(t, err)
		guarded := mw(write)
		e := gin.New()
		e.PATCH("/orders/:id", func(c *gin.Context) {
			c.Request.SetPathValue("id", c.Param("id")) // gin keeps its parameters in its context
			guarded.ServeHTTP(c.Writer, c.Request)
		})
		e.NoRoute(gin.WrapH(lockMux))
		return e
	},
	"echo": func(t *testing.T, srv *httplock.Server, lockMux, write http.Handler) http.Handler {
		mw, err := srv.MiddlewareFor("orders", func(r *http.Request) string { return r.PathValue("id") })
		require.NoError(t, err)
		guarded := mw(write)
		e := echo.New()
		e.PATCH("/orders/:id", func(c echo.Context) error {
			c.Request().SetPathValue("id", c.Param("id")) // echo keeps its parameters in its context
			guarded.ServeHTTP(c.Response(), c.Request())
			return nil
		})
		e.Any("/*", echo.WrapHandler(lockMux))
		return e
	},
}

// TestMiddlewareForRouters: under chi, gin and echo, MiddlewareFor decides
// a write as Middleware does under http.ServeMux: the holder's write
// runs, another client's is 423 locked, a write without a lock 423
// lock-required, an anonymous one 401; and Middleware itself, which cannot
// read these routers' patterns, refuses every write with a 500.
func TestMiddlewareForRouters(t *testing.T) {
	for _, dbName := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(dbName, func(t *testing.T) {
			db := openDB(t, dbName)
			table := "ol_" + randomHex(6)
			locks := offlinelock.New(offlinelock.Config{Table: table})
			require.NoError(t, db.Use(locks))
			require.NoError(t, db.Migrator().DropTable(&Order{}))
			require.NoError(t, db.AutoMigrate(&Order{}))
			binaryKeys(t, db)
			t.Cleanup(func() {
				db.Migrator().DropTable(&Order{})
				dropLockTable(db, table)
			})
			require.NoError(t, db.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: "ord_1", Status: "new"}).Error)
			srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal,
				Resources: []httplock.Resource{{Name: "orders", Model: &Order{}}}})
			require.NoError(t, err)
			_, err = srv.MiddlewareFor("nothing", func(*http.Request) string { return "" })
			require.Error(t, err, "an unknown resource")
			lockMux := http.NewServeMux()
			srv.Register(lockMux)
			write := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if err := db.WithContext(r.Context()).Model(&Order{ID: "ord_1"}).Update("status", string(body)).Error; err != nil {
					srv.WriteError(w, r, err)
					return
				}
				w.WriteHeader(http.StatusNoContent)
			})
			for name, app := range routers {
				t.Run(name, func(t *testing.T) {
					ts := httptest.NewServer(app(t, srv, lockMux, write))
					defer ts.Close()
					do := func(method, path, user, token, body string) int {
						req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
						if user != "" {
							req.Header.Set("Authorization", "Bearer "+user)
						}
						if token != "" {
							req.Header.Set(httplock.LockTokenHeader, token)
						}
						resp, err := http.DefaultClient.Do(req)
						require.NoError(t, err)
						resp.Body.Close()
						if resp.StatusCode == http.StatusCreated {
							return -1
						}
						return resp.StatusCode
					}
					status := func() string {
						var o Order
						require.NoError(t, db.First(&o, "id = ?", "ord_1").Error)
						return o.Status
					}
					assert.Equal(t, http.StatusLocked, do("PATCH", "/orders/ord_1", "usr_1", "", "unlocked"), "no lock: lock-required")
					assert.Equal(t, http.StatusUnauthorized, do("PATCH", "/orders/ord_1", "", "", "anonymous"))
					req, _ := http.NewRequest("POST", ts.URL+"/orders/ord_1/lock", nil)
					req.Header.Set("Authorization", "Bearer usr_1")
					resp, err := http.DefaultClient.Do(req)
					require.NoError(t, err)
					resp.Body.Close()
					require.Equal(t, http.StatusCreated, resp.StatusCode, "httplock's endpoints behind the router")
					token := resp.Header.Get(httplock.LockTokenHeader)
					assert.Equal(t, http.StatusLocked, do("PATCH", "/orders/ord_1", "usr_2", "", "theirs"), "another client")
					assert.Equal(t, http.StatusNoContent, do("PATCH", "/orders/ord_1", "usr_1", token, name), "the holder")
					assert.Equal(t, name, status())
					assert.Equal(t, http.StatusNoContent, do("POST", "/orders/ord_1/unlock", "usr_1", token, ""))
				})
			}
			t.Run("Middleware under gin cannot read the route", func(t *testing.T) {
				gin.SetMode(gin.ReleaseMode)
				e := gin.New()
				e.PATCH("/orders/:id", gin.WrapH(srv.Middleware(write)))
				ts := httptest.NewServer(e)
				defer ts.Close()
				req, _ := http.NewRequest("PATCH", ts.URL+"/orders/ord_1", strings.NewReader("x"))
				req.Header.Set("Authorization", "Bearer usr_1")
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, "refused: it cannot tell the record")
			})
		})
	}
}
