package httplock_test

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/httplock"
)

// TestResourceAllowDecidesWhoMay: Resource.Allow decides who may read,
// watch, lock, take over or ask about a record: a refusal is a 403 with
// its text (404 when it wraps gorm.ErrRecordNotFound: a record the
// caller may not know of), and changes nothing; an unknown id is still
// a 404.
func TestResourceAllowDecidesWhoMay(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			allow := func(r *http.Request, principal, action, id string) error {
				mu.Lock()
				asked = append(asked, principal+" "+action+" "+id)
				mu.Unlock()
				switch {
				case principal == "usr_stranger":
					return fmt.Errorf("not your customer's order: %w", gorm.ErrRecordNotFound)
				case principal == "usr_viewer" && action != httplock.ActionRead && action != httplock.ActionWatch:
					return errors.New("viewers only look")
				}
				return nil
			}
			_, c := liveServer(t, name, httplock.Config{Principal: principal, TakeOver: adminsTakeOver,
				Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, Allow: allow}}}, nil)
			const path = "/orders/ord_1"
			got := c.do("POST", path+"/lock", "usr_client_1", "", "")
			require.Equal(t, http.StatusCreated, got.status, string(got.body))
			token := got.header.Get("Lock-Token")
			before := c.do("GET", path+"/lock", "usr_client_1", "", "").json(t)

			for _, call := range []struct {
				method, path, token, body string
				action                    string
			}{
				{"POST", path + "/lock", "", "", httplock.ActionLock},
				{"POST", path + "/lock", token, `{"ttlSeconds": 5}`, httplock.ActionLock},
				{"POST", path + "/unlock", token, "", httplock.ActionLock},
				{"POST", path + "/lock/takeover", "", "", httplock.ActionTakeOver},
				{"POST", path + "/lock/request", "", "", httplock.ActionRequest},
			} {
				refused := c.do(call.method, call.path, "usr_viewer", call.token, call.body)
				assert.Equal(t, http.StatusForbidden, refused.status, "%s %s", call.path, refused.body)
				assert.Contains(t, refused.json(t)["detail"], "viewers only look", call.path)
				hidden := c.do(call.method, call.path, "usr_stranger", call.token, call.body)
				assert.Equal(t, http.StatusNotFound, hidden.status, "%s %s", call.path, hidden.body)
				assert.NotContains(t, string(hidden.body), "usr_client_1", "a hidden record names no holder")
			}
			assert.Equal(t, before, c.do("GET", path+"/lock", "usr_client_1", "", "").json(t), "nothing changed")

			// Reading and watching: the viewer may, the stranger is told
			// there is no such record.
			assert.Equal(t, http.StatusOK, c.do("GET", path+"/lock", "usr_viewer", "", "").status)
			assert.Equal(t, http.StatusNotFound, c.do("GET", path+"/lock", "usr_stranger", "", "").status)
			assert.Equal(t, http.StatusNotFound, c.do("GET", path+"/lock/events", "usr_stranger", "", "").status)
			assert.Equal(t, http.StatusNotFound, c.do("GET", "/lock/events?watch=orders/ord_1", "usr_stranger", "", "").status, "one stream of many records")
			shared := c.stream("/lock/events?watch=orders/ord_1", "usr_viewer")
			assert.Equal(t, "usr_client_1", waitForEvent(t, shared, "locked", 5*time.Second)["lockedBy"])
			events := c.stream(path+"/lock/events", "usr_viewer")
			assert.Equal(t, "usr_client_1", waitForEvent(t, events, "locked", 5*time.Second)["lockedBy"])
			mu.Lock()
			assert.Contains(t, asked, "usr_viewer watch ord_1")
			mu.Unlock()
			assert.Equal(t, http.StatusNoContent, c.do("POST", path+"/unlock", "usr_client_1", token, "").status, "the holder may")
		})
	}
}
