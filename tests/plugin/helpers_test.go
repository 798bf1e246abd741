package plugin_test

// Helpers of the tests moved here from the library's module because they
// need what the library does not (OpenTelemetry's SDK): the two sessions,
// the databases, the models, the database clock, a pause between a
// write's check and its fence, and interleaved benchmark timing. They
// mirror the root package's helpers of the same names.

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

var (
	martin = testkit.Martin
	david  = testkit.David
)

func as(db *gorm.DB, o offlinelock.Owner) *gorm.DB { return testkit.As(db, o) }

// admin is the context for test setup (testkit.Admin).
func admin(db *gorm.DB) *gorm.DB { return testkit.Admin(db) }

func withTTL(db *gorm.DB, o offlinelock.Owner, ttl time.Duration) *gorm.DB {
	return db.WithContext(offlinelock.WithTTL(offlinelock.WithOwner(context.Background(), o), ttl))
}

// Account is locked exclusively by every load (exclusive_read).
type Account struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name   string
	Credit int
}

// Doc is free to load; writes need a Write lock taken with Acquire.
type Doc = testkit.Doc

var allModels = []any{&Account{}, &Doc{}}

type database struct {
	name string
	open func(t testing.TB) *gorm.DB
}

func databases() []database {
	var out []database
	for _, d := range testkit.Databases() {
		out = append(out, database{d.Name, d.Open})
	}
	return out
}

// setup opens the database and registers a plugin on a lock table of its
// own.
func setup(t testing.TB, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	return testkit.SetupOn(t, d.open(t), cfg)
}

// setupModels is setup plus fresh tables for the test models.
func setupModels(t testing.TB, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	db, p := setup(t, d, cfg)
	require.NoError(t, db.Migrator().DropTable(allModels...))
	require.NoError(t, db.AutoMigrate(allModels...))
	t.Cleanup(func() { db.Migrator().DropTable(allModels...) })
	return db, p
}

func seedAccounts(t testing.TB, db *gorm.DB, n int) {
	t.Helper()
	rows := make([]Account, n)
	for i := range rows {
		rows[i] = Account{ID: uint(i + 1), Name: "acct", Credit: 100}
	}
	require.NoError(t, admin(db).CreateInBatches(rows, 200).Error)
}

// dbNow reads the database clock, the one lock expiry is judged by.
func dbNow(t testing.TB, db *gorm.DB) time.Time {
	t.Helper()
	var s string
	q := `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')`
	switch db.Dialector.Name() {
	case "sqlite":
		q = `SELECT strftime('%Y-%m-%d %H:%M:%f','now')`
	case "mysql":
		q = `SELECT LEFT(DATE_FORMAT(UTC_TIMESTAMP(3), '%Y-%m-%d %H:%i:%s.%f'), 23)`
	}
	require.NoError(t, db.Raw(q).Scan(&s).Error)
	now, err := time.ParseInLocation("2006-01-02 15:04:05.000", s, time.UTC)
	require.NoError(t, err)
	return now
}

// waitPast waits until the database clock has passed t. Expiry is judged by
// that clock, so this is waiting for time itself, not for another goroutine.
func waitPast(t testing.TB, db *gorm.DB, at time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !dbNow(t, db).After(at) {
		if time.Now().After(deadline) {
			t.Fatalf("database clock never passed %v", at)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pauseKey carries a function the test callback calls between the plugin's
// check and its fence.
type pauseKey struct{}

func pauseBetweenCheckAndCommit(t *testing.T, db *gorm.DB) {
	t.Helper()
	pause := func(db *gorm.DB) {
		switch f := db.Statement.Context.Value(pauseKey{}).(type) {
		case func():
			f()
		case func(*gorm.DB):
			f(db)
		}
	}
	cb := db.Callback()
	require.NoError(t, cb.Update().After("gorm:update").Before("offlinelock:fence_update").Register("test:pause_update", pause))
	require.NoError(t, cb.Delete().After("gorm:delete").Before("offlinelock:fence_delete").Register("test:pause_delete", pause))
	require.NoError(t, cb.Create().After("gorm:create").Before("offlinelock:fence_create").Register("test:pause_create", pause))
}

// eachBenchDB runs fn as a sub-benchmark on every database the tests use.
func eachBenchDB(b *testing.B, fn func(b *testing.B, d database)) {
	for _, d := range databases() {
		b.Run(d.name, func(b *testing.B) { fn(b, d) })
	}
}

// interleave runs ours and theirs alternately b.N times, timing each, and
// reports both and their ratio under name. Time a function spends between
// b.StopTimer and b.StartTimer (cleanup) is left out of both.
func interleave(b *testing.B, name string, ours, theirs func(i int)) {
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

// reportAllocs reports the heap allocations of one call of ours and of
// theirs as allocs/ours and allocs/theirs, counted apart from the timed
// loop; between runs each calls its own cleanup, uncounted. Call it after
// interleave, whose ResetTimer drops the metrics reported before it.
func reportAllocs(b *testing.B, ours, theirs func(i int), cleanup func()) {
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
