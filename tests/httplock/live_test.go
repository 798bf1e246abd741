package httplock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

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

// adminsTakeOver is the tests' Config.TakeOver: admins take over anyone's
// lock; everyone else only their own (the default).
func adminsTakeOver(r *http.Request, principal string, holder offlinelock.Lock) error {
	if principal == "admin" {
		return nil
	}
	return httplock.SameUserTakeOver(r, principal, holder)
}

// TestTakeOverOverHTTP: POST …/lock/takeover fences the holder (its token
// writes nothing more), returns a new lock and token; the policy decides
// who may; the same principal (another tab) may resume its own lock.
func TestTakeOverOverHTTP(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		first := c.do("POST", path+"/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, first.status)
		old := first.header.Get("Lock-Token")
		gen := first.json(t)["generation"].(float64)

		refused := c.do("POST", path+"/lock/takeover", "usr_client_2", "", `{"reason": "mine now"}`)
		assert.Equal(t, http.StatusForbidden, refused.status)
		assert.Equal(t, http.StatusNoContent, c.do("PATCH", path, "usr_client_1", old, `{"Status": "still mine"}`).status, "a refused take-over changes nothing")
		assert.Equal(t, http.StatusUnauthorized, c.do("POST", path+"/lock/takeover", "", "", "").status)
		assert.Equal(t, http.StatusNotFound, c.do("POST", "/orders/nope/lock/takeover", "admin", "", "").status)
		assert.Equal(t, http.StatusBadRequest, c.do("POST", path+"/lock/takeover", "admin", "", `{"reason": "`+strings.Repeat("x", 256)+`"}`).status)
		assert.Equal(t, http.StatusBadRequest, c.do("POST", path+"/lock/takeover", "admin", "", `not json`).status)

		taken := c.do("POST", path+"/lock/takeover", "admin", "", `{"reason": "customer on the phone"}`)
		require.Equal(t, http.StatusCreated, taken.status, string(taken.body))
		token := taken.header.Get("Lock-Token")
		assert.Regexp(t, `^[0-9a-f]{32}$`, token)
		assert.NotEqual(t, old, token)
		b := taken.json(t)
		assert.Equal(t, "admin", b["lockedBy"])
		assert.Equal(t, "customer on the phone", b["reason"])
		assert.Greater(t, b["generation"].(float64), gen)

		assert.Equal(t, http.StatusLocked, c.do("PATCH", path, "usr_client_1", old, `{"Status": "fenced"}`).status, "the old token is fenced")
		assert.Equal(t, http.StatusNoContent, c.do("PATCH", path, "admin", token, `{"Status": "admin's"}`).status)
		var o Order
		require.NoError(t, c.db.First(&o, "id = ?", "ord_99182").Error)
		assert.Equal(t, "admin's", o.Status)
		assert.Contains(t, c.logs.String(), "action=take_over", "logged")

		// The same principal in another tab is told so, and may resume.
		tab := c.do("POST", path+"/lock", "admin", "", "")
		require.Equal(t, http.StatusLocked, tab.status)
		p := tab.json(t)
		assert.Equal(t, true, p["lockedByYou"])
		assert.Contains(t, p["detail"], "you are editing this in another tab since")
		assert.NotEmpty(t, p["lockedSince"])
		resumed := c.do("POST", path+"/lock/takeover", "admin", "", "")
		require.Equal(t, http.StatusCreated, resumed.status)
		assert.Equal(t, http.StatusLocked, c.do("PATCH", path, "admin", token, `{"Status": "old tab"}`).status, "the old tab is fenced")
		assert.Equal(t, http.StatusNoContent, c.do("PATCH", path, "admin", resumed.header.Get("Lock-Token"), `{"Status": "new tab"}`).status)
	})
}

// TestRequestToEditOverHTTP: 202 to ask a holder; 409 for the holder
// itself and for a free record.
func TestRequestToEditOverHTTP(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		assert.Equal(t, http.StatusConflict, c.do("POST", path+"/lock/request", "usr_client_2", "", "").status, "nobody holds it")
		require.Equal(t, http.StatusCreated, c.do("POST", path+"/lock", "usr_client_1", "", "").status)
		assert.Equal(t, http.StatusConflict, c.do("POST", path+"/lock/request", "usr_client_1", "", "").status, "the holder itself")
		assert.Equal(t, http.StatusAccepted, c.do("POST", path+"/lock/request", "usr_client_2", "", "").status)
		assert.Equal(t, http.StatusUnauthorized, c.do("POST", path+"/lock/request", "", "", "").status)
		assert.Equal(t, http.StatusNotFound, c.do("POST", "/orders/nope/lock/request", "usr_client_2", "", "").status)
	})
}

