package offlinelock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/offlinelock/offlinelock"
)

// BenchmarkAcquireRelease compares, in one run and interleaved so that noise
// hits both alike, offlinelock's Acquire+Release of a Write lock on
// PostgreSQL with the bare single statements a hand-written lock table needs
// for the same writes (an upsert that takes a free or expired key, and a
// DELETE), sent through the same connection pool. It reports each path's
// time and the ratios; the target is acquire-x <= 1.1.
func BenchmarkAcquireRelease(b *testing.B) {
	table := "ol_" + randomHex(6)
	db, p := setup(b, database{"postgres", openPostgres}, offlinelock.Config{Table: table})
	sqlDB, err := db.DB()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	bare := "bare_" + randomHex(4)
	// The hand-written table has the same columns and indexes as ours: a
	// lock table needs them to release a session's locks and to sweep.
	if _, err := sqlDB.Exec(`CREATE TABLE ` + bare + ` (LIKE ` + table + ` INCLUDING ALL)`); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sqlDB.Exec(`DROP TABLE ` + bare) })
	bareAcquire := `INSERT INTO ` + bare + ` AS l VALUES ($1, $2, '', 'write', $3, 'martin', $4, 1, clock_timestamp(), clock_timestamp() + interval '30 minutes')
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET session = EXCLUDED.session, token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
WHERE l.session = EXCLUDED.session OR l.expires_at <= clock_timestamp() RETURNING expires_at`
	bareRelease := `DELETE FROM ` + bare + ` WHERE resource = $1 AND lock_id = $2 AND session = $3`
	sdb := as(db, martin)
	const keys = 64
	var ours, plain [2]time.Duration // acquire, release
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
			var exp time.Time
			t0 := time.Now()
			if err := sqlDB.QueryRowContext(ctx, bareAcquire, "customers", id, "M1", "0123456789abcdef0123456789abcdef").Scan(&exp); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := sqlDB.ExecContext(ctx, bareRelease, "customers", id, "M1"); err != nil {
				b.Fatal(err)
			}
			plain[0] += t1.Sub(t0)
			plain[1] += time.Since(t1)
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
	b.ReportMetric(float64(plain[0].Nanoseconds())/n, "ns/bare-acquire")
	b.ReportMetric(float64(ours[0])/float64(plain[0]), "acquire-x")
	b.ReportMetric(float64(ours[0]+ours[1])/float64(plain[0]+plain[1]), "acquire+release-x")
}
