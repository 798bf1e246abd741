package httplock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	kinrouters "github.com/getkin/kin-openapi/routers"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
	"github.com/offlinelock/offlinelock/tests/httplock/internal/orderclient"
)

// updateOrderClient rewrites the document internal/orderclient is generated
// from; go generate ./tests/httplock/internal/orderclient sets it, then runs
// oapi-codegen on the new document.
var updateOrderClient = flag.Bool("update-orderclient", false, "rewrite "+orderClientDocument+" from Server.OpenAPIFor")

// orderClientDocument is the document the generated client of
// internal/orderclient was generated from.
var orderClientDocument = filepath.Join("internal", "orderclient", "openapi.yaml")

// orderWrites are the writes the application of the generated client
// serves behind Middleware, and so the operations its document has on
// /orders/{orderId}.
var orderWrites = []string{"PATCH"}

// ordersAPI is the application the generated client is of: orders, their
// ids named orderId.
func ordersAPI(t *testing.T, db *gorm.DB, locks *offlinelock.Plugin) *httplock.Server {
	t.Helper()
	srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal, Admin: onlyAdmin, Logger: slog.New(slog.DiscardHandler),
		Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, IDName: "orderId"}}})
	require.NoError(t, err)
	return srv
}

// TestTheOrderClientIsOfTodaysDocument: the document the generated client
// was generated from is the one OpenAPIFor produces today, so that the
// client cannot go stale silently.
func TestTheOrderClientIsOfTodaysDocument(t *testing.T) {
	db := openDB(t, "sqlite")
	locks := offlinelock.New(offlinelock.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, db.Use(locks))
	doc, err := ordersAPI(t, db, locks).OpenAPIFor(orderWrites...)
	require.NoError(t, err)
	if *updateOrderClient {
		require.NoError(t, os.WriteFile(orderClientDocument, doc, 0o644))
		t.Logf("wrote %s", orderClientDocument)
		return
	}
	committed, err := os.ReadFile(orderClientDocument)
	require.NoError(t, err)
	require.Equal(t, string(committed), string(doc),
		"%s, which internal/orderclient is generated from, is not what OpenAPIFor produces today: run go generate ./tests/httplock/internal/orderclient", orderClientDocument)
}

// TestTheOrderClientIsGeneratedFromItsDocument: the generated client
// carries the document it was generated from (oapi-codegen's embedded
// spec), and that is the committed one: a document rewritten without
// running oapi-codegen again fails here.
func TestTheOrderClientIsGeneratedFromItsDocument(t *testing.T) {
	committed, err := os.ReadFile(orderClientDocument)
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(committed)
	require.NoError(t, err)
	want, err := doc.MarshalJSON()
	require.NoError(t, err)
	embedded, err := orderclient.GetSpec()
	require.NoError(t, err)
	got, err := embedded.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got), "internal/orderclient was not generated from %s: run go generate ./tests/httplock/internal/orderclient", orderClientDocument)
}

