package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// The tests run on SQLite always, on PostgreSQL with OFFLINELOCK_POSTGRES_DSN
// and on MySQL or MariaDB with OFFLINELOCK_MYSQL_DSN, as the root package's
// do (whose helpers are _test files, not importable). Under CI=true a
// missing DSN or an unreachable server fails instead of skipping.

// testDB is one database the command runs on: the DSN it is given, and
// the test's own connection.
type testDB struct {
	name, dsn string
	db        *gorm.DB
}

// eachDB runs fn as a subtest on every database.
func eachDB(t *testing.T, fn func(t *testing.T, d testDB)) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) { fn(t, openDB(t, name)) })
	}
}

func openDB(t *testing.T, name string) testDB {
	t.Helper()
	var dsn string
	var dial gorm.Dialector
	switch name {
	case "sqlite":
		dsn = filepath.Join(t.TempDir(), "locks.db")
		dial = sqlite.Open(offlinelock.SQLiteDSN(dsn))
	case "postgres":
		dsn = serverDSN(t, "OFFLINELOCK_POSTGRES_DSN")
		dial = postgres.Open(dsn)
	case "mysql":
		dsn = serverDSN(t, "OFFLINELOCK_MYSQL_DSN")
		dial = mysql.Open(dsn)
	}
	db, err := gorm.Open(dial, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err, "%s: the server must answer", name)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	t.Cleanup(func() { sqlDB.Close() })
	return testDB{name: name, dsn: dsn, db: db}
}

func serverDSN(t *testing.T, env string) string {
	dsn := os.Getenv(env)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs %s", env)
		}
		t.Skipf("set %s to run on this database", env)
	}
	return dsn
}

// lockTable registers a plugin on a lock table of the test's own, dropped
// when the test ends, and returns its name and the plugin.
func lockTable(t *testing.T, d testDB) (string, *offlinelock.Plugin) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	table := "cli_" + hex.EncodeToString(b)
	p := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, d.db.Use(p))
	t.Cleanup(func() {
		p.RemoveGuard(d.db)
		q, drop := `"`, "DROP TABLE IF EXISTS "
		if d.name == "mysql" {
			q = "`"
		}
		for _, name := range []string{table, table + "_generation", table + "_tables"} {
			d.db.Exec(drop + q + name + q)
		}
		if d.name == "postgres" {
			d.db.Exec(`DROP SEQUENCE IF EXISTS "` + table + `_generation"`)
		}
	})
	return table, p
}

// expire makes the record's lock rows expired on the database clock:
// expires_at goes back to acquired_at, which is past.
func expire(t *testing.T, d testDB, table, resource, id string) {
	t.Helper()
	q := `UPDATE "` + table + `" SET expires_at = acquired_at WHERE resource = ? AND lock_id = ?`
	if d.name == "mysql" {
		q = "UPDATE `" + table + "` SET expires_at = acquired_at WHERE resource = ? AND lock_id = ?"
	}
	require.NoError(t, d.db.Exec(q, resource, id).Error)
}

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// cmd runs the command in-process with args.
func cmd(args ...string) result {
	var out, errs bytes.Buffer
	code := run(context.Background(), args, &out, &errs)
	return result{code, out.String(), errs.String()}
}