// TestRequestsToEditAreBounded: asking again for the same lock is 202 and
// tells nobody again; past offlinelock.RequestsPerMinute requests of one
// user in a minute, 429 with Retry-After.
func TestRequestsToEditAreBounded(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		for i := 0; i <= offlinelock.RequestsPerMinute; i++ {
			id := fmt.Sprintf("ord_r%02d", i)
			require.NoError(t, c.db.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: id, Status: "new"}).Error)
			require.Equal(t, http.StatusCreated, c.do("POST", "/orders/"+id+"/lock", "usr_client_1", "", "").status)
		}
		for i := 0; i < offlinelock.RequestsPerMinute; i++ {
			path := fmt.Sprintf("/orders/ord_r%02d/lock/request", i)
			require.Equal(t, http.StatusAccepted, c.do("POST", path, "usr_client_2", "", "").status, path)
			require.Equal(t, http.StatusAccepted, c.do("POST", path, "usr_client_2", "", "").status, "asked again: "+path)
		}
		r := c.do("POST", fmt.Sprintf("/orders/ord_r%02d/lock/request", offlinelock.RequestsPerMinute), "usr_client_2", "", "")
		assert.Equal(t, http.StatusTooManyRequests, r.status)
		assert.Equal(t, "60", r.header.Get("Retry-After"))
		assert.Contains(t, r.json(t)["detail"], "ask again in a minute")
		var n int64
		require.NoError(t, c.db.Table(c.table+"_notes").Where("kind = ?", "requested").Count(&n).Error)
		assert.Equal(t, int64(offlinelock.RequestsPerMinute), n, "one note per record asked for")
	})
}

// TestAnIDThatIsNotUTF8Is400: on every endpoint, on every database.
func TestAnIDThatIsNotUTF8Is400(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		for _, ep := range []struct{ method, path string }{
			{"POST", "/orders/%FF%FE/lock"}, {"GET", "/orders/%FF%FE/lock"}, {"POST", "/orders/%FF%FE/lock/takeover"},
			{"POST", "/orders/%FF%FE/lock/request"}, {"GET", "/orders/%FF%FE/lock/events"}, {"PATCH", "/orders/%FF%FE"},
		} {
			got := c.do(ep.method, ep.path, "usr_client_1", "", "")
			assert.Equal(t, http.StatusBadRequest, got.status, "%s %s: %s", ep.method, ep.path, got.body)
		}
		got := c.do("POST", "/orders/%FF%FE/unlock", "usr_client_1", strings.Repeat("0", 32), "")
		assert.Equal(t, http.StatusBadRequest, got.status, string(got.body))
	})
}

type sse struct{ id, name, data string }

// stream opens GET path as user and hands its events to the returned
// channel until the test ends.
func (c *client) stream(path, user string) <-chan sse {
	c.t.Helper()
	return c.reconnect(path, user, "")
}

// reconnect opens GET path as user as a browser's EventSource does after
// a cut: with the last event id it saw (none when lastID is "").
func (c *client) reconnect(path, user, lastID string) <-chan sse {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), "GET", c.base+path, nil)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+user)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	require.Equal(c.t, http.StatusOK, resp.StatusCode)
	require.Equal(c.t, "text/event-stream", resp.Header.Get("Content-Type"))
	return readEvents(resp)
}

// readEvents hands the events of an event stream's response to the
// returned channel, and closes it when the stream ends.
func readEvents(resp *http.Response) <-chan sse {
	out := make(chan sse, 16)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var e sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				e.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.data = strings.TrimPrefix(line, "data: ")
			case line == "" && e.name != "":
				out <- e
				e = sse{}
			case line == "":
				e = sse{} // a block without an event: the stream's first id
			}
		}
	}()
	return out
}

// nextEvent is the stream's next lock event, its data decoded (viewers
// events, which say who has the record open, are passed over).
func nextEvent(t *testing.T, events <-chan sse) (string, map[string]any) {
	t.Helper()
	select {
	case e, ok := <-events:
		require.True(t, ok, "the stream ended")
		if e.name == "viewers" {
			return nextEvent(t, events)
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.data), &m), e.data)
		return e.name, m
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5 s")
		return "", nil
	}
}

