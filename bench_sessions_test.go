package offlinelock_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"gorm.io/gorm"

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

// BenchmarkConcurrentSessionsOwnStatements is BenchmarkConcurrentSessions
// on PostgreSQL with the plugin's own grant and release statements sent
// bare through database/sql in place of hand-written ones: x-same is what
// the plugin adds to the database's work (its Go path, the context, the
// spans), the floor being the very statements it sends. PostgreSQL only:
// there an Acquire and a Release are one statement each.
func BenchmarkConcurrentSessionsOwnStatements(b *testing.B) {
	const sessions, pairs = 16, 10
	db, plain, p := benchDBs(b, database{"postgres", openPostgres})
	sqlDB, err := plain.DB()
	if err != nil {
		b.Fatal(err)
	}
	for _, pool := range []*gorm.DB{db, plain} {
		if d, err := pool.DB(); err == nil {
			d.SetMaxIdleConns(sessions + 4)
		}
	}
	grant, release := offlinelock.OwnStatements(p, db)
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
	send := func(q string, args ...any) {
		rows, err := sqlDB.Query(q, args...)
		if err != nil {
			b.Error(err)
			return
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil || n != 1 {
			b.Errorf("%d rows, %v", n, err)
		}
	}
	interleave(b, "x-same", func(int) {
		round(func(s, i int) {
			tx, doc := as(db, offlinelock.Owner{Session: "S" + strconv.Itoa(s), User: "martin"}), &Doc{ID: uint(s*pairs + i + 1)}
			if _, err := p.Acquire(tx, doc, offlinelock.Write); err != nil {
				b.Error(err)
				return
			}
			if err := p.Release(tx, doc); err != nil {
				b.Error(err)
			}
		})
	}, func(int) {
		round(func(s, i int) {
			id, session := strconv.Itoa(s*pairs+i+1), "S"+strconv.Itoa(s)
			q, args := grant("bare", id, session)
			send(q, args...)
			send(release, "bare", id, session)
		})
	})
}
