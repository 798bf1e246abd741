package testkit

import (
	"runtime"
	"testing"
	"time"

	"gorm.io/gorm"
)

// Interleave runs ours and theirs alternately b.N times, timing each, and
// reports both and their ratio under name. Time a function spends between
// b.StopTimer and b.StartTimer (cleanup) is left out of both.
func Interleave(b *testing.B, name string, ours, theirs func(i int)) {
	b.Helper()
	var tOurs, tTheirs time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run := func(f func(int), acc *time.Duration) {
			before := b.Elapsed()
			f(i)
			*acc += b.Elapsed() - before
		}
		if i%2 == 0 {
			run(ours, &tOurs)
			run(theirs, &tTheirs)
		} else {
			run(theirs, &tTheirs)
			run(ours, &tOurs)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(tOurs.Nanoseconds())/n, "ns/ours")
	b.ReportMetric(float64(tTheirs.Nanoseconds())/n, "ns/theirs")
	b.ReportMetric(float64(tOurs)/float64(tTheirs), name)
}

// ReportAllocs reports the heap allocations of one call of ours and of
// theirs as allocs/ours and allocs/theirs, counted apart from the timed
// loop (the counts need the world stopped around each call); between runs
// each calls its own cleanup, uncounted. Call it after Interleave, whose
// ResetTimer drops the metrics reported before it.
func ReportAllocs(b *testing.B, ours, theirs func(i int), cleanup func()) {
	b.Helper()
	count := func(f func(int)) float64 {
		var total uint64
		const runs = 50
		for i := 0; i < runs; i++ {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f(i)
			runtime.ReadMemStats(&after)
			total += after.Mallocs - before.Mallocs
			if cleanup != nil {
				cleanup()
			}
		}
		return float64(total) / runs
	}
	b.ReportMetric(count(ours), "allocs/ours")
	b.ReportMetric(count(theirs), "allocs/theirs")
}

// DBNow reads the database clock, the one lock expiry is judged by.
func DBNow(t testing.TB, db *gorm.DB) time.Time {
	t.Helper()
	var s string
	q := `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')`
	switch db.Dialector.Name() {
	case "sqlite":
		q = `SELECT strftime('%Y-%m-%d %H:%M:%f','now')`
	case "mysql":
		q = `SELECT LEFT(DATE_FORMAT(UTC_TIMESTAMP(3), '%Y-%m-%d %H:%i:%s.%f'), 23)`
	}
	if err := db.Raw(q).Scan(&s).Error; err != nil {
		t.Fatalf("reading the database clock: %v", err)
	}
	now, err := time.ParseInLocation("2006-01-02 15:04:05.000", s, time.UTC)
	if err != nil {
		t.Fatalf("parsing the database clock %q: %v", s, err)
	}
	return now
}

// WaitPast waits until the database clock has passed at. Expiry is judged
// by that clock, so this is waiting for time itself, not for another
// goroutine.
func WaitPast(t testing.TB, db *gorm.DB, at time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !DBNow(t, db).After(at) {
		if time.Now().After(deadline) {
			t.Fatalf("database clock never passed %v", at)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// PauseKey carries, in a statement's context, a function (func() or
// func(*gorm.DB)) that PauseBetweenCheckAndCommit's callbacks call
// between the plugin's check of a write and its fence.
type PauseKey struct{}

// PauseBetweenCheckAndCommit registers callbacks on db that call the
// statement's PauseKey function after GORM's write and before the
// plugin's fence, on creates, updates and deletes.
func PauseBetweenCheckAndCommit(t *testing.T, db *gorm.DB) {
	t.Helper()
	pause := func(db *gorm.DB) {
		switch f := db.Statement.Context.Value(PauseKey{}).(type) {
		case func():
			f()
		case func(*gorm.DB):
			f(db)
		}
	}
	cb := db.Callback()
	for _, err := range []error{
		cb.Update().After("gorm:update").Before("offlinelock:fence_update").Register("test:pause_update", pause),
		cb.Delete().After("gorm:delete").Before("offlinelock:fence_delete").Register("test:pause_delete", pause),
		cb.Create().After("gorm:create").Before("offlinelock:fence_create").Register("test:pause_create", pause),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}