// TestLockEventsOverHTTP: a page watching a record learns, within the
// watch interval, that it was locked, that someone asks to edit it, that
// it was taken over (by whom, why) and released. Never a token.
func TestLockEventsOverHTTP(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		assert.Equal(t, http.StatusUnauthorized, c.do("GET", path+"/lock/events", "", "", "").status)
		assert.Equal(t, http.StatusNotFound, c.do("GET", "/orders/nope/lock/events", "usr_client_2", "", "").status)
		events := c.stream(path+"/lock/events", "usr_client_2")
		name, data := nextEvent(t, events)
		assert.Equal(t, "released", name, "a stream starts with the record's state: free")
		assert.NotContains(t, data, "reason", "no lock ended")
		assert.NotContains(t, data, "lockedBy")

		locked := c.do("POST", path+"/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, locked.status)
		name, data = nextEvent(t, events)
		assert.Equal(t, "locked", name)
		assert.Equal(t, "usr_client_1", data["lockedBy"])
		assert.Equal(t, locked.json(t)["generation"], data["generation"])
		assert.NotContains(t, data, "lockToken")
		// One shape for "locked by someone else": the 423's names.
		refused := c.do("POST", path+"/lock", "usr_client_2", "", "").json(t)
		for _, field := range []string{"lockedBy", "lockedSince", "lockedUntil", "generation"} {
			assert.Equal(t, refused[field], data[field], field)
		}

		require.Equal(t, http.StatusAccepted, c.do("POST", path+"/lock/request", "usr_client_2", "", "").status)
		name, data = nextEvent(t, events)
		assert.Equal(t, "requested", name)
		assert.Equal(t, "usr_client_2", data["by"])

		taken := c.do("POST", path+"/lock/takeover", "admin", "", `{"reason": "urgent"}`)
		require.Equal(t, http.StatusCreated, taken.status)
		name, data = nextEvent(t, events)
		assert.Equal(t, "taken-over", name)
		assert.Equal(t, "admin", data["by"])
		assert.Equal(t, "urgent", data["reason"])
		assert.Equal(t, "admin", data["lockedBy"])

		require.Equal(t, http.StatusNoContent, c.do("POST", path+"/unlock", "admin", taken.header.Get("Lock-Token"), "").status)
		name, data = nextEvent(t, events)
		assert.Equal(t, "released", name)
		assert.Equal(t, "released", data["reason"])
		assert.Equal(t, taken.json(t)["generation"], data["generation"], "which lock ended")
		assert.NotContains(t, data, "lockedBy", "no stale holder")
		assert.NotContains(t, data, "expiresAt")
	})
}

// TestReconnectedEventStreamIsToldOfARelease: a page whose stream was cut
// while the record became free is told released when its browser
// reconnects (with Last-Event-ID); a held record is told locked; a first
// connection is told the record's state too.
func TestReconnectedEventStreamIsToldOfARelease(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		const path = "/orders/ord_99182"
		events := c.stream(path+"/lock/events", "usr_client_2")
		name, _ := nextEvent(t, events)
		require.Equal(t, "released", name, "free at the start")
		locked := c.do("POST", path+"/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, locked.status)
		var lastID string
		for lastID == "" {
			select {
			case e := <-events:
				if e.name == "viewers" {
					continue // the page itself, viewing
				}
				assert.Equal(t, "locked", e.name)
				assert.NotEmpty(t, e.id, "every event carries an id, so that a reconnect says it is one")
				lastID = e.id
			case <-time.After(5 * time.Second):
				t.Fatal("no event within 5 s")
			}
		}

		name, data := nextEvent(t, c.reconnect(path+"/lock/events", "usr_client_2", lastID))
		assert.Equal(t, "locked", name, "a held record, reconnected")
		assert.Equal(t, "usr_client_1", data["lockedBy"])

		require.Equal(t, http.StatusNoContent, c.do("POST", path+"/unlock", "usr_client_1", locked.header.Get("Lock-Token"), "").status)
		for _, lastID := range []string{"1", "0"} {
			name, data = nextEvent(t, c.reconnect(path+"/lock/events", "usr_client_2", lastID))
			assert.Equal(t, "released", name, "Last-Event-ID %s: the release happened while the stream was cut", lastID)
			assert.Equal(t, "orders", data["resource"])
			assert.Equal(t, "ord_99182", data["id"])
			assert.NotContains(t, data, "lockedBy")
		}

		first := c.stream(path+"/lock/events", "usr_client_2")
		name, _ = nextEvent(t, first)
		assert.Equal(t, "released", name, "a first connection is told the record is free")
		again := c.do("POST", path+"/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, again.status)
		name, _ = nextEvent(t, first)
		assert.Equal(t, "locked", name)

		require.Equal(t, http.StatusNoContent, c.do("POST", path+"/unlock", "usr_client_1", again.header.Get("Lock-Token"), "").status)
	})
}

