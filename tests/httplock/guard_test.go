package httplock_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// attack is one write attempt on ord_99182 while usr_client_1 holds its lock.
type attack struct {
	name, method, path, user, body string
	tokens                         []string          // Lock-Token headers, in order
	header                         map[string]string // more headers
}

// TestWritesOfALockedRecordAre423ForAllButItsHolder tries, while
// usr_client_1 holds ord_99182, every way another caller could write it:
// no-op bodies, every kind of bad token, a token in the body, method
// overrides, HEAD and OPTIONS, path variants. Each is a 423 naming the
// holder and lockedUntil (or, where the mux has no such route, never a
// 2xx), and afterwards the order and the lock are exactly as they were.
func TestWritesOfALockedRecordAre423ForAllButItsHolder(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		seed(t, c, "ord_2")
		// usr_client_2's dead tokens of ord_99182: one released, one expired.
		released := c.do("POST", path+"/lock", "usr_client_2", "", "").header.Get("Lock-Token")
		require.Equal(t, http.StatusNoContent, c.do("POST", path+"/unlock", "usr_client_2", released, "").status)
		got := c.do("POST", path+"/lock", "usr_client_2", "", `{"ttlSeconds": 1}`)
		require.Equal(t, http.StatusCreated, got.status)
		expired := got.header.Get("Lock-Token")
		waitUntil(t, got.json(t)["expiresAt"].(string))

		got = c.do("POST", path+"/lock", "usr_client_1", "", `{"ttlSeconds": 300}`)
		require.Equal(t, http.StatusCreated, got.status, string(got.body))
		holder := got.header.Get("Lock-Token")
		lockedUntil := got.json(t)["expiresAt"].(string)
		other := c.do("POST", "/orders/ord_2/lock", "usr_client_2", "", "").header.Get("Lock-Token")
		require.NotEmpty(t, other)
		before := c.do("GET", path+"/lock", "x", "", "").json(t)

		for _, a := range lockedAttacks(path, holder, other, released, expired) {
			t.Run(a.name, func(t *testing.T) {
				status, header, body := c.raw(a)
				require.Equal(t, http.StatusLocked, status, string(body))
				assert.Equal(t, "application/problem+json", header.Get("Content-Type"))
				if a.method == "HEAD" {
					return
				}
				assert.Contains(t, string(body), `"lockedBy":"usr_client_1"`)
				assert.Contains(t, string(body), `"type":"https://github.com/offlinelock/offlinelock/blob/main/httplock/README.md#locked"`)
				until, err := time.Parse(time.RFC3339, lockedUntil)
				require.NoError(t, err)
				assert.Contains(t, string(body), `"lockedUntil":"`+until.UTC().Truncate(time.Second).Format(time.RFC3339)+`"`)
				assert.NotContains(t, string(body), holder)
			})
		}
		// Paths the mux has no write route for: never a 2xx.
		for _, a := range []attack{
			{name: "trailing slash", method: "PATCH", path: path + "/", user: "usr_client_2", body: `{"Status": "stolen"}`},
			{name: "double slash", method: "PATCH", path: "/orders//ord_99182", user: "usr_client_2", body: `{"Status": "stolen"}`},
			{name: "encoded slash", method: "PATCH", path: "/orders%2Ford_99182", user: "usr_client_2", body: `{"Status": "stolen"}`},
			{name: "dot segment", method: "PATCH", path: "/orders/x/../ord_99182", user: "usr_client_2", body: `{"Status": "stolen"}`},
			{name: "unknown method", method: "PROPPATCH", path: path, user: "usr_client_2", body: `{"Status": "stolen"}`},
		} {
			status, _, body := c.raw(a)
			assert.GreaterOrEqual(t, status, 300, "%s: %s", a.name, body)
		}
		// Another spelling of the id is another record: nobody holds it, so a
		// tokenless write needs its lock first.
		status, _, body := c.raw(attack{method: "PATCH", path: "/orders/ORD_99182", user: "usr_client_2", body: `{"Status": "stolen"}`})
		assert.Equal(t, http.StatusLocked, status)
		assert.Contains(t, string(body), "#lock-required")

		var o Order
		require.NoError(t, c.db.WithContext(offlinelock.Bypass(context.Background(), "check")).First(&o, "id = ?", "ord_99182").Error)
		assert.Equal(t, "new", o.Status, "no attempt changed the order")
		assert.Equal(t, before, c.do("GET", path+"/lock", "x", "", "").json(t), "nor the lock")
		assert.Equal(t, http.StatusNoContent, c.do("PATCH", path, "usr_client_1", holder, `{"Status": "paid"}`).status, "the holder still writes")
	})
}

