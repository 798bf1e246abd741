package httplock_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// ExTicket is a record clients lock over HTTP before they change it.
type ExTicket struct {
	ID     string `gorm:"primaryKey" lock:"exclusive_write"`
	Status string
}

// userFromRequest stands in for the application's authentication: the
// bearer token is the user's name.
func userFromRequest(r *http.Request) (string, error) {
	user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || user == "" {
		return "", errors.New("no bearer token")
	}
	return user, nil
}

// New serves the lock endpoints of a resource; Middleware lets the
// application's own handlers write under the caller's Lock-Token, checked by
// the plugin.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "httplock-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, "app.db"))), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		fmt.Println(err)
		return
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	locks := offlinelock.New(offlinelock.Config{})
	if err := db.Use(locks); err != nil {
		fmt.Println(err)
		return
	}
	if err := db.AutoMigrate(&ExTicket{}); err != nil {
		fmt.Println(err)
		return
	}
	seed := db.WithContext(offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: "setup"}))
	if err := seed.Create(&ExTicket{ID: "t1", Status: "open"}).Error; err != nil {
		fmt.Println(err)
		return
	}

	api, err := httplock.New(httplock.Config{Locks: locks, DB: db,
		Resources: []httplock.Resource{{Name: "tickets", Model: &ExTicket{}}},
		Principal: userFromRequest})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	api.Register(mux) // POST /tickets/{id}/lock, POST /tickets/{id}/unlock, GET /tickets/{id}/lock
	mux.Handle("PATCH /tickets/{id}", api.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The plugin checks the caller's lock on this write.
		t := ExTicket{ID: r.PathValue("id")}
		if err := db.WithContext(r.Context()).Model(&t).Update("status", "closed").Error; err != nil {
			api.WriteError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})))

	send := func(method, path, user, token string) *http.Response {
		req := httptest.NewRequest(method, path, nil)
		req.Header.Set("Authorization", "Bearer "+user)
		if token != "" {
			req.Header.Set(httplock.LockTokenHeader, token)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Result()
	}

	res := send("POST", "/tickets/t1/lock", "alice", "")
	token := res.Header.Get(httplock.LockTokenHeader)
	fmt.Println("alice locks:", res.StatusCode, "with a Lock-Token:", token != "")
	fmt.Println("bob locks:", send("POST", "/tickets/t1/lock", "bob", "").StatusCode)
	fmt.Println("bob writes without a token:", send("PATCH", "/tickets/t1", "bob", "").StatusCode)
	fmt.Println("bob writes with alice's token:", send("PATCH", "/tickets/t1", "bob", token).StatusCode)
	fmt.Println("alice writes with her token:", send("PATCH", "/tickets/t1", "alice", token).StatusCode)
	fmt.Println("alice unlocks:", send("POST", "/tickets/t1/unlock", "alice", token).StatusCode)
	fmt.Println("who holds it now:", send("GET", "/tickets/t1/lock", "bob", "").StatusCode)
	// Output:
	// alice locks: 201 with a Lock-Token: true
	// bob locks: 423
	// bob writes without a token: 423
	// bob writes with alice's token: 423
	// alice writes with her token: 204
	// alice unlocks: 204
	// who holds it now: 404
}
