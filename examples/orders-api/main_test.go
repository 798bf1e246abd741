package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// TestCurlSession plays httplock/README.md's curl session against the running
// example: acquire, update, refused for a second client, unlock.
func TestCurlSession(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { curlSession(t, "") })
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
		schema := fmt.Sprintf("orders_api_%d", os.Getpid())
		if err := db.Exec("CREATE SCHEMA " + schema).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP SCHEMA " + schema + " CASCADE") })
		curlSession(t, dsn+" search_path="+schema)
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
		cfg.DBName = fmt.Sprintf("%s_%d", "orders_api", os.Getpid())
		if err := db.Exec("CREATE DATABASE " + cfg.DBName).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP DATABASE " + cfg.DBName) })
		curlSession(t, cfg.FormatDSN())
	})
}

func curlSession(t *testing.T, dsn string) {
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
	base := "http://" + l.Addr().String()
	call := func(method, path, user, token, body string) (int, http.Header, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+user)
		if token != "" {
			req.Header.Set("Lock-Token", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(raw, &m)
		return resp.StatusCode, resp.Header, m
	}

	status, h, body := call("POST", "/orders/ord_99182/lock", "usr_client_1", "", `{"ttlSeconds": 300, "reason": "Seat reservation checkout"}`)
	token := h.Get("Lock-Token")
	if status != 201 || token == "" || body["lockedBy"] != "usr_client_1" {
		t.Fatalf("acquire: %d %v", status, body)
	}
	if status, _, body = call("PATCH", "/orders/ord_99182", "usr_client_1", token, `{"seat": "15A"}`); status != 200 || body["seat"] != "15A" {
		t.Fatalf("owner's update: %d %v", status, body)
	}
	status, h, body = call("PATCH", "/orders/ord_99182", "usr_client_2", "", `{"seat": "1A"}`)
	if status != 423 || h.Get("Content-Type") != "application/problem+json" || !strings.Contains(fmt.Sprint(body["detail"]), "locked by usr_client_1") {
		t.Fatalf("second client: %d %v", status, body)
	}
	if status, _, body = call("POST", "/orders/ord_99182/lock", "usr_client_2", "", `{}`); status != 423 || body["lockedBy"] != "usr_client_1" {
		t.Fatalf("second client's lock: %d %v", status, body)
	}
	if status, _, _ = call("POST", "/orders/ord_99182/unlock", "usr_client_1", token, ""); status != 204 {
		t.Fatalf("unlock: %d", status)
	}
	if status, _, body = call("GET", "/orders/ord_99182", "usr_client_2", "", ""); status != 200 || body["seat"] != "15A" {
		t.Fatalf("read after: %d %v", status, body)
	}
}
