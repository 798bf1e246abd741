package httplock_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// waitForEvent reads events until one named name arrives, within d, and
// returns its data and how long it took.
func waitForEvent(t *testing.T, events <-chan sse, name string, d time.Duration) map[string]any {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case e, ok := <-events:
			require.True(t, ok, "the stream ended")
			if e.name == name {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(e.data), &m), e.data)
				return m
			}
		case <-deadline:
			t.Fatalf("no %s event within %v", name, d)
			return nil
		}
	}
}

// TestLeavingFreesTheRecord: a page that is left asks, with its own
// Lock-Token, for a lease of a few seconds (offlinelock.js's pagehide):
// the stored expiry becomes now+ttl, the answer's expiresAt and
// ttlRemainingSeconds are the stored ones, and with a 60 s lease the
// record is free for another user (told by its event stream) and for
// the same user's new session within 10 s. A token that is not the
// holder's is 423 and changes nothing; a ttlSeconds below 1 is 400.
func TestLeavingFreesTheRecord(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		stored := func() map[string]any {
			t.Helper()
			got := c.do("GET", path+"/lock", "usr_client_2", "", "")
			require.Equal(t, http.StatusOK, got.status, string(got.body))
			return got.json(t)
		}
		for round, next := range []string{"usr_client_2", "usr_client_1"} {
			got := c.do("POST", path+"/lock", "usr_client_1", "", `{"ttlSeconds": 60}`)
			require.Equal(t, http.StatusCreated, got.status, string(got.body))
			token := got.header.Get("Lock-Token")
			generation := got.json(t)["generation"]
			before := stored()
			assert.EqualValues(t, 60, got.json(t)["ttlRemainingSeconds"])

			// Another user with the holder's token, the holder's user
			// with a wrong or dead token: 423, the lease untouched.
			for _, bad := range []struct{ user, token string }{
				{"usr_client_2", token}, {"usr_client_1", strings.Repeat("0", 32)}, {"usr_client_1", "not-a-token"},
			} {
				refused := c.do("POST", path+"/lock", bad.user, bad.token, `{"ttlSeconds": 5}`)
				require.Equal(t, http.StatusLocked, refused.status, "%s %s: %s", bad.user, bad.token, refused.body)
				p := refused.json(t)
				assert.Equal(t, httplockProblem("locked"), p["type"])
				assert.Equal(t, "usr_client_1", p["lockedBy"])
				assert.Empty(t, refused.header.Get("Lock-Token"))
				assert.NotContains(t, string(refused.body), token)
				assert.Equal(t, before["expiresAt"], stored()["expiresAt"], "%s: nothing changed", bad.user)
			}
			for _, ttl := range []string{`0`, `-5`, `"5"`} {
				assert.Equal(t, http.StatusBadRequest, c.do("POST", path+"/lock", "usr_client_1", token, `{"ttlSeconds": `+ttl+`}`).status, ttl)
				assert.Equal(t, before["expiresAt"], stored()["expiresAt"], "ttlSeconds %s: nothing changed", ttl)
			}

			events := c.stream(path+"/lock/events", next)
			assert.Equal(t, "usr_client_1", waitForEvent(t, events, "locked", 5*time.Second)["lockedBy"])

			// The leave: 200, the same lock and token, the stored lease.
			left := c.do("POST", path+"/lock", "usr_client_1", token, `{"ttlSeconds": 5}`)
			leftAt := time.Now()
			require.Equal(t, http.StatusOK, left.status, string(left.body))
			assert.Equal(t, token, left.header.Get("Lock-Token"))
			b := left.json(t)
			assert.Equal(t, generation, b["generation"])
			assert.EqualValues(t, 5, b["ttlRemainingSeconds"])
			now := stored()
			assert.Equal(t, now["expiresAt"], b["expiresAt"], "the answer's expiry is the stored one")
			expires, err := time.Parse(time.RFC3339Nano, b["expiresAt"].(string))
			require.NoError(t, err)
			acquired, err := time.Parse(time.RFC3339Nano, b["acquiredAt"].(string))
			require.NoError(t, err)
			assert.Less(t, expires.Sub(acquired), 55*time.Second, "cut from the 60 s lease")

			// A longer lease again is a renewal, as before.
			if round == 0 {
				again := c.do("POST", path+"/lock", "usr_client_1", token, `{"ttlSeconds": 60}`)
				require.Equal(t, http.StatusOK, again.status)
				assert.EqualValues(t, 60, again.json(t)["ttlRemainingSeconds"])
				assert.Equal(t, stored()["expiresAt"], again.json(t)["expiresAt"])
				left = c.do("POST", path+"/lock", "usr_client_1", token, `{"ttlSeconds": 5}`)
				leftAt = time.Now()
				require.Equal(t, http.StatusOK, left.status)
			}

			// The waiting page is told, and the record is free, within 10 s.
			released := waitForEvent(t, events, "released", 10*time.Second)
			assert.Equal(t, generation, released["generation"])
			assert.Equal(t, "expired", released["reason"], "the cut lease ran out")
			assert.NotContains(t, released, "lockedBy", "no stale holder")
			assert.Less(t, time.Since(leftAt), 10*time.Second)
			taken := c.do("POST", path+"/lock", next, "", `{"ttlSeconds": 60}`)
			require.Equal(t, http.StatusCreated, taken.status, "%s: %s", next, taken.body)
			assert.NotEqual(t, token, taken.header.Get("Lock-Token"))
			assert.Greater(t, taken.json(t)["generation"].(float64), generation.(float64))
			require.Equal(t, http.StatusNoContent, c.do("POST", path+"/unlock", next, taken.header.Get("Lock-Token"), "").status)
		}
	})
}

