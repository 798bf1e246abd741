package offlinelock_test

import (
	"strconv"
	"sync"
	"testing"

	"github.com/offlinelock/offlinelock"
)

// BenchmarkConcurrentSessions: 16 sessions at once, each taking and
// releasing Write locks of records of its own (Acquire, Release), beside
// the same two statements sent bare through database/sql by 16
// goroutines to the same lock table. Each op is one round of 16 x 10
// lock-and-release pairs, ours and theirs alternately; x-bare is our time
// over theirs, so 1/x-bare is our throughput as a share of theirs.
func BenchmarkConcurrentSessions(b *testing.B) {
	const sessions, pairs = 16, 10
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBs(b, d)
		x := newBare(b, plain, lockTableName(b, db, p))
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.SetMaxIdleConns(sessions + 4)
		}
		round := func(one func(s, i int)) {
			var wg sync.WaitGroup
			for s := range sessions {
				wg.Go(func() {
					for i := range pairs {
						one(s, i)
					}
				})
			}
			wg.Wait()
		}
		owners := make([]offlinelock.Owner, sessions)
		for s := range owners {
			owners[s] = offlinelock.Owner{Session: "S" + strconv.Itoa(s), User: "u" + strconv.Itoa(s)}
		}
		ours := func(int) {
			round(func(s, i int) {
				tx, doc := as(db, owners[s]), &Doc{ID: uint(s*pairs + i + 1)}
				if _, err := p.Acquire(tx, doc, offlinelock.Write); err != nil {
					b.Error(err)
					return
				}
				if err := p.Release(tx, doc); err != nil {
					b.Error(err)
				}
			})
		}
		theirs := func(int) {
			round(func(s, i int) {
				id := strconv.Itoa(s*pairs + i + 1)
				x.lock(b, "bare", id)
				x.unlock(b, "bare", id)
			})
		}
		interleave(b, "x-bare", ours, theirs)
	})
}
