package httplock_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// TestTheServerServesItsOpenAPIDocument: GET /openapi.yaml is the
// package's document, loadable and valid, so a client can generate its
// code from the running service.
func TestTheServerServesItsOpenAPIDocument(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		got := c.do("GET", "/openapi.yaml", "", "", "")
		require.Equal(t, http.StatusOK, got.status)
		assert.Equal(t, httplock.OpenAPIContentType, got.header.Get("Content-Type"))
		assert.Equal(t, httplock.OpenAPI(), got.body)
		doc, err := openapi3.NewLoader().LoadFromData(got.body)
		require.NoError(t, err)
		require.NoError(t, doc.Validate(context.Background()))
		status, header, body := c.raw(attack{method: "HEAD", path: "/openapi.yaml"})
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, httplock.OpenAPIContentType, header.Get("Content-Type"))
		assert.Empty(t, body)
	})
}

// TestEveryStatusIsDocumented sends the requests behind the statuses the
// document lists beyond the happy paths; eachDB's validation fails any
// status an operation does not list.
func TestEveryStatusIsDocumented(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		long := strings.Repeat("x", 256)
		for _, r := range []struct {
			method, path, user, body string
			status                   int
		}{
			{"GET", "/orders/" + long + "/lock", "usr_client_1", "", http.StatusBadRequest},
			{"GET", "/orders/a%00b/lock", "usr_client_1", "", http.StatusBadRequest},
			{"GET", "/orders/ord_99182/lock", "usr_client_1", "", http.StatusNotFound},
			{"POST", "/orders/" + long + "/lock", "usr_client_1", "", http.StatusBadRequest},
			{"POST", "/orders/" + long + "/unlock", "usr_client_1", "", http.StatusBadRequest},
			{"GET", "/admin/locks", "usr_client_1", "", http.StatusForbidden},
			{"GET", "/admin/locks", "", "", http.StatusForbidden},
			{"GET", "/admin/locks?expired=maybe", "admin", "", http.StatusBadRequest},
			{"GET", "/admin/locks?resource=nothing", "admin", "", http.StatusNotFound},
			{"POST", "/admin/locks/orders/ord_99182/release", "usr_client_1", `{"reason": "mine"}`, http.StatusForbidden},
			{"POST", "/admin/locks/nothing/ord_99182/release", "admin", `{"reason": "x"}`, http.StatusNotFound},
			{"POST", "/admin/locks/orders/ord_99182/release", "admin", `{"reason": "x"}`, http.StatusNotFound},
			{"PATCH", "/orders/" + long, "usr_client_1", `{}`, http.StatusBadRequest},
			{"DELETE", "/orders/ord_99182", "", "", http.StatusUnauthorized},
		} {
			got := c.do(r.method, r.path, r.user, "", r.body)
			assert.Equal(t, r.status, got.status, "%s %s: %s", r.method, r.path, got.body)
			assert.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
		}
	})
}

