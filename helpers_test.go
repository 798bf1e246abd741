package offlinelock_test

// Helpers shared by the test files: the two sessions and their contexts,
// the database clock, a statement counter and a pause between a write's
// check and its fence.

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

func withTTL(db *gorm.DB, o offlinelock.Owner, ttl time.Duration) *gorm.DB {
	return db.WithContext(offlinelock.WithTTL(offlinelock.WithOwner(context.Background(), o), ttl))
}

// dbNow reads the database clock, the one lock expiry is judged by.
func dbNow(t testing.TB, db *gorm.DB) time.Time { return testkit.DBNow(t, db) }

// waitPast waits until the database clock has passed at.
func waitPast(t testing.TB, db *gorm.DB, at time.Time) { testkit.WaitPast(t, db, at) }

// counter is a GORM logger that counts statements (testkit.Counter).
type counter = testkit.Counter

// pauseKey carries a function the test callback calls between the plugin's
// check and its fence (testkit.PauseBetweenCheckAndCommit).
type pauseKey = testkit.PauseKey

func pauseBetweenCheckAndCommit(t *testing.T, db *gorm.DB) { testkit.PauseBetweenCheckAndCommit(t, db) }

// fcDropCleanup drops tables at the end of the test.
func fcDropCleanup(t *testing.T, db *gorm.DB, tables ...any) { testkit.DropCleanup(t, db, tables...) }

// Roles, the guard's models and setups and the lock table's raw rows are
// testkit's (roles.go, models_guard.go, locktable.go), shared with
// tests/plugin.

// GdSub is a member two levels down: its root is its line's order.
type GdSub = testkit.GdSub

// pgRole creates a login role with the grants given and opens GORM as it
// (testkit.PGRole).
func pgRole(t testing.TB, db *gorm.DB, grants ...string) (string, *gorm.DB) {
	return testkit.PGRole(t, db, grants...)
}

// gdSubSetup is gdSetup with GdSub in the catalog, sub 1 under the held
// order's line 1 and sub 2 under the free order's line 2.
func gdSubSetup(t *testing.T) (*gorm.DB, *offlinelock.Plugin, string) {
	return testkit.GdSubSetup(t, openPostgres(t))
}

type FtAcct struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name string
}

// lockRows reads every row of the lock table, raw.
func lockRows(t *testing.T, db *gorm.DB, table string) []testkit.LockRow {
	return testkit.LockRows(t, db, table)
}