func TestTheClientIsServed(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		got := c.do("GET", "/offlinelock.js", "", "", "")
		require.Equal(t, http.StatusOK, got.status)
		assert.Equal(t, "text/javascript; charset=utf-8", got.header.Get("Content-Type"))
		assert.Contains(t, string(got.body), "export function editLock(")
	})
}

// reopen opens db's database again, as a second application node would.
func reopen(t *testing.T, name string, db *gorm.DB) *gorm.DB {
	t.Helper()
	cfg := &gorm.Config{Logger: logger.Discard}
	var d gorm.Dialector
	switch name {
	case "sqlite":
		var file string
		require.NoError(t, db.Raw(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file).Error)
		d = sqlite.Open(offlinelock.SQLiteDSN(file))
	case "postgres":
		var schema string
		require.NoError(t, db.Raw(`SELECT current_schema()`).Scan(&schema).Error)
		d = postgres.Open(os.Getenv("OFFLINELOCK_POSTGRES_DSN") + " search_path=" + schema)
	default:
		var name string
		require.NoError(t, db.Raw(`SELECT DATABASE()`).Scan(&name).Error)
		c, err := mysqldriver.ParseDSN(os.Getenv("OFFLINELOCK_MYSQL_DSN"))
		require.NoError(t, err)
		c.DBName = name
		d = mysql.Open(c.FormatDSN())
	}
	other, err := gorm.Open(d, cfg)
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return other
}

// TestLockEventsAcrossNodes: a page watching through one node learns of a
// lock taken and released through another, each node with its own plugin
// and server on the one database.
func TestLockEventsAcrossNodes(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			table := "ol_" + randomHex(6)
			node := func(db *gorm.DB) (*offlinelock.Plugin, string) {
				locks := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler), WatchEvery: 100 * time.Millisecond})
				require.NoError(t, db.Use(locks))
				srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal,
					Resources: []httplock.Resource{{Name: "orders", Model: &Order{}}}})
				require.NoError(t, err)
				ts := httptest.NewServer(srv.Handler())
				t.Cleanup(ts.Close)
				t.Cleanup(ts.CloseClientConnections)
				return locks, ts.URL
			}
			a := openDB(t, name)
			_, baseA := node(a)
			require.NoError(t, a.AutoMigrate(&Order{}))
			binaryKeys(t, a)
			t.Cleanup(func() { a.Migrator().DropTable(&Order{}); dropLockTable(a, table) })
			require.NoError(t, a.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: "ord_1"}).Error)
			_, baseB := node(reopen(t, name, a))

			onB := (&client{t: t, base: baseB, validate: func(*http.Request, *http.Response, []byte) {}}).stream("/orders/ord_1/lock/events", "usr_client_2")
			kind, data := nextEvent(t, onB)
			require.Equal(t, "released", kind, "free at the start")
			assert.NotContains(t, data, "reason")
			viaA := &client{t: t, base: baseA, validate: func(*http.Request, *http.Response, []byte) {}}
			locked := viaA.do("POST", "/orders/ord_1/lock", "usr_client_1", "", "")
			require.Equal(t, http.StatusCreated, locked.status)
			kind, data = nextEvent(t, onB)
			assert.Equal(t, "locked", kind)
			assert.Equal(t, "usr_client_1", data["lockedBy"])
			require.Equal(t, http.StatusNoContent, viaA.do("POST", "/orders/ord_1/unlock", "usr_client_1", locked.header.Get("Lock-Token"), "").status)
			kind, _ = nextEvent(t, onB)
			assert.Equal(t, "released", kind)
		})
	}
}
