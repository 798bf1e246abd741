package httplock_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock/httplock"
)

// TestAThousandStreamsOpenAtOnce (issue 50): 1,000 pages opening their
// event streams at the same moment, with the default configuration, all
// open (200, never a 500 from a database out of connections) and are each
// told the record's state; the opens read the database a few at a time
// (Config.StreamOpens), not once each at once.
func TestAThousandStreamsOpenAtOnce(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			_, c := liveServer(t, name, httplock.Config{Principal: principal}, nil)
			const pages = 1000
			transport := &http.Transport{MaxIdleConnsPerHost: pages}
			t.Cleanup(transport.CloseIdleConnections)
			client := &http.Client{Transport: transport}
			type opened struct {
				events <-chan sse
				err    error
			}
			results := make(chan opened, pages)
			start := time.Now()
			for i := range pages {
				go func() {
					req, err := http.NewRequestWithContext(t.Context(), "GET", c.base+"/orders/ord_1/lock/events", nil)
					if err != nil {
						results <- opened{err: err}
						return
					}
					req.Header.Set("Authorization", "Bearer usr_client_2")
					req.Header.Set("X-Login", fmt.Sprintf("page-%d", i))
					resp, err := client.Do(req)
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
					if err != nil {
						results <- opened{err: err}
						return
					}
					results <- opened{events: readEvents(resp)}
				}()
			}
			var streams []<-chan sse
			for range pages {
				r := <-results
				require.NoError(t, r.err, "every stream opens")
				streams = append(streams, r.events)
			}
			for _, events := range streams {
				waitForEvent(t, events, "released", 60*time.Second)
			}
			took := time.Since(start)
			t.Logf("RELIABILITY %d event streams opened at once (%s): all open and told the state in %.2f s", pages, name, took.Seconds())
			assert.Less(t, took, 60*time.Second)
		})
	}
}
