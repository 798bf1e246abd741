package plugin_test

// Helpers of the tests moved here from the library's module because they
// need what the library does not (OpenTelemetry's SDK): the two sessions,
// the databases, the models, the database clock, a pause between a
// write's check and its fence, and interleaved benchmark timing. They
// mirror the root package's helpers of the same names.

import (
	"context"
	"testing"
	"time"

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

// The models the plugin tests share are testkit's (models.go), as in
// the root package's tests.
type (
	// Account is locked exclusively by every load (exclusive_read).
	Account = testkit.Account
	// Doc is free to load; writes need a Write lock taken with Acquire.
	Doc = testkit.Doc
	// Team is not lockable; its members are.
	Team = testkit.Team
	// Member is locked on load, and joins its Desk, also locked on load.
	Member = testkit.Member
	// Desk is locked on load.
	Desk = testkit.Desk
	// Badge has a unique key besides its primary key.
	Badge = testkit.Badge
)

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

// setupModels is setup plus fresh tables for the test models
// (testkit.SetupModels).
func setupModels(t testing.TB, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	return testkit.SetupModels(t, d.open(t), cfg)
}

// seedAccounts creates accounts 1..n (testkit.SeedAccounts).
func seedAccounts(t testing.TB, db *gorm.DB, n int) { testkit.SeedAccounts(t, db, n) }

func waitPast(t testing.TB, db *gorm.DB, at time.Time) { testkit.WaitPast(t, db, at) }

type pauseKey = testkit.PauseKey

func pauseBetweenCheckAndCommit(t *testing.T, db *gorm.DB) { testkit.PauseBetweenCheckAndCommit(t, db) }

// eachBenchDB runs fn as a sub-benchmark on every database the tests use.
func eachBenchDB(b *testing.B, fn func(b *testing.B, d database)) {
	for _, d := range databases() {
		b.Run(d.name, func(b *testing.B) { fn(b, d) })
	}
}

func interleave(b *testing.B, name string, ours, theirs func(i int)) {
	b.Helper()
	testkit.Interleave(b, name, ours, theirs)
}

func reportAllocs(b *testing.B, ours, theirs func(i int), cleanup func()) {
	b.Helper()
	testkit.ReportAllocs(b, ours, theirs, cleanup)
}
