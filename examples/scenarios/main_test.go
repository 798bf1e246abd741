package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// The demonstration is the README's first command, so its output is checked
// here on SQLite, and on PostgreSQL (in a schema of its own) when
// OFFLINELOCK_POSTGRES_DSN is set.
func TestScenarios(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { checkOutput(t, "") })
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("OFFLINELOCK_POSTGRES_DSN")
		if dsn == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true needs PostgreSQL: set OFFLINELOCK_POSTGRES_DSN")
			}
			t.Skip("set OFFLINELOCK_POSTGRES_DSN to run on PostgreSQL")
		}
		db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		schema := fmt.Sprintf("scenarios_%d", os.Getpid())
		if err := db.Exec("CREATE SCHEMA " + schema).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP SCHEMA " + schema + " CASCADE") })
		checkOutput(t, dsn+" search_path="+schema)
	})
	t.Run("mysql", func(t *testing.T) {
		dsn := os.Getenv("OFFLINELOCK_MYSQL_DSN")
		if dsn == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true needs MySQL or MariaDB: set OFFLINELOCK_MYSQL_DSN")
			}
			t.Skip("set OFFLINELOCK_MYSQL_DSN to run on MySQL or MariaDB")
		}
		// A database of its own: the root package's tests use the same
		// table names in the DSN's database at the same time.
		cfg, err := mysqldriver.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		cfg.DBName = fmt.Sprintf("%s_%d", "scenarios", os.Getpid())
		if err := db.Exec("CREATE DATABASE " + cfg.DBName).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP DATABASE " + cfg.DBName) })
		checkOutput(t, cfg.FormatDSN())
	})
}

func checkOutput(t *testing.T, dsn string) {
	var out bytes.Buffer
	if err := run(&out, dsn); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`david:  reloads: Acme Group, credit 5000. His change is lost`,
		// The expiry carries its date when it falls on the next day.
		`david:  tries to open it: refused at once: customers 129 is locked by martin since \d\d:\d\d:\d\d until (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \(UTC\)`,
		`david:  saves anyway, through a code path that forgot the lock: refused by the plugin`,
		`david:  opens it again: lock granted, generation \d+; he sees "Acme Group"`,
		`david:  opens it: lock granted, generation (\d+) > (\d+), a new token`,
		`martin: comes back and saves: refused: customers 129 is locked by david`,
		`david:  logs out: 1 lock released`,
		`martin: opens policy 129 to read: READ lock granted by the load itself`,
		`david:  wants to edit: WRITE refused while Martin reads: policies 129 is locked by martin`,
		`david:  asks again: WRITE granted \(upgraded from READ\), access write`,
		`martin: opens it again: READ refused while David writes: policies 129 is locked by david`,
		`david:  opens address 301 for editing: refused, the address is part of customer 129: customers 129 is locked by martin`,
		`david:  moves the address to Seattle anyway: refused by the plugin`,
		`martin: updates address 301 under his one lock on customers 129`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