// TestAForceReleaseIsToldAsSuch: an admin's release reaches the record's
// pages as released with reason force-released, naming no holder.
func TestAForceReleaseIsToldAsSuch(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		got := c.do("POST", path+"/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, got.status)
		events := c.stream(path+"/lock/events", "usr_client_2")
		assert.Equal(t, "usr_client_1", waitForEvent(t, events, "locked", 5*time.Second)["lockedBy"])
		require.Equal(t, http.StatusNoContent, c.do("POST", "/admin/locks/orders/ord_99182/release", "admin", "", `{"reason": "stuck"}`).status)
		released := waitForEvent(t, events, "released", 5*time.Second)
		assert.Equal(t, "force-released", released["reason"])
		assert.Equal(t, got.json(t)["generation"], released["generation"])
		assert.NotContains(t, released, "lockedBy")
	})
}

// TestASignOutIsToldAsSuch: EndLogin (sign-out, a session's expiry)
// reaches the record's pages as released with reason signed-out.
func TestASignOutIsToldAsSuch(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			db := openDB(t, name)
			table := "ol_" + randomHex(6)
			locks := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler), WatchEvery: 50 * time.Millisecond})
			require.NoError(t, db.Use(locks))
			require.NoError(t, db.AutoMigrate(&Order{}))
			binaryKeys(t, db)
			t.Cleanup(func() { db.Migrator().DropTable(&Order{}); dropLockTable(db, table) })
			require.NoError(t, db.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: "ord_1"}).Error)
			srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal,
				LoginSession: func(r *http.Request) (string, error) { return r.Header.Get("X-Login"), nil },
				Resources:    []httplock.Resource{{Name: "orders", Model: &Order{}}}})
			require.NoError(t, err)
			ts := httptest.NewServer(srv.Handler())
			t.Cleanup(ts.Close)
			t.Cleanup(ts.CloseClientConnections)
			c := &client{t: t, base: ts.URL, validate: func(*http.Request, *http.Response, []byte) {}}

			req, err := http.NewRequest("POST", ts.URL+"/orders/ord_1/lock", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer usr_client_1")
			req.Header.Set("X-Login", "login-1")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusCreated, resp.StatusCode)

			events := c.stream("/orders/ord_1/lock/events", "usr_client_2")
			locked := waitForEvent(t, events, "locked", 5*time.Second)
			n, err := srv.EndLogin(context.Background(), "usr_client_1", "login-1")
			require.NoError(t, err)
			assert.EqualValues(t, 1, n)
			released := waitForEvent(t, events, "released", 5*time.Second)
			assert.Equal(t, "signed-out", released["reason"])
			assert.Equal(t, locked["generation"], released["generation"])
			assert.NotContains(t, released, "lockedBy")
		})
	}
}
