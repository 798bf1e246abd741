//go:build unix

package plugin_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// BenchmarkViewers: what presence costs per open page, beside
// BenchmarkWatch. 1,000 pages of 1,000 records on one node, each a Watch
// and a View of its record (as an HTTP event stream is), polled every
// 25 ms. It reports the heap and goroutines each View adds to its Watch,
// the viewers-table statements of a poll and of a refresh beat (every
// 3 s), the CPU time of a poll with the 1,000 views, and, per op, how long
// a page that opens, then closes, takes to reach its record's other page
// (two viewers events).
func BenchmarkViewers(b *testing.B) {
	const n, every, beat = 1000, 25 * time.Millisecond, 3 * time.Second
	for _, d := range databases() {
		b.Run(d.name, func(b *testing.B) {
			db, p := setupModels(b, d, offlinelock.Config{WatchEvery: every})
			var reads, updates atomic.Int64
			countViewers(b, db, &reads, &updates)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			watches := make([]<-chan offlinelock.Event, n)
			for i := range watches {
				w, err := p.Watch(ctx, db, &Doc{ID: uint(i + 1)})
				if err != nil {
					b.Fatal(err)
				}
				watches[i] = w
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			goroutines := runtime.NumGoroutine()
			for i := range n {
				if err := p.View(ctx, db, &Doc{ID: uint(i + 1)}, "martin"); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / n
			perView := float64(runtime.NumGoroutine()-goroutines) / n
			for i := range watches { // each page is told its own view
				awaitEvent(b, watches[i], offlinelock.EventViewers)
			}

			// Idle: what the polls and the refresh beats cost while
			// nothing changes.
			const polls = 10
			r, cpu := reads.Load(), cpuTime()
			time.Sleep(polls * every) // time itself: the polls run on their ticker
			readsPoll := float64(reads.Load()-r) / polls
			cpuPoll := float64((cpuTime() - cpu).Microseconds()) / polls
			u := updates.Load()
			time.Sleep(2 * beat) // time itself: the refresh runs on its ticker
			updatesBeat := float64(updates.Load()-u) / 2

			b.ResetTimer()
			for i := range b.N {
				page, closePage := context.WithCancel(ctx)
				if err := p.View(page, db, &Doc{ID: uint(i%n + 1)}, "david"); err != nil {
					b.Fatal(err)
				}
				awaitEvent(b, watches[i%n], offlinelock.EventViewers)
				closePage()
				awaitEvent(b, watches[i%n], offlinelock.EventViewers)
			}
			b.ReportMetric(heap, "heap-B/view") // after the loop: ResetTimer drops metrics
			b.ReportMetric(perView, "goroutines/view")
			b.ReportMetric(readsPoll, "viewer-reads/poll")
			b.ReportMetric(updatesBeat, "viewer-updates/beat")
			b.ReportMetric(cpuPoll, "cpu-µs/poll")
		})
	}
}

// countViewers counts db's statements on a viewers table: its reads in
// reads, its refreshes (UPDATE) in updates.
func countViewers(b *testing.B, db *gorm.DB, reads, updates *atomic.Int64) {
	count := func(n *atomic.Int64) func(*gorm.DB) {
		return func(tx *gorm.DB) {
			if strings.HasSuffix(tx.Statement.Table, "_viewers") {
				n.Add(1)
			}
		}
	}
	if err := db.Callback().Query().After("gorm:query").Register("bench:viewer-reads", count(reads)); err != nil {
		b.Fatal(err)
	}
	if err := db.Callback().Update().After("gorm:update").Register("bench:viewer-updates", count(updates)); err != nil {
		b.Fatal(err)
	}
}
