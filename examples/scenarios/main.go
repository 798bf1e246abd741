// Command scenarios plays the situations of Martin and David from the
// Pessimistic Offline Lock walk-through against the real plugin, and prints
// what each of them sees, step by step.
//
//	go run ./examples/scenarios                 # on an embedded SQLite file
//	go run ./examples/scenarios -dsn 'host=127.0.0.1 user=postgres dbname=test'
//	go run ./examples/scenarios -dsn 'root@tcp(127.0.0.1:3306)/test?parseTime=true'
//
// With -dsn it creates (and empties) the tables customers and offline_locks
// in that PostgreSQL, MySQL or MariaDB database: point it at a scratch
// database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// CustomerForm is customer 129 as a plain GORM model, without a lock tag,
// on a database without the plugin: what an application has before
// offlinelock. (With the plugin registered, this struct is the lockable
// customers table too: lockability belongs to the table.)
type CustomerForm struct {
	ID     uint `gorm:"primaryKey"`
	Name   string
	Credit int
}

func (CustomerForm) TableName() string { return "customers" }

// Customer is the same table, tagged: a write needs the session's Write
// lock. It is the root of an aggregate with its addresses.
type Customer struct {
	ID        uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name      string
	Credit    int
	Addresses []Address
}

// Address is a member of its customer's aggregate: its lock is the
// customer's.
type Address struct {
	ID         uint `gorm:"primaryKey"`
	CustomerID uint `lock:"root"`
	City       string
}

// Policy takes a shared Read lock on every load (read_write).
type Policy struct {
	ID     uint `gorm:"primaryKey" lock:"read_write"`
	Holder string
}

func main() {
	dsn := flag.String("dsn", "", "PostgreSQL or MySQL/MariaDB DSN of a scratch database; default: an embedded SQLite file")
	flag.Parse()
	if err := run(os.Stdout, *dsn); err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, dsn string) error {
	db, cleanup, err := open(dsn)
	if err != nil {
		return err
	}
	defer cleanup()
	// The same database without the plugin: the application before
	// offlinelock, for the first scene.
	plain, err := gorm.Open(db.Dialector, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return err
	}
	// Warnings only: every Bypass (the demo's data setup) is logged at Info.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	locks := offlinelock.New(offlinelock.Config{TTL: 30 * time.Minute, Logger: quiet})
	if err := db.Use(locks); err != nil {
		return err
	}
	s := &stage{w: w, db: db, plain: plain, locks: locks}
	for _, scene := range []func() error{s.lostUpdate, s.lockRefused, s.abandonedSession, s.readWrite, s.coarseGrained} {
		if err := s.reset(); err != nil {
			return err
		}
		if err := scene(); err != nil {
			return err
		}
	}
	return nil
}

func open(dsn string) (*gorm.DB, func(), error) {
	cfg := &gorm.Config{Logger: logger.Discard}
	if dsn != "" {
		db, err := gorm.Open(dialector(dsn), cfg)
		return db, func() {}, err
	}
	dir, err := os.MkdirTemp("", "offlinelock-scenarios")
	if err != nil {
		return nil, nil, err
	}
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, "scenarios.db"))), cfg)
	return db, func() { os.RemoveAll(dir) }, err
}

// stage holds the database and the two users' sessions.
type stage struct {
	w     io.Writer
	db    *gorm.DB
	plain *gorm.DB // the same database without the plugin
	locks *offlinelock.Plugin
}

var (
	martin = offlinelock.Owner{Session: "M1", User: "martin"}
	david  = offlinelock.Owner{Session: "D1", User: "david"}
)

// as is the database handle of one request of one user.
func (s *stage) as(o offlinelock.Owner) *gorm.DB {
	return s.db.WithContext(offlinelock.WithOwner(context.Background(), o))
}

// plainAs is as, on the database without the plugin.
func (s *stage) plainAs(o offlinelock.Owner) *gorm.DB {
	return s.plain.WithContext(offlinelock.WithOwner(context.Background(), o))
}

func (s *stage) say(who, format string, args ...any) {
	fmt.Fprintf(s.w, "  %-7s %s\n", who+":", fmt.Sprintf(format, args...))
}

func (s *stage) title(t string) { fmt.Fprintf(s.w, "\n== %s ==\n", t) }

