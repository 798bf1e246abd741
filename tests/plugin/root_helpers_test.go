package plugin_test

// Helpers of the tests moved here from the library's folder because they
// use only its public API (issue 49): each mirrors the root package's
// helper of the same name, most of them through internal/testkit.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// Policy takes shared Read locks on load (read_write) that live 2 hours.
type Policy = testkit.Policy

// Customer is a model of testkit's, as in the root's tests.
type Customer = testkit.Customer

func openSQLite(t testing.TB) *gorm.DB { return testkit.OpenSQLite(t) }

func openPostgres(t testing.TB) *gorm.DB { return testkit.OpenPostgres(t) }

// serverDatabases are the databases with a server process of their own:
// PostgreSQL and MySQL/MariaDB.
func serverDatabases() []database { return databases()[1:] }

// dsnOf is the DSN the tests use for a server database.
func dsnOf(name string) string { return testkit.DSNOf(name) }

// dialectorOf opens dsn for a server database named name.
func dialectorOf(name, dsn string) gorm.Dialector { return testkit.DialectorOf(name, dsn) }

// setupOn is setup on a database already open.
func setupOn(t testing.TB, db *gorm.DB, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	return testkit.SetupOn(t, db, cfg)
}

func randomHex(n int) string { return testkit.RandomHex(n) }

// dbNow is the database's clock.
func dbNow(t testing.TB, db *gorm.DB) time.Time { return testkit.DBNow(t, db) }

// eachDBWithModels runs fn on every database with fresh model tables.
func eachDBWithModels(t *testing.T, cfg offlinelock.Config, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setupModels(t, d, cfg)
			fn(t, db, p)
		})
	}
}

// refusedByGuard says whether err is the guard's refusal of a write to
// the record (resource, id) martin holds (testkit.RefusedByGuard).
func refusedByGuard(err error, resource, id string) bool {
	return testkit.RefusedByGuard(err, resource, id)
}

// plainGORM is a second connection to db's database with no plugin
// registered (testkit.PlainGORM).
func plainGORM(t *testing.T, db *gorm.DB) *gorm.DB { return testkit.PlainGORM(t, db) }

// fcReset releases every lock martin and david hold.
func fcReset(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
	t.Helper()
	for _, o := range []offlinelock.Owner{martin, david} {
		_, err := p.ReleaseAll(db, o.Session)
		require.NoError(t, err)
	}
}

// fcDropCleanup drops tables now and when the test ends
// (testkit.DropCleanup).
func fcDropCleanup(t *testing.T, db *gorm.DB, tables ...any) {
	testkit.DropCleanup(t, db, tables...)
}

// openSQLiteLike opens the SQLite file db uses, with the plugin's
// recommended DSN and no plugin registered (testkit.OpenSQLiteLike).
func openSQLiteLike(b testing.TB, db *gorm.DB) *gorm.DB { return testkit.OpenSQLiteLike(b, db) }

// holderOf is the one lock held on target.
func holderOf(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, target any) offlinelock.Lock {
	t.Helper()
	h, err := p.Holders(db, target)
	require.NoError(t, err)
	require.Len(t, h, 1)
	return h[0]
}
