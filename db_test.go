package offlinelock_test

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// The tests run on SQLite always, on PostgreSQL when
// OFFLINELOCK_POSTGRES_DSN is set and on MySQL or MariaDB when
// OFFLINELOCK_MYSQL_DSN is set (e.g. root@tcp(127.0.0.1:3306)/test?parseTime=true).
// Under CI=true both are required: a missing DSN or an unreachable server
// fails the test instead of skipping.
const (
	postgresEnv = "OFFLINELOCK_POSTGRES_DSN"
	mysqlEnv    = "OFFLINELOCK_MYSQL_DSN"
)

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

func openSQLite(t testing.TB) *gorm.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(path)), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

func openPostgres(t testing.TB) *gorm.DB { return openServer(t, "postgres", "PostgreSQL", postgresEnv) }

func openMySQL(t testing.TB) *gorm.DB { return openServer(t, "mysql", "MySQL or MariaDB", mysqlEnv) }

// openServer opens the server database name from the DSN in env: skipped
// without it, failed under CI=true, failed when the server does not answer.
func openServer(t testing.TB, name, server, env string) *gorm.DB {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs %s: set %s", server, env)
		}
		t.Skipf("%s tests need %s", server, env)
	}
	db, err := gorm.Open(dialectorOf(name, dsn), &gorm.Config{Logger: logger.Discard})
	if err == nil {
		var sqlDB interface{ Ping() error }
		sqlDB, err = db.DB()
		if err == nil {
			err = sqlDB.Ping()
		}
	}
	if err != nil {
		t.Fatalf("%s at %s: %v", server, env, err)
	}
	sqlDB, _ := db.DB()
	sqlDB.SetMaxOpenConns(80)
	sqlDB.SetMaxIdleConns(80)
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// serverDatabases are the databases with a server process of their own,
// for the tests that kill processes and connections or run several
// processes: PostgreSQL and MySQL/MariaDB.
func serverDatabases() []database { return databases()[1:] }

// dsnOf is the DSN the tests use for a server database.
func dsnOf(name string) string {
	if name == "mysql" {
		return os.Getenv(mysqlEnv)
	}
	return os.Getenv(postgresEnv)
}

// dialectorOf opens dsn for a server database named name: worker
// processes open the database their parent test runs on.
func dialectorOf(name, dsn string) gorm.Dialector {
	if name == "mysql" {
		return mysql.Open(dsn)
	}
	return postgres.Open(dsn)
}

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
	if cfg.Table == "" {
		cfg.Table = "ol_" + randomHex(6)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := offlinelock.New(cfg)
	if err := db.Use(p); err != nil {
		t.Fatalf("Use: %v", err)
	}
	t.Cleanup(func() {
		p.RemoveGuard(db) // the application tables outlive the test's lock table
		if db.Dialector.Name() == "mysql" {
			db.Exec("DROP TABLE IF EXISTS `" + cfg.Table + "`, `" + cfg.Table + "_generation`, `" + cfg.Table + "_tables`, `" + cfg.Table + "_notes`")
			return
		}
		db.Exec(`DROP TABLE IF EXISTS "` + cfg.Table + `"`)
		db.Exec(`DROP TABLE IF EXISTS "` + cfg.Table + `_generation"`)
		db.Exec(`DROP TABLE IF EXISTS "` + cfg.Table + `_tables"`)
		db.Exec(`DROP TABLE IF EXISTS "` + cfg.Table + `_notes"`)
		db.Exec(`DROP SEQUENCE IF EXISTS "` + cfg.Table + `_generation"`)
	})
	return db, p
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

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