// TestWritesOfAnUnlockedRecord: without a token, a write needs the lock
// first (423 lock-required, no holder named), whatever the body; a token
// that is not a live lock of the caller's on the record is a 403.
func TestWritesOfAnUnlockedRecord(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		got := c.do("POST", path+"/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, got.status)
		released := got.header.Get("Lock-Token")
		require.Equal(t, http.StatusNoContent, c.do("POST", path+"/unlock", "usr_client_1", released, "").status)
		for _, body := range []string{"", `{}`, `{"colour": "red"}`, `{"Status": "paid"}`} {
			got := c.do("PATCH", path, "usr_client_1", "", body)
			assert.Equal(t, http.StatusLocked, got.status, body)
			p := got.json(t)
			assert.Equal(t, httplockProblem("lock-required"), p["type"])
			assert.NotContains(t, p, "lockedBy")
			assert.NotContains(t, p, "lockedUntil")
		}
		for _, token := range []string{released, "nonsense", strings.Repeat("a", 32)} {
			got := c.do("PATCH", path, "usr_client_1", token, `{"Status": "paid"}`)
			assert.Equal(t, http.StatusLocked, got.status, token)
			assert.Equal(t, httplockProblem("lock-required"), got.json(t)["type"], token)
		}
		assert.Equal(t, http.StatusUnauthorized, c.do("PATCH", path, "", "", `{}`).status)
		assert.Equal(t, http.StatusOK, c.do("GET", path, "usr_client_2", "", "").status, "reads need no lock")

		var o Order
		require.NoError(t, c.db.WithContext(offlinelock.Bypass(context.Background(), "check")).First(&o, "id = ?", "ord_99182").Error)
		assert.Equal(t, "new", o.Status)
	})
}

// lockedAttacks are the writes of path, while usr_client_1 holds it with
// holder, that must each be a 423 naming usr_client_1: other is
// usr_client_2's token of another record, released and expired its dead
// tokens of path.
func lockedAttacks(path, holder, other, released, expired string) []attack {
	return []attack{
		{name: "empty body", method: "PATCH", path: path, user: "usr_client_2"},
		{name: "empty object", method: "PATCH", path: path, user: "usr_client_2", body: `{}`},
		{name: "unknown fields only", method: "PATCH", path: path, user: "usr_client_2", body: `{"colour": "red"}`},
		{name: "not JSON", method: "PATCH", path: path, user: "usr_client_2", body: `<order/>`},
		{name: "a change", method: "PATCH", path: path, user: "usr_client_2", body: `{"Status": "stolen"}`},
		{name: "the holder's token, another user", method: "PATCH", path: path, user: "usr_client_2", body: `{"Status": "stolen"}`, tokens: []string{holder}},
		{name: "own token of another record", method: "PATCH", path: path, user: "usr_client_2", body: `{"Status": "stolen"}`, tokens: []string{other}},
		{name: "released token", method: "PATCH", path: path, user: "usr_client_2", body: `{"Status": "stolen"}`, tokens: []string{released}},
		{name: "expired token", method: "PATCH", path: path, user: "usr_client_2", body: `{"Status": "stolen"}`, tokens: []string{expired}},
		{name: "malformed token", method: "PATCH", path: path, user: "usr_client_2", body: `{}`, tokens: []string{"lk_tok_88291a"}},
		{name: "well-formed wrong token", method: "PATCH", path: path, user: "usr_client_2", body: `{}`, tokens: []string{strings.Repeat("0", 32)}},
		{name: "another's token, then the holder's", method: "PATCH", path: path, user: "usr_client_2", body: `{}`, tokens: []string{other, holder}},
		{name: "token in a body field", method: "PATCH", path: path, user: "usr_client_2", body: `{"lockToken": "` + holder + `", "Lock-Token": "` + holder + `", "Status": "stolen"}`},
		{name: "the holder's user without the token", method: "PATCH", path: path, user: "usr_client_1", body: `{"Status": "stolen"}`},
		{name: "PUT on a {resource} route", method: "PUT", path: path, user: "usr_client_2", tokens: []string{released}},
		{name: "POST on a deeper route, {orderId}", method: "POST", path: path + "/seat", user: "usr_client_2", tokens: []string{other}},
		{name: "DELETE", method: "DELETE", path: path, user: "usr_client_2"},
		{name: "DELETE with the holder's token", method: "DELETE", path: path, user: "usr_client_2", tokens: []string{holder}},
		{name: "GET overridden to PATCH", method: "GET", path: path, user: "usr_client_2", header: map[string]string{"X-HTTP-Method-Override": "PATCH"}},
		{name: "HEAD overridden to PATCH", method: "HEAD", path: path, user: "usr_client_2", header: map[string]string{"X-HTTP-Method-Override": "PATCH"}},
		{name: "OPTIONS whose handler writes (the plugin refuses)", method: "OPTIONS", path: path, user: "usr_client_2"},
		{name: "encoded id", method: "PATCH", path: "/orders/ord%5F99182", user: "usr_client_2", body: `{"Status": "stolen"}`},
	}
}

func httplockProblem(kind string) string {
	return "https://github.com/offlinelock/offlinelock/blob/main/httplock/README.md#" + kind
}

// seed creates another order.
func seed(t *testing.T, c *client, id string) {
	t.Helper()
	require.NoError(t, c.db.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: id, Status: "new"}).Error)
}

// waitUntil waits until the RFC 3339 instant at has passed (the database
// clock runs on this machine).
func waitUntil(t *testing.T, at string) {
	t.Helper()
	expires, err := time.Parse(time.RFC3339Nano, at)
	require.NoError(t, err)
	for time.Now().Before(expires.Add(50 * time.Millisecond)) {
		time.Sleep(20 * time.Millisecond)
	}
}

// raw sends a without following redirects; a 423 of a documented
// operation is validated against the document (the mux's own answers to
// paths it has no route for are not the package's).
func (c *client) raw(a attack) (int, http.Header, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(a.method, c.base+a.path, strings.NewReader(a.body))
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+a.user)
	for _, tok := range a.tokens {
		req.Header.Add("Lock-Token", tok)
	}
	for k, v := range a.header {
		req.Header.Set(k, v)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	if resp.StatusCode == http.StatusLocked && !appOnly(req) {
		c.validate(req, resp, body)
	}
	return resp.StatusCode, resp.Header, body
}
