package httplock

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/offlinelock/offlinelock"
)

// A stream's events: GET /{resource}/{id}/lock/events for one record,
// GET /lock/events?watch=… for several (offlinelock.js).

// streamEvent is one event of a stream, with the resource it names.
type streamEvent struct {
	res *resource
	e   offlinelock.Event
}

// watched is one record a stream watches.
type watched struct {
	res    *resource
	target any
}

// events is GET /{resource}/{id}/lock/events: the record's lock events as a
// text/event-stream.
func (s *Server) events(w http.ResponseWriter, r *http.Request, res *resource) error {
	s.serveStream(w, r, func() ([]watched, string, error) {
		res, target, principal, err := s.liveCheck(r, res, ActionWatch)
		return []watched{{res, target}}, principal, err
	})
	return nil
}

// serveStream serves the events of the records check names: their state first.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, check func() ([]watched, string, error)) {
	// At most Config.StreamOpens streams read the database to open at once.
	select {
	case s.opening <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	list, principal, err := check()
	var events <-chan streamEvent
	if err == nil {
		events, err = s.watchAll(ctx, list, principal)
	}
	<-s.opening
	if err != nil && internal(err) {
		// EventSource does not reconnect after an error status: ask for a retry.
		s.cfg.Logger.WarnContext(r.Context(), "httplock: an event stream could not open; its client will retry", slog.String("error", err.Error()))
		streamHeaders(w)
		fmt.Fprint(w, "retry: 2000\n: the stream could not open; try again\n\n")
		return
	}
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	s.stream(w, r, principal, events)
}

// streamHeaders writes a stream's status and headers.
func streamHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx would hold events back in its buffer
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
}

// watchAll watches each record of list until ctx ends, the caller a viewer
// of each, merging their events; each watch starts with its record's state.
func (s *Server) watchAll(ctx context.Context, list []watched, principal string) (<-chan streamEvent, error) {
	chans := make([]<-chan offlinelock.Event, len(list))
	for i, wt := range list {
		ch, err := s.cfg.Locks.Watch(ctx, s.cfg.DB, wt.target)
		if err != nil {
			return nil, err
		}
		chans[i] = ch
		// The page is a viewer while its stream is open (or not, and goes on).
		if verr := s.cfg.Locks.View(ctx, s.cfg.DB, wt.target, principal); verr != nil {
			s.cfg.Logger.WarnContext(ctx, "httplock: event stream: presence", slog.String("error", verr.Error()))
		}
	}
	out := make(chan streamEvent, 16)
	var wg sync.WaitGroup
	for i, ch := range chans {
		wg.Go(func() {
			for e := range ch {
				select {
				case out <- streamEvent{list[i].res, e}:
				case <-ctx.Done():
				}
			}
		})
	}
	go func() { wg.Wait(); close(out) }()
	return out, nil
}

// stream writes events to w until they end, the client goes, or the
// login of principal ends.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, principal string, events <-chan streamEvent) {
	rc := http.NewResponseController(w)
	streamHeaders(w)
	// The id makes every reconnect carry Last-Event-ID.
	fmt.Fprint(w, "retry: 2000\nid: 0\n\n")
	sent := 0
	send := func(se streamEvent) {
		sent++
		data, _ := json.Marshal(eventOf(se.res, se.e))
		fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", sent, se.e.Kind, data)
	}
	// A deadline per write, not the server's WriteTimeout, which would cut the stream.
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(2 * keepAliveEvery)) }
	ended, done := s.openStream(r, principal)
	defer done()
	deadline()
	rc.Flush()
	alive := time.NewTicker(keepAliveEvery)
	defer alive.Stop()
	for {
		select {
		case e, open := <-events:
			if !open || !s.signedIn(r, principal) {
				return
			}
			deadline()
			send(e)
		case <-ended:
			return // EndLogin: the login is over
		case <-alive.C:
			if !s.signedIn(r, principal) {
				return
			}
			deadline()
			fmt.Fprint(w, ": keep-alive\n\n")
		}
		if rc.Flush() != nil {
			return
		}
	}
}
