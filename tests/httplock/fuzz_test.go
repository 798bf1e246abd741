package httplock_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// FuzzHandlers sends any method, path, Lock-Token, principal and body to
// the lock, admin and application endpoints while usr_client_1 holds a
// lock: no request gets a 5xx or panics, and no response shows that lock's
// token to anyone but its holder presenting it.
func FuzzHandlers(f *testing.F) {
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(f.TempDir(), "fuzz.db"))), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		f.Fatal(err)
	}
	locks := offlinelock.New(offlinelock.Config{Logger: slog.New(slog.DiscardHandler)})
	if err := db.Use(locks); err != nil {
		f.Fatal(err)
	}
	if err := db.AutoMigrate(&Order{}); err != nil {
		f.Fatal(err)
	}
	db.WithContext(offlinelock.Bypass(context.Background(), "seed")).Create(&Order{ID: "ord_1", Status: "new"})
	srv, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: principal, Admin: onlyAdmin, Logger: slog.New(slog.DiscardHandler),
		Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, Exists: anyID}}})
	if err != nil {
		f.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.Register(mux)
	srv.RegisterAdmin(mux)
	mux.Handle("PATCH /orders/{id}", srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Status string }
		json.NewDecoder(r.Body).Decode(&in)
		if err := db.WithContext(r.Context()).Model(&Order{ID: r.PathValue("id")}).Update("status", in.Status).Error; err != nil {
			srv.WriteError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	hold := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/orders/ord_1/lock", strings.NewReader(`{"ttlSeconds": 900}`))
	req.Header.Set("Authorization", "Bearer usr_client_1")
	mux.ServeHTTP(hold, req)
	secret := hold.Header().Get("Lock-Token")
	if hold.Code != http.StatusCreated || secret == "" {
		f.Fatalf("setup lock: %d %s", hold.Code, hold.Body)
	}

	for _, seed := range []struct{ method, path, user, token, body string }{
		{"POST", "/orders/ord_1/lock", "usr_client_2", "", `{"ttlSeconds": 300}`},
		{"POST", "/orders/ord_1/lock", "usr_client_2", secret, `{}`},
		{"POST", "/orders/ord_1/unlock", "usr_client_2", secret, ""},
		{"GET", "/orders/ord_1/lock", "", "", ""},
		{"GET", "/orders/ord_1/lock/events", "usr_client_2", "", ""},
		{"PATCH", "/orders/ord_1", "usr_client_2", "", `{"Status": "x"}`},
		{"PATCH", "/orders/ord_1", "usr_client_1", "0123456789abcdef0123456789abcdef", `{"Status": "x"}`},
		{"GET", "/admin/locks?resource=orders&expired=maybe", "admin", "", ""},
		{"POST", "/admin/locks/orders/ord_1/release", "usr_client_2", "", `{"reason": "` + strings.Repeat("x", 2000) + `"}`},
		{"POST", "/orders/%00/lock", "u", "", `{"ttlSeconds": 1e309}`},
		{"DELETE", "/orders/ord_1/lock", "u", "lk", "\x00"},
		{"POST", "/orders/" + strings.Repeat("9", 300) + "/lock", "u'; DROP TABLE orders; --", "", `{"reason": "';--"}`},
	} {
		f.Add(seed.method, seed.path, seed.user, seed.token, seed.body)
	}
	f.Fuzz(func(t *testing.T, method, path, user, token, body string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		// A request of an event stream lasts as long as its context: a
		// short deadline ends it, where a fuzzed GET …/lock/events would
		// otherwise hold the fuzzing worker for good.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, "http://example.test"+path, strings.NewReader(body))
		if err != nil {
			t.Skip()
		}
		if user != "" {
			req.Header.Set("Authorization", "Bearer "+user)
		}
		if token != "" {
			req.Header.Set("Lock-Token", token)
		}
		if req.Header.Get("Authorization") != "" && strings.ContainsAny(user, "\r\n") {
			t.Skip()
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %q -> %d %s", method, path, w.Code, w.Body)
		}
		holder := user == "usr_client_1" && token == secret
		if !holder && (strings.Contains(w.Body.String(), secret) || strings.Contains(strings.Join(w.Header().Values("Lock-Token"), ""), secret)) {
			t.Fatalf("%s %q as %q showed usr_client_1's token", method, path, user)
		}
	})
}