func (s *stage) reset() error {
	models := []any{&Customer{}, &Address{}, &Policy{}}
	if err := s.db.Migrator().DropTable(models...); err != nil {
		return err
	}
	if err := s.db.AutoMigrate(models...); err != nil {
		return err
	}
	for _, o := range []offlinelock.Owner{martin, david} {
		if _, err := s.locks.ReleaseAll(s.db, o.Session); err != nil {
			return err
		}
	}
	seed := s.db.WithContext(offlinelock.Bypass(context.Background(), "demo data"))
	if err := seed.Create(&Customer{ID: 129, Name: "Acme Ltd", Credit: 5000, Addresses: []Address{{ID: 301, City: "Portland, Oregon"}}}).Error; err != nil {
		return err
	}
	return seed.Create(&Policy{ID: 129, Holder: "Acme Ltd"}).Error
}

// 1. Without a lock, the later save silently overwrites the earlier one.
func (s *stage) lostUpdate() error {
	s.title("1. Lost update: no lock")
	var m, d CustomerForm
	if err := s.plainAs(martin).First(&m, 129).Error; err != nil {
		return err
	}
	s.say("martin", "opens customer 129: %s, credit %d", m.Name, m.Credit)
	if err := s.plainAs(david).First(&d, 129).Error; err != nil {
		return err
	}
	s.say("david", "opens customer 129: %s, credit %d", d.Name, d.Credit)
	d.Credit = 8000
	if err := s.plainAs(david).Save(&d).Error; err != nil {
		return err
	}
	s.say("david", "raises the credit to 8000 and saves")
	m.Name = "Acme Group"
	if err := s.plainAs(martin).Save(&m).Error; err != nil {
		return err
	}
	s.say("martin", "renames it to Acme Group and saves; his form still says credit 5000")
	var now CustomerForm
	if err := s.plainAs(david).First(&now, 129).Error; err != nil {
		return err
	}
	s.say("david", "reloads: %s, credit %d. His change is lost, and nobody was told.", now.Name, now.Credit)
	return nil
}

// 2. With a lock, David learns at once, before doing any work; and a save
// without the lock is refused by the plugin, whatever the handler forgot.
func (s *stage) lockRefused() error {
	s.title("2. Pessimistic Offline Lock: lock refused")
	c := &Customer{ID: 129}
	l, err := s.locks.Acquire(s.as(martin), c, offlinelock.Write)
	if err != nil {
		return err
	}
	s.say("martin", "opens customer 129 for editing: lock granted, generation %d, until %s UTC", l.Generation, l.ExpiresAt.Format("15:04:05"))
	_, err = s.locks.Acquire(s.as(david), c, offlinelock.Write)
	if !errors.Is(err, offlinelock.ErrLocked) {
		return fmt.Errorf("david should have been refused, got %v", err)
	}
	s.say("david", "tries to open it: refused at once: %v", err)
	err = s.as(david).Model(c).Update("credit", 8000).Error
	if !errors.Is(err, offlinelock.ErrLocked) {
		return fmt.Errorf("david's save should have been refused, got %v", err)
	}
	s.say("david", "saves anyway, through a code path that forgot the lock: refused by the plugin")
	err = s.as(martin).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(c).Update("name", "Acme Group").Error; err != nil {
			return err
		}
		return s.locks.Release(tx, c) // the release commits with the save
	})
	if err != nil {
		return err
	}
	s.say("martin", "saves the new name; the lock is released in the same transaction")
	l, err = s.locks.Acquire(s.as(david), c, offlinelock.Write)
	if err != nil {
		return err
	}
	var now Customer
	if err := s.as(david).First(&now, 129).Error; err != nil {
		return err
	}
	s.say("david", "opens it again: lock granted, generation %d; he sees %q", l.Generation, now.Name)
	return s.locks.Release(s.as(david), c)
}

