// Command quickstart is the README's Quick start as a whole program: one
// customer, one session that edits it, another refused meanwhile.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

type Customer struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name string
}

func main() {
	dir, err := os.MkdirTemp("", "offlinelock-quickstart-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The recommended SQLite DSN: WAL, a busy timeout, immediate transactions.
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, "app.db"))), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		log.Fatal(err)
	}
	if err := run(context.Background(), db); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, db *gorm.DB) error {
	locks := offlinelock.New(offlinelock.Config{TTL: 30 * time.Minute})
	if err := db.Use(locks); err != nil { // creates the lock table, registers the callbacks
		return err
	}
	if err := db.AutoMigrate(&Customer{}); err != nil {
		return err
	}
	// Per request: the session that owns the locks, and the name others see.
	// The session is an opaque id of the login, never the cookie's value.
	sessionID := "s-7f3a"
	tx := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: sessionID, User: "martin"}))
	if err := tx.Create(&Customer{ID: 129, Name: "Acme"}).Error; err != nil { // a new row needs no lock, but an owner
		return err
	}

	// The edit starts. If another session holds it: ErrLocked, at once,
	// "customers 129 is locked by david since 10:00:05 until 10:30:05 (UTC)".
	c := Customer{ID: 129}
	if _, err := locks.Acquire(tx, &c, offlinelock.Write); err != nil {
		return err
	}
	tx.First(&c)

	// Meanwhile David's save is refused.
	david := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: "s-19bc", User: "david"}))
	derr := david.Save(&Customer{ID: 129, Name: "Acme Inc"}).Error
	var le *offlinelock.LockedError
	if !errors.As(derr, &le) {
		return fmt.Errorf("david's save: want ErrLocked, got %v", derr)
	}
	fmt.Println("david:", le)

	c.Name = "Acme Group"
	err := tx.Transaction(func(tx *gorm.DB) error { // save and release in one transaction
		if err := tx.Save(&c).Error; err != nil { // refused unless the session still holds the lock
			return err
		}
		return locks.Release(tx, &c)
	})
	if err != nil {
		return err
	}
	fmt.Println("martin saved:", c.Name)
	return nil
}
