package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestMetrics checks GET /metrics: after a granted lock, a refused one and
// two writes the Middleware refused, the Prometheus exposition counts
// exactly those. The counts are the
// plugin's, tested on every database in the root package; this is the
// wiring, on SQLite.
func TestMetrics(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, l, "") }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	base := "http://" + l.Addr().String()
	get := func(method, path, user string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	if status, _ := get("POST", "/orders/ord_99182/lock", "usr_client_1"); status != 201 {
		t.Fatalf("lock: %d", status)
	}
	if status, _ := get("POST", "/orders/ord_99182/lock", "usr_client_2"); status != 423 {
		t.Fatalf("second lock: %d", status)
	}
	if status, _ := get("PATCH", "/orders/ord_99182", "usr_client_2"); status != 423 {
		t.Fatalf("another client's PATCH: %d", status)
	}
	if status, _ := get("PATCH", "/orders/ord_99182", ""); status != 401 {
		t.Fatalf("an anonymous PATCH: %d", status)
	}
	status, body := get("GET", "/metrics", "anyone")
	if status != 200 {
		t.Fatalf("metrics: %d", status)
	}
	for _, want := range []string{
		`offlinelock_lock_grants_total{access="write",db_system_name="sqlite",mode="explicit",resource="orders"} 1`,
		`offlinelock_lock_refusals_total{access="write",db_system_name="sqlite",mode="explicit",reason="locked",resource="orders"} 1`,
		`offlinelock_locks_live{db_system_name="sqlite",resource="orders"} 1`,
		// the Middleware's refusals, counted as the plugin's own are
		`offlinelock_lock_refusals_total{access="write",db_system_name="sqlite",mode="http",reason="locked",resource="orders"} 1`,
		`offlinelock_lock_refusals_total{access="write",db_system_name="sqlite",mode="http",reason="no_owner",resource="orders"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
