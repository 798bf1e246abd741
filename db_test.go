package offlinelock_test

import (
	"testing"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// The databases and their environment (testkit.PostgresEnv,
// testkit.MySQLEnv) are testkit's, shared with the tests module.

type database struct {
	name string
	open func(t testing.TB) *gorm.DB
}

func databases() []database {
	return []database{
		{"sqlite", openSQLite},
		{"postgres", openPostgres},
		{"mysql", openMySQL},
	}
}

func openSQLite(t testing.TB) *gorm.DB { return testkit.OpenSQLite(t) }

func openPostgres(t testing.TB) *gorm.DB { return testkit.OpenPostgres(t) }

func openMySQL(t testing.TB) *gorm.DB { return testkit.OpenMySQL(t) }

// serverDatabases are the databases with a server process of their own,
// for the tests that kill processes and connections or run several
// processes: PostgreSQL and MySQL/MariaDB.
func serverDatabases() []database { return databases()[1:] }

// dsnOf is the DSN the tests use for a server database.
func dsnOf(name string) string { return testkit.DSNOf(name) }

// dialectorOf opens dsn for a server database named name.
func dialectorOf(name, dsn string) gorm.Dialector { return testkit.DialectorOf(name, dsn) }

// setup opens the database, registers a plugin on a lock table of its own
// (so tests never see each other's locks), and creates the test models.
func setup(t testing.TB, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	return setupOn(t, d.open(t), cfg)
}

// setupOn is setup on a database already open (with other plugins
// registered first, say).
func setupOn(t testing.TB, db *gorm.DB, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	return testkit.SetupOn(t, db, cfg)
}

// eachDB runs fn as a subtest on every database.
func eachDB(t *testing.T, cfg offlinelock.Config, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, cfg)
			fn(t, db, p)
		})
	}
}

func randomHex(n int) string { return testkit.RandomHex(n) }
