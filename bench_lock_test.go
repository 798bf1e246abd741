package offlinelock_test

// Taking a lock: offlinelock's Acquire and a locked First, against the one
// bare statement a hand-written lock table takes the same lock with.
//
//   BenchmarkAcquireRelease: Acquire (acquire-x) and Acquire+Release
//     (acquire+release-x) of a Write lock, against the bare upsert and the
//     bare upsert + DELETE on a table with the same columns and indexes.
//     Target: acquire-x <= 1.05.
//   BenchmarkLockedFirst (a): a First by key under exclusive_read, which
//     takes the lock and reads the row, against the bare upsert alone.
//     Target: x-bare-lock <= 1.1 on PostgreSQL.
//   BenchmarkLockedFirstStatement: the locked First's one statement sent
//     raw through database/sql, against the bare upsert: what the database
//     pays, apart from what GORM and the plugin add in Go. PostgreSQL only
//     (the other databases take the lock in statements of their own).

import (
	"strconv"
	"testing"
	"time"

	"github.com/offlinelock/offlinelock"
)

func BenchmarkAcquireRelease(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBs(b, d)
		x := newBare(b, plain, lockTableName(b, db, p))
		sdb := as(db, martin)
		const keys = 64
		var ours, theirs [2]time.Duration // acquire, release
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			c := &Customer{ID: uint(i%keys + 1)}
			id := strconv.Itoa(i%keys + 1)
			runOurs := func() {
				t0 := time.Now()
				if _, err := p.Acquire(sdb, c, offlinelock.Write); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := p.Release(sdb, c); err != nil {
					b.Fatal(err)
				}
				ours[0] += t1.Sub(t0)
				ours[1] += time.Since(t1)
			}
			runBare := func() {
				t0 := time.Now()
				x.lock(b, "bare", id)
				t1 := time.Now()
				x.unlock(b, "bare", id)
				theirs[0] += t1.Sub(t0)
				theirs[1] += time.Since(t1)
			}
			if i%2 == 0 {
				runOurs()
				runBare()
			} else {
				runBare()
				runOurs()
			}
		}
		n := float64(b.N)
		b.ReportMetric(float64(ours[0].Nanoseconds())/n, "ns/acquire")
		b.ReportMetric(float64(theirs[0].Nanoseconds())/n, "ns/bare-acquire")
		b.ReportMetric(float64(ours[0])/float64(theirs[0]), "acquire-x")
		b.ReportMetric(float64(ours[0]+ours[1])/float64(theirs[0]+theirs[1]), "acquire+release-x")
	})
}

func BenchmarkLockedFirst(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBs(b, d)
		seedAccounts(b, db, 64)
		x := newBare(b, plain, lockTableName(b, db, p))
		m := as(db, martin)
		b.ReportAllocs()
		interleave(b, "x-bare-lock", func(i int) {
			var a Account
			if err := m.First(&a, i%64+1).Error; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := p.Release(m, &a); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}, func(i int) {
			x.lock(b, "bare", strconv.Itoa(i%64+1))
			b.StopTimer()
			x.clear(b, "bare")
			b.StartTimer()
		})
	})
}

func BenchmarkLockedFirstStatement(b *testing.B) {
	d := database{"postgres", openPostgres}
	db, plain, p := benchDBs(b, d)
	seedAccounts(b, db, 64)
	x := newBare(b, plain, lockTableName(b, db, p))
	locked := `WITH g AS (` + x.upsert()[:len(x.upsert())-len(" RETURNING expires_at")] + ` RETURNING 1)
SELECT * FROM accounts WHERE accounts.id = $5 AND EXISTS (SELECT 1 FROM g) ORDER BY accounts.id LIMIT 1 FOR SHARE OF accounts`
	interleave(b, "x-bare-lock", func(i int) {
		id := i%64 + 1
		rows, err := x.db.Query(locked, "accounts", strconv.Itoa(id), "M1", "0123456789abcdef0123456789abcdef", id)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
		}
		rows.Close()
		b.StopTimer()
		x.clear(b, "accounts")
		b.StartTimer()
	}, func(i int) {
		x.lock(b, "bare", strconv.Itoa(i%64+1))
		b.StopTimer()
		x.clear(b, "bare")
		b.StartTimer()
	})
}
