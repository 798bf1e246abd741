package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// eachDSN runs fn with the example serving on SQLite, on PostgreSQL
// (OFFLINELOCK_POSTGRES_DSN) and on MySQL or MariaDB (OFFLINELOCK_MYSQL_DSN),
// each in a schema or database of its own: the root package's tests use the
// same table names at the same time. fn gets the example's base URL.
func eachDSN(t *testing.T, fn func(t *testing.T, base string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, start(t, "")) })
	t.Run("postgres", func(t *testing.T) {
		dsn := serverDSN(t, "OFFLINELOCK_POSTGRES_DSN", "PostgreSQL")
		db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		schema := fmt.Sprintf("orders_api_%d", os.Getpid())
		if err := db.Exec("CREATE SCHEMA " + schema).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP SCHEMA " + schema + " CASCADE") })
		fn(t, start(t, dsn+" search_path="+schema))
	})
	t.Run("mysql", func(t *testing.T) {
		dsn := serverDSN(t, "OFFLINELOCK_MYSQL_DSN", "MySQL or MariaDB")
		cfg, err := mysqldriver.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		cfg.DBName = fmt.Sprintf("%s_%d", "orders_api", os.Getpid())
		if err := db.Exec("CREATE DATABASE " + cfg.DBName).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP DATABASE " + cfg.DBName) })
		fn(t, start(t, cfg.FormatDSN()))
	})
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
