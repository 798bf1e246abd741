//go:build unix

package plugin_test

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/offlinelock/offlinelock"
)

// BenchmarkWatch: 1,000 watches of 1,000 records on one node, polled every
// 25 ms (short, so that -benchtime 300x stays brief). It reports
// the heap and goroutines each watch costs, the lock-table statements and
// the CPU time of the watcher's polls while nothing changes, and, per op,
// how long a change takes to reach its watch (a lock, then its release).
func BenchmarkWatch(b *testing.B) {
	const n, every = 1000, 25 * time.Millisecond
	for _, d := range databases() {
		b.Run(d.name, func(b *testing.B) {
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			db, p := setupModels(b, d, offlinelock.Config{TracerProvider: tp, WatchEvery: every})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			goroutines := runtime.NumGoroutine()
			watches := make([]<-chan offlinelock.Event, n)
			for i := range watches {
				w, err := p.Watch(ctx, db, &Doc{ID: uint(i + 1)})
				if err != nil {
					b.Fatal(err)
				}
				watches[i] = w
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / n
			perWatch := float64(runtime.NumGoroutine()-goroutines) / n

			// Idle: what the polls cost while nothing changes.
			const polls = 10
			ended, cpu := len(spans.Ended()), cpuTime()
			time.Sleep(polls * every) // time itself: the polls run on their ticker
			stmts := float64(len(spans.Ended())-ended) / polls
			cpuPoll := float64((cpuTime() - cpu).Microseconds()) / polls

			b.ResetTimer()
			for i := range b.N {
				doc := &Doc{ID: uint(i%n + 1)}
				if _, err := p.Acquire(as(db, martin), doc, offlinelock.Write); err != nil {
					b.Fatal(err)
				}
				awaitEvent(b, watches[i%n], offlinelock.EventLocked)
				if err := p.Release(as(db, martin), doc); err != nil {
					b.Fatal(err)
				}
				awaitEvent(b, watches[i%n], offlinelock.EventReleased)
			}
			b.ReportMetric(heap, "heap-B/watch") // after the loop: ResetTimer drops metrics
			b.ReportMetric(perWatch, "goroutines/watch")
			b.ReportMetric(stmts, "stmts/poll")
			b.ReportMetric(cpuPoll, "cpu-µs/poll")
		})
	}
}

func awaitEvent(b *testing.B, w <-chan offlinelock.Event, kind offlinelock.EventKind) {
	for {
		select {
		case e := <-w:
			if e.Kind == kind {
				return
			}
		case <-time.After(10 * time.Second):
			b.Fatalf("no %s event within 10 s", kind)
		}
	}
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
