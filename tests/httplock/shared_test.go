package httplock_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// TestOneStreamWatchesManyRecords: GET /lock/events?watch=… (the stream a
// browser's tabs share) starts with each record's state, then tells each
// record's events, each naming its record; a reconnect states each
// record's state again. Bad input: no record, too many, one that is not
// resource/id, an id that is not UTF-8 (400); no principal (401); an
// unknown resource or record (404), which refuses the whole stream.
func TestOneStreamWatchesManyRecords(t *testing.T) {
	eachDB(t, func(t *testing.T, c *client) {
		require.NoError(t, c.db.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: "ord_2", Status: "new"}).Error)
		const both = "/lock/events?watch=orders/ord_99182&watch=orders/ord_2&watch=orders/ord_2"
		tooMany := "/lock/events?watch=orders/ord_2"
		for i := range httplock.MaxStreamRecords {
			tooMany += "&watch=orders/x" + strconv.Itoa(i)
		}
		for path, status := range map[string]int{
			"/lock/events": http.StatusBadRequest, tooMany: http.StatusBadRequest,
			"/lock/events?watch=orders": http.StatusBadRequest, "/lock/events?watch=orders/%FF%FE": http.StatusBadRequest,
			"/lock/events?watch=nope/1&watch=orders/ord_2":      http.StatusNotFound,
			"/lock/events?watch=orders/nope&watch=orders/ord_2": http.StatusNotFound,
		} {
			got := c.do("GET", path, "usr_client_2", "", "")
			assert.Equal(t, status, got.status, "%s: %s", path, got.body)
			assert.Equal(t, "application/problem+json", got.header.Get("Content-Type"), path)
		}
		assert.Equal(t, http.StatusUnauthorized, c.do("GET", both, "", "", "").status)

		events := c.stream(both, "usr_client_2")
		assert.Equal(t, map[string]string{"ord_99182": "released", "ord_2": "released"}, states(t, events, 2),
			"each record's state first, each record once")
		one := c.do("POST", "/orders/ord_2/lock", "usr_client_1", "", "")
		require.Equal(t, http.StatusCreated, one.status)
		name, data := nextEvent(t, events)
		assert.Equal(t, []any{"locked", "orders", "ord_2", "usr_client_1"}, []any{name, data["resource"], data["id"], data["lockedBy"]})
		require.Equal(t, http.StatusCreated, c.do("POST", "/orders/ord_99182/lock", "usr_client_1", "", "").status)
		name, data = nextEvent(t, events)
		assert.Equal(t, []any{"locked", "ord_99182", "usr_client_1"}, []any{name, data["id"], data["lockedBy"]})
		taken := c.do("POST", "/orders/ord_2/lock/takeover", "admin", "", `{"reason": "urgent"}`)
		require.Equal(t, http.StatusCreated, taken.status)
		name, data = nextEvent(t, events)
		assert.Equal(t, []any{"taken-over", "ord_2", "admin", "urgent"}, []any{name, data["id"], data["by"], data["reason"]})

		again := c.reconnect(both, "usr_client_2", "3")
		assert.Equal(t, map[string]string{"ord_99182": "locked usr_client_1", "ord_2": "locked admin"}, states(t, again, 2))
		require.Equal(t, http.StatusNoContent, c.do("POST", "/orders/ord_2/unlock", "admin", taken.header.Get("Lock-Token"), "").status)
		for _, s := range []<-chan sse{events, again} {
			name, data = nextEvent(t, s)
			assert.Equal(t, []any{"released", "ord_2", "released"}, []any{name, data["id"], data["reason"]})
		}
	})
}

// states reads n lock events of a stream (viewers passed over) and says
// each record's: its name, and the holder of a locked one.
func states(t *testing.T, events <-chan sse, n int) map[string]string {
	t.Helper()
	got := map[string]string{}
	for range n {
		name, data := nextEvent(t, events)
		if by, _ := data["lockedBy"].(string); by != "" {
			name += " " + by
		}
		got[data["id"].(string)] = name
	}
	return got
}
