package main

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// wire is what the test servers saw of the browsers' connections: the
// protocols of their requests, and the event streams open at once.
var wire wireLog

type wireLog struct {
	mu         sync.Mutex
	protos     map[string]bool // each request's protocol ("HTTP/1.1")
	open, most int             // event streams open now, and at most since reset
	served     [][]string      // the records of each event stream served (its watches in place), in order
}

// saw notes r's protocol.
func (l *wireLog) saw(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.protos == nil {
		l.protos = map[string]bool{}
	}
	l.protos[r.Proto] = true
}

// stream notes an event stream that opened, and returns what notes its
// end (the browser closing its connection, or the handler returning).
func (l *wireLog) stream() func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open++
	l.most = max(l.most, l.open)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.open--
	}
}

// reset forgets the protocols seen and the most streams open at once.
func (l *wireLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.protos, l.most = map[string]bool{}, l.open
}

// seen are the protocols seen, and the most event streams open at once,
// since the last reset, and the streams open now.
func (l *wireLog) seen() (protos map[string]bool, most, open int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	protos = make(map[string]bool, len(l.protos))
	for p := range l.protos {
		protos[p] = true
	}
	return protos, l.most, l.open
}

// renewals counts the renewals (POST …/lock with a Lock-Token) that the
// test servers answered 200, by path.
var renewals renewalLog

type renewalLog struct {
	mu sync.Mutex
	ok map[string]int
}

// watch returns w, counting r as renewed when it answers 200.
func (l *renewalLog) watch(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	return &statusWriter{ResponseWriter: w, done: func(status int) {
		if status != http.StatusOK {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.ok == nil {
			l.ok = map[string]int{}
		}
		l.ok[r.URL.Path]++
	}}
}

// count is how many renewals of path were answered 200.
func (l *renewalLog) count(path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok[path]
}

// statusWriter tells done the status it writes.
type statusWriter struct {
	http.ResponseWriter
	done func(int)
}

func (w *statusWriter) WriteHeader(status int) {
	w.done(status)
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serving returns w, noting the records of event stream r once it
// answers 200: its watches are in place then.
func (l *wireLog) serving(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	return &statusWriter{ResponseWriter: w, done: func(status int) {
		if status != http.StatusOK {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.served = append(l.served, r.URL.Query()["watch"])
	}}
}

// count is how many event streams have been served so far.
func (l *wireLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.served)
}

// waitServed waits until an event stream watching record
// ("customers/130") is served after the first n streams served, and says
// how many have been.
func (l *wireLog) waitServed(t *testing.T, n int, record string, within time.Duration) int {
	t.Helper()
	for end := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		l.mu.Lock()
		found := slices.ContainsFunc(l.served[min(n, len(l.served)):], func(w []string) bool { return slices.Contains(w, record) })
		served := len(l.served)
		l.mu.Unlock()
		if found {
			return served
		}
		if time.Now().After(end) {
			t.Fatalf("no event stream of %s served within %v (%d so far)", record, within, served)
		}
	}
}
