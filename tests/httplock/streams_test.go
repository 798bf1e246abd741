package httplock_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// liveServer serves orders/ord_1 on database name with cfg's Principal
// and LoginSession, and with server's settings on the http.Server.
func liveServer(t *testing.T, name string, cfg httplock.Config, server func(*http.Server)) (*httplock.Server, *client) {
	t.Helper()
	db := openDB(t, name)
	table := "ol_" + randomHex(6)
	locks := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler), WatchEvery: 50 * time.Millisecond})
	require.NoError(t, db.Use(locks))
	require.NoError(t, db.AutoMigrate(&Order{}))
	binaryKeys(t, db)
	t.Cleanup(func() { db.Migrator().DropTable(&Order{}); dropLockTable(db, table) })
	require.NoError(t, db.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: "ord_1"}).Error)
	cfg.Locks, cfg.DB = locks, db
	if len(cfg.Resources) == 0 {
		cfg.Resources = []httplock.Resource{{Name: "orders", Model: &Order{}}}
	}
	srv, err := httplock.New(cfg)
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(srv.Handler())
	if server != nil {
		server(ts.Config)
	}
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(ts.CloseClientConnections)
	return srv, &client{t: t, base: ts.URL, db: db, validate: func(*http.Request, *http.Response, []byte) {}}
}

// streamAs opens the record's event stream as user in login.
func (c *client) streamAs(user, login string) <-chan sse {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), "GET", c.base+"/orders/ord_1/lock/events", nil)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("X-Login", login)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	require.Equal(c.t, http.StatusOK, resp.StatusCode)
	return readEvents(resp)
}

// ends waits for the stream to end, failing on any lock event it still
// tells (a viewers event, told when the page itself began viewing, may
// have been written before the login ended).
func ends(t *testing.T, events <-chan sse, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case e, open := <-events:
			if open && e.name == "viewers" {
				continue
			}
			require.False(t, open, "the stream told %s after its login ended", e.name)
			return
		case <-deadline:
			t.Fatalf("the stream is still open after %v", within)
		}
	}
}

// TestAStreamEndsWithItsLogin: an event stream tells nothing more once
// its login ended: EndLogin ends the login's streams at once; a
// principal that Config.Principal no longer answers for (a session
// that expired, or was ended on another node) is told no further event.
func TestAStreamEndsWithItsLogin(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			var signedOut sync.Map // principals whose session ended
			who := func(r *http.Request) (string, error) {
				p, err := principal(r)
				if _, out := signedOut.Load(p); out {
					return "", errors.New("signed out")
				}
				return p, err
			}
			srv, c := liveServer(t, name, httplock.Config{Principal: who,
				LoginSession: func(r *http.Request) (string, error) { return r.Header.Get("X-Login"), nil }}, nil)

			mine, other := c.streamAs("usr_client_2", "login-a"), c.streamAs("usr_client_2", "login-b")
			waitForEvent(t, mine, "released", 5*time.Second)
			waitForEvent(t, other, "released", 5*time.Second)
			_, err := srv.EndLogin(context.Background(), "usr_client_2", "login-a")
			require.NoError(t, err)
			ends(t, mine, 5*time.Second)

			stale := c.streamAs("usr_client_3", "login-c")
			waitForEvent(t, stale, "released", 5*time.Second)
			signedOut.Store("usr_client_3", true)
			got := c.do("POST", "/orders/ord_1/lock", "usr_client_1", "", "")
			require.Equal(t, http.StatusCreated, got.status)
			ends(t, stale, 5*time.Second)
			assert.Equal(t, "usr_client_1", waitForEvent(t, other, "locked", 5*time.Second)["lockedBy"], "another login's stream goes on")
		})
	}
}