// TestOpenAPIForTheApplication: the application's document names its own
// resources and ids, lists only the writes it serves, and is valid.
func TestOpenAPIForTheApplication(t *testing.T) {
	db := openDB(t, "sqlite")
	locks := offlinelock.New(offlinelock.Config{})
	require.NoError(t, db.Use(locks))
	srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal,
		Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, IDName: "orderId"}}})
	require.NoError(t, err)
	for _, tc := range []struct {
		writes []string
		record []string // the methods of /orders/{orderId}
	}{
		{[]string{"PATCH"}, []string{"patch"}},
		{[]string{"patch", "DELETE"}, []string{"delete", "patch"}},
		{nil, nil},
	} {
		raw, err := srv.OpenAPIFor(tc.writes...)
		require.NoError(t, err)
		doc, err := openapi3.NewLoader().LoadFromData(raw)
		require.NoError(t, err)
		require.NoError(t, doc.Validate(context.Background()), "%s", raw)
		var paths []string
		for p := range doc.Paths.Map() {
			paths = append(paths, p)
		}
		assert.Subset(t, paths, []string{"/orders/{orderId}/lock", "/orders/{orderId}/unlock", "/admin/locks", "/openapi.yaml"})
		for _, p := range paths {
			assert.False(t, strings.HasPrefix(p, "/{resource}"), "generic path %s left (the admin release keeps its resource parameter)", p)
		}
		item := doc.Paths.Find("/orders/{orderId}")
		if tc.record == nil {
			assert.Nil(t, item, "no write served: no record path")
			continue
		}
		require.NotNil(t, item)
		var methods []string
		for m := range item.Operations() {
			methods = append(methods, strings.ToLower(m))
		}
		assert.ElementsMatch(t, tc.record, methods)
		lock := doc.Paths.Find("/orders/{orderId}/lock")
		require.Len(t, lock.Parameters, 1)
		assert.Equal(t, "orderId", lock.Parameters[0].Value.Name)
		assert.NotNil(t, lock.Post.Parameters.GetByInAndName("header", "Lock-Token"), "the operation's own parameters stay")
	}
}

// ExTicket is a second resource, as httplock's example has one.
type ExTicket struct {
	ID     string `gorm:"primaryKey" lock:"exclusive_write"`
	Status string
}

// TestOpenAPIForManyResources: each resource's operations have ids of
// their own, so that the document of an application serving several is
// valid and a client can be generated from it; two resources that would
// share them are refused.
func TestOpenAPIForManyResources(t *testing.T) {
	db := openDB(t, "sqlite")
	locks := offlinelock.New(offlinelock.Config{})
	require.NoError(t, db.Use(locks))
	srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal,
		Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, IDName: "orderId"}, {Name: "tickets", Model: &ExTicket{}, Singular: "support ticket"}}})
	require.NoError(t, err)
	raw, err := srv.OpenAPIFor("PATCH", "DELETE")
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()), "%s", raw)
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ids[method+" "+path] = op.OperationID
		}
	}
	assert.Equal(t, map[string]string{
		"POST /orders/{orderId}/lock":               "lockOrder",
		"GET /orders/{orderId}/lock":                "getLockOrder",
		"POST /orders/{orderId}/unlock":             "unlockOrder",
		"PATCH /orders/{orderId}":                   "patchOrder",
		"DELETE /orders/{orderId}":                  "deleteOrder",
		"POST /tickets/{id}/lock":                   "lockSupportTicket",
		"GET /tickets/{id}/lock":                    "getLockSupportTicket",
		"POST /tickets/{id}/unlock":                 "unlockSupportTicket",
		"PATCH /tickets/{id}":                       "patchSupportTicket",
		"DELETE /tickets/{id}":                      "deleteSupportTicket",
		"POST /orders/{orderId}/lock/takeover":      "takeOverLockOrder",
		"POST /orders/{orderId}/lock/request":       "requestLockOrder",
		"GET /orders/{orderId}/lock/events":         "lockEventsOrder",
		"POST /tickets/{id}/lock/takeover":          "takeOverLockSupportTicket",
		"POST /tickets/{id}/lock/request":           "requestLockSupportTicket",
		"GET /tickets/{id}/lock/events":             "lockEventsSupportTicket",
		"GET /lock/events":                          "sharedLockEvents",
		"GET /offlinelock.js":                       "getClient",
		"GET /openapi.yaml":                         "getOpenAPI",
		"GET /admin/locks":                          "adminListLocks",
		"POST /admin/locks/{resource}/{id}/release": "adminReleaseLock",
	}, ids)

	same, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal,
		Resources: []httplock.Resource{{Name: "orders", Model: &Order{}}, {Name: "order", Model: &Order{}}}})
	require.NoError(t, err)
	_, err = same.OpenAPIFor("PATCH")
	assert.ErrorContains(t, err, `resources "order" and "orders" give their operations the same ids (Order): set Resource.Singular`)
}
