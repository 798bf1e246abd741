package httplock_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResponseHeaders: an answer that carries a Lock-Token is never
// stored by a cache; JSON, problems, event streams and offlinelock.js
// are never sniffed; an event stream asks proxies not to buffer it.
func TestResponseHeaders(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		secure := func(name string, r reply) {
			t.Helper()
			assert.Equal(t, "no-store", r.header.Get("Cache-Control"), name)
			assert.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"), name)
		}
		got := c.do("POST", path+"/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, got.status)
		require.NotEmpty(t, got.header.Get("Lock-Token"))
		secure("a new lock", got)
		token := got.header.Get("Lock-Token")
		refreshed := c.do("POST", path+"/lock", "usr_client_1", token, `{"ttlSeconds": 60}`)
		require.Equal(t, http.StatusOK, refreshed.status)
		secure("a refresh", refreshed)
		secure("GET …/lock", c.do("GET", path+"/lock", "usr_client_2", "", ""))
		refused := c.do("POST", path+"/lock", "usr_client_2", "", "")
		require.Equal(t, http.StatusLocked, refused.status)
		secure("a 423", refused)
		secure("a 401", c.do("POST", path+"/lock", "", "", ""))
		taken := c.do("POST", path+"/lock/takeover", "admin", "", "")
		require.Equal(t, http.StatusCreated, taken.status)
		secure("a take-over", taken)

		js := c.do("GET", "/offlinelock.js", "", "", "")
		assert.Equal(t, "nosniff", js.header.Get("X-Content-Type-Options"))

		req, err := http.NewRequestWithContext(t.Context(), "GET", c.base+path+"/lock/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer usr_client_2")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	})
}