// TestTheOrderClientDrivesTheLockLifecycle runs an application serving its
// orders (the lock endpoints, and PATCH /orders/{orderId} behind
// Middleware) and takes it through a lock's whole life with the generated
// client alone, on SQLite, PostgreSQL and MySQL or MariaDB: the requests it
// builds are the ones the server answers, and what it decodes (the lock,
// its Lock-Token header, every problem) is what the server sends. Each
// response is also checked against the application's document.
func TestTheOrderClientDrivesTheLockLifecycle(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			db := openDB(t, name)
			table := "ol_" + randomHex(6)
			locks := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, db.Use(locks))
			require.NoError(t, db.Migrator().DropTable(&Order{}))
			require.NoError(t, db.AutoMigrate(&Order{}))
			binaryKeys(t, db)
			t.Cleanup(func() {
				db.Migrator().DropTable(&Order{})
				dropLockTable(db, table)
			})
			require.NoError(t, db.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: "ord_99182", Status: "new"}).Error)

			srv := ordersAPI(t, db, locks)
			mux := http.NewServeMux()
			srv.Register(mux)
			mux.Handle("PATCH /orders/{orderId}", srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var in struct {
					Status string `json:"status"`
				}
				if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Status == "" {
					http.Error(w, "a status, please", http.StatusUnprocessableEntity)
					return
				}
				id := r.PathValue("orderId")
				if err := db.WithContext(r.Context()).Model(&Order{ID: id}).Update("status", in.Status).Error; err != nil {
					srv.WriteError(w, r, err)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]string{"orderId": id, "status": in.Status})
			})))
			ts := httptest.NewServer(mux)
			t.Cleanup(ts.Close)

			raw, err := srv.OpenAPIFor(orderWrites...)
			require.NoError(t, err)
			doc, err := openapi3.NewLoader().LoadFromData(raw)
			require.NoError(t, err)
			require.NoError(t, doc.Validate(context.Background()))
			router, err := legacyrouter.NewRouter(doc)
			require.NoError(t, err)
			as := func(user string) *orderclient.ClientWithResponses {
				c, err := orderclient.NewClientWithResponses(ts.URL,
					orderclient.WithHTTPClient(documented{router}),
					orderclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
						req.Header.Set("Authorization", "Bearer "+user)
						return nil
					}))
				require.NoError(t, err)
				return c
			}
			alice, bob := as("usr_client_1"), as("usr_client_2")
			ctx := context.Background()
			const id = "ord_99182"
			patch := func(c *orderclient.ClientWithResponses, token, status string) *orderclient.PatchOrderResponse {
				t.Helper()
				params := &orderclient.PatchOrderParams{}
				if token != "" {
					params.LockToken = &token
				}
				got, err := c.PatchOrderWithResponse(ctx, id, params, orderclient.PatchOrderJSONRequestBody{"status": status})
				require.NoError(t, err)
				return got
			}
			lockedByAlice := func(p *orderclient.Problem) {
				t.Helper()
				require.NotNil(t, p)
				assert.Equal(t, httplockProblem("locked"), p.Type)
				assert.Equal(t, http.StatusLocked, p.Status)
				require.NotNil(t, p.LockedBy)
				assert.Equal(t, "usr_client_1", *p.LockedBy)
				require.NotNil(t, p.LockedUntil)
				assert.WithinDuration(t, time.Now().Add(300*time.Second), *p.LockedUntil, 5*time.Second)
			}

			// Lock: 201, the token in the Lock-Token header and the body.
			reason, ttl := "Seat reservation checkout", 300
			locked, err := alice.LockOrderWithResponse(ctx, id, &orderclient.LockOrderParams{}, orderclient.LockOrderJSONRequestBody{TtlSeconds: &ttl, Reason: &reason})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, locked.StatusCode(), "%s", locked.Body)
			require.NotNil(t, locked.JSON201)
			require.NotNil(t, locked.Headers201)
			token := locked.Headers201.LockToken
			assert.Regexp(t, `^[0-9a-f]{32}$`, token)
			l := locked.JSON201
			require.NotNil(t, l.LockToken)
			assert.Equal(t, token, *l.LockToken)
			assert.Equal(t, "orders", l.Resource)
			assert.Equal(t, id, l.Id)
			assert.Equal(t, "usr_client_1", l.LockedBy)
			assert.Equal(t, orderclient.LockAccessWrite, l.Access)
			require.NotNil(t, l.Reason)
			assert.Equal(t, reason, *l.Reason)
			assert.Equal(t, 300, l.TtlRemainingSeconds)
			assert.True(t, l.ExpiresAt.After(l.AcquiredAt))

			// Bob cannot lock it: 423, who holds it and until when.
			refused, err := bob.LockOrderWithResponse(ctx, id, &orderclient.LockOrderParams{}, orderclient.LockOrderJSONRequestBody{})
			require.NoError(t, err)
			require.Equal(t, http.StatusLocked, refused.StatusCode(), "%s", refused.Body)
			assert.Nil(t, refused.Headers201)
			lockedByAlice(refused.ApplicationproblemJSON423)

			// GET …/lock: the holder, never the token.
			info, err := bob.GetLockOrderWithResponse(ctx, id)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, info.StatusCode(), "%s", info.Body)
			require.NotNil(t, info.JSON200)
			assert.Equal(t, "usr_client_1", info.JSON200.LockedBy)
			assert.Equal(t, l.Generation, info.JSON200.Generation)
			assert.Nil(t, info.JSON200.LockToken)
			require.Len(t, info.JSON200.Holders, 1)
			assert.Equal(t, "usr_client_1", info.JSON200.Holders[0].LockedBy)
			assert.Nil(t, info.JSON200.Holders[0].LockToken)
			assert.NotContains(t, string(info.Body), token)

			// Alice refreshes with her token: 200, the same lock and token.
			refreshed, err := alice.LockOrderWithResponse(ctx, id, &orderclient.LockOrderParams{LockToken: &token}, orderclient.LockOrderJSONRequestBody{TtlSeconds: &ttl})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, refreshed.StatusCode(), "%s", refreshed.Body)
			require.NotNil(t, refreshed.Headers200)
			assert.Equal(t, token, refreshed.Headers200.LockToken)
			require.NotNil(t, refreshed.JSON200)
			assert.Equal(t, l.Generation, refreshed.JSON200.Generation)

			// The guarded write: the holder's token 200; bob without a
			// token or with hers 423; alice without it 423 (another
			// session); her write done, none of theirs.
			wrote := patch(alice, token, "paid")
			require.Equal(t, http.StatusOK, wrote.StatusCode(), "%s", wrote.Body)
			assert.JSONEq(t, `{"orderId": "ord_99182", "status": "paid"}`, string(wrote.Body))
			for _, c := range []struct {
				name          string
				client        *orderclient.ClientWithResponses
				token, detail string
			}{
				{"bob without a token", bob, "", "locked by usr_client_1 until"},
				{"bob with alice's token", bob, token, "locked by usr_client_1 until"},
				{"alice without her token", alice, "", "locked by you (usr_client_1) in another session until"},
			} {
				got := patch(c.client, c.token, "cancelled")
				require.Equal(t, http.StatusLocked, got.StatusCode(), "%s: %s", c.name, got.Body)
				lockedByAlice(got.ApplicationproblemJSON423)
				assert.Contains(t, got.ApplicationproblemJSON423.Detail, c.detail, c.name)
			}

			// Unlock: bob with her token 403; alice 204, and the lock is gone.
			stolen, err := bob.UnlockOrderWithResponse(ctx, id, &orderclient.UnlockOrderParams{LockToken: token})
			require.NoError(t, err)
			require.Equal(t, http.StatusForbidden, stolen.StatusCode(), "%s", stolen.Body)
			require.NotNil(t, stolen.ApplicationproblemJSON403)
			assert.Equal(t, httplockProblem("forbidden"), stolen.ApplicationproblemJSON403.Type)
			unlocked, err := alice.UnlockOrderWithResponse(ctx, id, &orderclient.UnlockOrderParams{LockToken: token})
			require.NoError(t, err)
			require.Equal(t, http.StatusNoContent, unlocked.StatusCode(), "%s", unlocked.Body)
			assert.Empty(t, unlocked.Body)
			gone, err := bob.GetLockOrderWithResponse(ctx, id)
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, gone.StatusCode(), "%s", gone.Body)
			require.NotNil(t, gone.ApplicationproblemJSON404)
			assert.Equal(t, httplockProblem("not-locked"), gone.ApplicationproblemJSON404.Type)

			// The released token writes nothing: 423 lock-required, nobody named.
			late := patch(alice, token, "shipped")
			require.Equal(t, http.StatusLocked, late.StatusCode(), "%s", late.Body)
			require.NotNil(t, late.ApplicationproblemJSON423)
			assert.Equal(t, httplockProblem("lock-required"), late.ApplicationproblemJSON423.Type)
			assert.Nil(t, late.ApplicationproblemJSON423.LockedBy)

			var o Order
			require.NoError(t, db.WithContext(offlinelock.Bypass(ctx, "check")).First(&o, "id = ?", id).Error)
			assert.Equal(t, "paid", o.Status)
		})
	}
}

// documented is the generated client's HTTP client: it sends each request
// and checks the response against the application's document before the
// client decodes it.
type documented struct{ router kinrouters.Router }

func (d documented) Do(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	u := *req.URL
	u.Host, u.Scheme = "", ""
	vreq := req.Clone(context.Background())
	vreq.URL = &u
	route, params, err := d.router.FindRoute(vreq)
	if err != nil {
		return nil, fmt.Errorf("%s %s is not in the document: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return nil, fmt.Errorf("%s %s -> %d %s: %w", req.Method, req.URL.Path, resp.StatusCode, body, err)
	}
	return resp, nil
}