// TestAStreamOutlivesWriteTimeout: a server with WriteTimeout set (common
// hardening) neither cuts an event stream nor loses the event it writes
// after the timeout.
func TestAStreamOutlivesWriteTimeout(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			const timeout = 500 * time.Millisecond
			_, c := liveServer(t, name, httplock.Config{Principal: principal}, func(s *http.Server) { s.WriteTimeout = timeout })
			events := c.streamAs("usr_client_2", "")
			waitForEvent(t, events, "released", 5*time.Second)
			time.Sleep(2 * timeout) // time itself: the server's deadline must pass
			got := c.do("POST", "/orders/ord_1/lock", "usr_client_1", "", "")
			require.Equal(t, http.StatusCreated, got.status)
			assert.Equal(t, "usr_client_1", waitForEvent(t, events, "locked", 5*time.Second)["lockedBy"])
		})
	}
}

// TestStreamOpensWaitTheirTurn: many pages opening their event streams at
// once read the database a few at a time (Config.StreamOpens), and all
// of them open and are told the record's state.
func TestStreamOpensWaitTheirTurn(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			var now, most atomic.Int32
			exists := func(*http.Request, string) (bool, error) {
				n := now.Add(1)
				defer now.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(10 * time.Millisecond) // a slow database: opens overlap
				return true, nil
			}
			_, c := liveServer(t, name, httplock.Config{Principal: principal, StreamOpens: 3,
				Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, Exists: exists}}}, nil)
			const pages = 40
			opened := make(chan (<-chan sse), pages)
			for range pages {
				go func() { opened <- c.streamAs("usr_client_2", "") }()
			}
			for range pages {
				select {
				case events := <-opened:
					waitForEvent(t, events, "released", 10*time.Second)
				case <-time.After(10 * time.Second):
					t.Fatal("a stream did not open within 10 s")
				}
			}
			assert.LessOrEqual(t, most.Load(), int32(3), "opens reading the database at once")
			assert.Positive(t, most.Load())
		})
	}
}

// TestAStreamThatCannotOpenIsRetried: a stream that cannot open (its
// database reads fail) answers 200 asking to be retried and ends, so a
// browser's EventSource, which gives up after an error status, tries
// again; the next open works.
func TestAStreamThatCannotOpenIsRetried(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	exists := func(*http.Request, string) (bool, error) {
		if down.Load() {
			return false, errors.New("the database is out of connections")
		}
		return true, nil
	}
	_, c := liveServer(t, "sqlite", httplock.Config{Principal: principal,
		Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, Exists: exists}}}, nil)
	req, err := http.NewRequestWithContext(t.Context(), "GET", c.base+"/orders/ord_1/lock/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer usr_client_2")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(string(body), "retry: 2000\n"), "%q", body)
	assert.NotContains(t, string(body), "event:")
	assert.NotContains(t, string(body), "out of connections", "the cause is logged, not sent")

	down.Store(false)
	waitForEvent(t, c.streamAs("usr_client_2", ""), "released", 5*time.Second)
}

// TestViewersOverHTTP: each open event stream is a viewer of its record;
// the record's streams are told the users who have it open (viewers),
// and a page that closes its stream is gone from the list.
func TestViewersOverHTTP(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			_, c := liveServer(t, name, httplock.Config{Principal: principal}, nil)
			users := func(d map[string]any) []string {
				var out []string
				for _, v := range d["viewers"].([]any) {
					out = append(out, v.(map[string]any)["user"].(string))
					assert.NotEmpty(t, v.(map[string]any)["since"])
				}
				return out
			}
			martin := c.streamAs("usr_martin", "")
			assert.Equal(t, []string{"usr_martin"}, users(waitForEvent(t, martin, "viewers", 5*time.Second)))

			ctx, leave := context.WithCancel(t.Context())
			req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/orders/ord_1/lock/events", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer usr_david")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			david := readEvents(resp)
			assert.Equal(t, []string{"usr_martin", "usr_david"}, users(waitForEvent(t, martin, "viewers", 5*time.Second)))
			assert.Equal(t, []string{"usr_martin", "usr_david"}, users(waitForEvent(t, david, "viewers", 5*time.Second)))

			leave() // david's page is closed
			assert.Equal(t, []string{"usr_martin"}, users(waitForEvent(t, martin, "viewers", 5*time.Second)))
		})
	}
}
