// Package testkit is what the library's tests share across the modules of
// this repository: the databases they run on, the sessions they run as,
// and the models several test packages use. The root package's tests
// reach it through their own short names (db_test.go, helpers_test.go,
// models_test.go); the tests module (tests/plugin), which holds the tests
// that need more than the library requires, imports it directly.
//
// The tests run on SQLite always, on PostgreSQL when
// OFFLINELOCK_POSTGRES_DSN is set and on MySQL or MariaDB when
// OFFLINELOCK_MYSQL_DSN is set (e.g. root@tcp(127.0.0.1:3306)/test?parseTime=true).
// Under CI=true both are required: a missing DSN or an unreachable server
// fails the test instead of skipping.
package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// The environment variables that name the server databases.
const (
	PostgresEnv = "OFFLINELOCK_POSTGRES_DSN"
	MySQLEnv    = "OFFLINELOCK_MYSQL_DSN"
)

// The sessions the tests run as.
var (
	Martin = offlinelock.Owner{Session: "M1", User: "martin"}
	David  = offlinelock.Owner{Session: "D1", User: "david"}
	Boss   = offlinelock.Owner{Session: "B1", User: "boss"}
)

// Database is one database the tests run on.
type Database struct {
	Name string
	Open func(t testing.TB) *gorm.DB
}

// Databases are SQLite, PostgreSQL and MySQL/MariaDB.
func Databases() []Database {
	return []Database{{"sqlite", OpenSQLite}, {"postgres", OpenPostgres}, {"mysql", OpenMySQL}}
}

// OpenSQLite opens a SQLite file of the test's own.
func OpenSQLite(t testing.TB) *gorm.DB {
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

// OpenPostgres opens the PostgreSQL database PostgresEnv names.
func OpenPostgres(t testing.TB) *gorm.DB { return openServer(t, "postgres", "PostgreSQL", PostgresEnv) }

// OpenMySQL opens the MySQL or MariaDB database MySQLEnv names.
func OpenMySQL(t testing.TB) *gorm.DB { return openServer(t, "mysql", "MySQL or MariaDB", MySQLEnv) }

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
	db, err := gorm.Open(DialectorOf(name, dsn), &gorm.Config{Logger: logger.Discard})
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

// DSNOf is the DSN the tests use for a server database.
func DSNOf(name string) string {
	if name == "mysql" {
		return os.Getenv(MySQLEnv)
	}
	return os.Getenv(PostgresEnv)
}

// DialectorOf opens dsn for a server database named name: worker
// processes open the database their parent test runs on.
func DialectorOf(name, dsn string) gorm.Dialector {
	if name == "mysql" {
		return mysql.Open(dsn)
	}
	return postgres.Open(dsn)
}

// SetupOn registers a plugin on db with a lock table of its own (so
// tests never see each other's locks), removed after the test.
func SetupOn(t testing.TB, db *gorm.DB, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	if cfg.Table == "" {
		cfg.Table = "ol_" + RandomHex(6)
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
		for _, suffix := range []string{"", "_generation", "_tables", "_notes"} {
			db.Exec(`DROP TABLE IF EXISTS "` + cfg.Table + suffix + `"`)
		}
		db.Exec(`DROP SEQUENCE IF EXISTS "` + cfg.Table + `_generation"`)
	})
	return db, p
}

// DropCleanup drops tables now and again when the test ends.
func DropCleanup(t testing.TB, db *gorm.DB, tables ...any) {
	t.Helper()
	if err := db.Migrator().DropTable(tables...); err != nil {
		t.Fatalf("drop tables: %v", err)
	}
	t.Cleanup(func() { db.Migrator().DropTable(tables...) })
}

// RandomHex is n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// As is db in o's session.
func As(db *gorm.DB, o offlinelock.Owner) *gorm.DB {
	return db.WithContext(offlinelock.WithOwner(context.Background(), o))
}

// Admin is db for test setup: it runs under Bypass. Under the database
// guard a Bypass no longer writes records other sessions hold, so setup
// writes as Martin, the usual holder.
func Admin(db *gorm.DB) *gorm.DB {
	return db.WithContext(offlinelock.Bypass(offlinelock.WithOwner(context.Background(), Martin), "test setup"))
}

// OnlyBossTakesOver is a Config.Authorize that lets Boss take over and
// refuses everything else.
func OnlyBossTakesOver(ctx context.Context, action string, _ offlinelock.Lock) error {
	if o, _ := offlinelock.OwnerFrom(ctx); action == "take_over" && o.User == "boss" {
		return nil
	}
	return errors.New("only boss takes over")
}

// Next is the next event of ch, within a bound far above the watch
// interval.
func Next(t testing.TB, ch <-chan offlinelock.Event) offlinelock.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the watch ended")
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5 s")
		return offlinelock.Event{}
	}
}
