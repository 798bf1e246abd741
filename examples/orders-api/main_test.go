package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// eachDSN runs fn with the example serving on each database (eachDatabase);
// fn gets the example's base URL.
func eachDSN(t *testing.T, fn func(t *testing.T, base string)) {
	eachDatabase(t, func(t *testing.T, dsn string, _ func() *gorm.DB) { fn(t, start(t, dsn)) })
}

// eachDatabase runs fn with a DSN for the example on SQLite (""), on
// PostgreSQL (OFFLINELOCK_POSTGRES_DSN) and on MySQL or MariaDB
// (OFFLINELOCK_MYSQL_DSN), each in a schema or database of its own: the
// root package's tests use the same table names at the same time. open
// opens the database the example uses, for the test's own look at it.
func eachDatabase(t *testing.T, fn func(t *testing.T, dsn string, open func() *gorm.DB)) {
	t.Run("sqlite", func(t *testing.T) {
		// serve puts its SQLite file in a fresh directory under TMPDIR:
		// here, so that the test can find it.
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		fn(t, "", func() *gorm.DB {
			files, _ := filepath.Glob(filepath.Join(tmp, "offlinelock-orders-api*", "orders.db"))
			if len(files) != 1 {
				t.Fatalf("the example's SQLite file: %v", files)
			}
			return openGorm(t, sqlite.Open(offlinelock.SQLiteDSN(files[0])))
		})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := serverDSN(t, "OFFLINELOCK_POSTGRES_DSN", "PostgreSQL")
		db := openGorm(t, postgres.Open(dsn))
		schema := fmt.Sprintf("orders_api_%d", os.Getpid())
		if err := db.Exec("CREATE SCHEMA " + schema).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP SCHEMA " + schema + " CASCADE") })
		dsn += " search_path=" + schema
		fn(t, dsn, func() *gorm.DB { return openGorm(t, postgres.Open(dsn)) })
	})
	t.Run("mysql", func(t *testing.T) {
		dsn := serverDSN(t, "OFFLINELOCK_MYSQL_DSN", "MySQL or MariaDB")
		cfg, err := mysqldriver.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		db := openGorm(t, mysql.Open(dsn))
		cfg.DBName = fmt.Sprintf("orders_api_%d", os.Getpid())
		if err := db.Exec("CREATE DATABASE " + cfg.DBName).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP DATABASE " + cfg.DBName) })
		fn(t, cfg.FormatDSN(), func() *gorm.DB { return openGorm(t, mysql.Open(cfg.FormatDSN())) })
	})
}

// openGorm opens d for the test, closed when it ends.
func openGorm(t *testing.T, d gorm.Dialector) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// serverDSN is env's DSN: the test skips without it, and fails under CI=true.
func serverDSN(t *testing.T, env, server string) string {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs %s: set %s", server, env)
		}
		t.Skipf("set %s to run on %s", env, server)
	}
	return dsn
}

// start runs serve on a local listener until the test ends.
func start(t *testing.T, dsn string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, l, dsn) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + l.Addr().String()
}