// 3. An abandoned session's lock expires, and the other user gets it.
func (s *stage) abandonedSession() error {
	s.title("3. Abandoned session: the lock times out")
	c := &Customer{ID: 129}
	ttl := 1500 * time.Millisecond
	short := s.db.WithContext(offlinelock.WithTTL(offlinelock.WithOwner(context.Background(), martin), ttl))
	l, err := s.locks.Acquire(short, c, offlinelock.Write)
	if err != nil {
		return err
	}
	s.say("martin", "opens customer 129 (a lock of %v, standing in for 30 minutes) and closes his laptop", ttl)
	_, err = s.locks.Acquire(s.as(david), c, offlinelock.Write)
	if !errors.Is(err, offlinelock.ErrLocked) {
		return fmt.Errorf("david should have been refused, got %v", err)
	}
	s.say("david", "is refused: %v", err)
	time.Sleep(time.Until(l.ExpiresAt) + 200*time.Millisecond)
	s.say("clock", "passes %s UTC: Martin's lock has expired", l.ExpiresAt.Format("15:04:05"))
	taken, err := s.locks.Acquire(s.as(david), c, offlinelock.Write)
	if err != nil {
		return err
	}
	s.say("david", "opens it: lock granted, generation %d > %d, a new token", taken.Generation, l.Generation)
	err = s.as(martin).Model(c).Update("name", "Martin's late edit").Error
	if !errors.Is(err, offlinelock.ErrLocked) {
		return fmt.Errorf("martin's late save should have been refused, got %v", err)
	}
	s.say("martin", "comes back and saves: refused: %v", err)
	n, err := s.locks.ReleaseAll(s.db, david.Session)
	if err != nil {
		return err
	}
	s.say("david", "logs out: %d lock released", n)
	return nil
}

// 4. Read/write locks: shared reads, and an upgrade only for the sole reader.
func (s *stage) readWrite() error {
	s.title("4. Read/write locks and upgrade")
	for _, o := range []offlinelock.Owner{martin, david} {
		var p Policy
		if err := s.as(o).First(&p, 129).Error; err != nil {
			return err
		}
		s.say(o.User, "opens policy 129 to read: READ lock granted by the load itself")
	}
	p := &Policy{ID: 129}
	_, err := s.locks.Acquire(s.as(david), p, offlinelock.Write)
	if !errors.Is(err, offlinelock.ErrLocked) {
		return fmt.Errorf("david's upgrade should have been refused, got %v", err)
	}
	s.say("david", "wants to edit: WRITE refused while Martin reads: %v", err)
	if err := s.locks.Release(s.as(martin), p); err != nil {
		return err
	}
	s.say("martin", "closes the page: his READ lock is released")
	l, err := s.locks.Acquire(s.as(david), p, offlinelock.Write)
	if err != nil {
		return err
	}
	s.say("david", "asks again: WRITE granted (upgraded from READ), access %s", l.Access)
	err = s.as(martin).First(&Policy{}, 129).Error
	if !errors.Is(err, offlinelock.ErrLocked) {
		return fmt.Errorf("martin's read should have been refused, got %v", err)
	}
	s.say("martin", "opens it again: READ refused while David writes: %v", err)
	return s.locks.Release(s.as(david), p)
}

// 5. Coarse-Grained Lock: the customer's lock covers its addresses.
func (s *stage) coarseGrained() error {
	s.title("5. Coarse-grained lock: customer 129 and address 301")
	if _, err := s.locks.Acquire(s.as(martin), &Customer{ID: 129}, offlinelock.Write); err != nil {
		return err
	}
	s.say("martin", "opens customer 129 for editing")
	_, err := s.locks.Acquire(s.as(david), &Address{ID: 301}, offlinelock.Write)
	if !errors.Is(err, offlinelock.ErrLocked) {
		return fmt.Errorf("david should have been refused, got %v", err)
	}
	s.say("david", "opens address 301 for editing: refused, the address is part of customer 129: %v", err)
	err = s.as(david).Model(&Address{ID: 301}).Update("city", "Seattle, Washington").Error
	if !errors.Is(err, offlinelock.ErrLocked) {
		return fmt.Errorf("david's move should have been refused, got %v", err)
	}
	s.say("david", "moves the address to Seattle anyway: refused by the plugin")
	if err := s.as(martin).Model(&Address{ID: 301}).Update("city", "Salem, Oregon").Error; err != nil {
		return err
	}
	h, err := s.locks.Holders(s.db, &Address{ID: 301})
	if err != nil {
		return err
	}
	s.say("martin", "updates address 301 under his one lock on %s %s", h[0].Resource, h[0].ID)
	return nil
}

// dialector opens dsn with the driver its form names: a go-sql-driver/mysql
// DSN (user@tcp(host:3306)/db?parseTime=true) opens MySQL or MariaDB, any
// other PostgreSQL.
func dialector(dsn string) gorm.Dialector {
	if strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix(") || strings.HasPrefix(dsn, "tcp(") {
		return mysql.Open(dsn)
	}
	return postgres.Open(dsn)
}
