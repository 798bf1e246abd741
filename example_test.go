package offlinelock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// ExCustomer is edited under the usual mode: loads are free, a write needs
// the Write lock that Acquire takes when the edit starts.
type ExCustomer struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name   string
	Credit int
}

// ExDocument is locked by every load: only one session may even read it.
type ExDocument struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_read"`
	Title string
}

// ExOrder is the root of an aggregate; its lines share its lock.
type ExOrder struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Lines []ExLine
}

// ExLine is a member of the ExOrder aggregate: lock:"root" on its foreign
// key makes its lock its order's.
type ExLine struct {
	ID        uint `gorm:"primaryKey"`
	ExOrderID uint `lock:"root"`
	ExOrder   *ExOrder
	Product   string
}

// exampleDB opens a SQLite file in a fresh temporary directory, registers
// the plugin on it and creates the models' tables. cleanup closes the
// database and removes the directory.
func exampleDB(models ...any) (db *gorm.DB, locks *offlinelock.Plugin, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "offlinelock-example-")
	if err != nil {
		return nil, nil, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	db, err = gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, "app.db"))), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	cleanup = func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
		os.RemoveAll(dir)
	}
	locks = offlinelock.New(offlinelock.Config{Models: models})
	if err := db.Use(locks); err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	if err := db.AutoMigrate(models...); err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	return db, locks, cleanup, nil
}

// New returns the plugin; db.Use creates the lock table and registers the
// callbacks. On SQLite, open the database with SQLiteDSN.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "offlinelock-example-")
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

	locks := offlinelock.New(offlinelock.Config{
		TTL:    30 * time.Minute,
		Models: []any{&ExCustomer{}}, // a bad lock tag on a listed model fails db.Use
	})
	if err := db.Use(locks); err != nil { // creates the lock table, registers the callbacks
		fmt.Println(err)
		return
	}
	fmt.Println("registered:", locks.Name())
	fmt.Println("lock table:", db.Migrator().HasTable(offlinelock.DefaultTable))
	// Output:
	// registered: offlinelock
	// lock table: true
}

// The usual mode, exclusive_write: the session takes the Write lock when
// the edit starts, saves, and releases. Another session is refused at once.
func ExamplePlugin_Acquire() {
	db, locks, cleanup, err := exampleDB(&ExCustomer{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	ctx := context.Background()
	martin := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: "M1", User: "martin"}))
	david := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: "D1", User: "david"}))
	if err := martin.Create(&ExCustomer{ID: 129, Name: "Acme", Credit: 10}).Error; err != nil {
		fmt.Println(err)
		return
	}

	// Martin opens customer 129 for editing.
	var c ExCustomer
	if err := martin.First(&c, 129).Error; err != nil { // a load is free under exclusive_write
		fmt.Println(err)
		return
	}
	if _, err := locks.Acquire(martin, &c, offlinelock.Write); err == nil {
		fmt.Println("martin: granted")
	}

	// David wants it too: refused at once, never waited for.
	_, err = locks.Acquire(david, &ExCustomer{ID: 129}, offlinelock.Write)
	fmt.Println("david refused:", errors.Is(err, offlinelock.ErrLocked))
	var locked *offlinelock.LockedError
	if errors.As(err, &locked) {
		fmt.Println("held by:", locked.Holders[0].Owner.User)
	}
	// Nor may David write without the lock.
	err = david.Model(&ExCustomer{ID: 129}).Update("credit", 0).Error
	fmt.Println("david's write refused:", errors.Is(err, offlinelock.ErrLocked))

	// Martin saves and releases in one transaction.
	c.Name = "Acme Group"
	err = martin.Transaction(func(tx *gorm.DB) error {
		if err := tx.Save(&c).Error; err != nil {
			return err
		}
		return locks.Release(tx, &c)
	})
	fmt.Println("martin saved and released:", err == nil)

	// Now David may edit it.
	if _, err := locks.Acquire(david, &ExCustomer{ID: 129}, offlinelock.Write); err == nil {
		fmt.Println("david: granted")
	}
	// Output:
	// martin: granted
	// david refused: true
	// held by: martin
	// david's write refused: true
	// martin saved and released: true
	// david: granted
}

// WithOwner puts the session that owns the locks, and the name others see,
// into the context of every statement. A load or write of a lockable model
// without an owner is ErrNoOwner, and nothing is read or written.
func ExampleWithOwner() {
	db, locks, cleanup, err := exampleDB(&ExDocument{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	ctx := offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: "M1", User: "martin"})
	owner, _ := offlinelock.OwnerFrom(ctx)
	fmt.Println("owner:", owner.User)

	tx := db.WithContext(ctx)
	if err := tx.Create(&ExDocument{ID: 1, Title: "Contract"}).Error; err != nil {
		fmt.Println(err)
		return
	}

	var d ExDocument
	err = db.First(&d, 1).Error // no owner in the context
	fmt.Println("without owner, ErrNoOwner:", errors.Is(err, offlinelock.ErrNoOwner))

	if err := tx.First(&d, 1).Error; err != nil { // under exclusive_read the load takes the lock
		fmt.Println(err)
		return
	}
	fmt.Println("loaded:", d.Title)
	holders, _ := locks.Holders(db, &d)
	fmt.Println("held by:", holders[0].Owner.User, holders[0].Access)

	david := db.WithContext(offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: "D1", User: "david"}))
	err = david.First(&ExDocument{}, 1).Error
	fmt.Println("david's load refused:", errors.Is(err, offlinelock.ErrLocked))
	// Output:
	// owner: martin
	// without owner, ErrNoOwner: true
	// loaded: Contract
	// held by: martin write
	// david's load refused: true
}

// An aggregate (Coarse-Grained Lock): the lines of an order are members
// (lock:"root" on their foreign key) and share the order's lock. Locking a
// line locks the order and all its lines.
func ExamplePlugin_Acquire_aggregate() {
	db, locks, cleanup, err := exampleDB(&ExOrder{}, &ExLine{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	ctx := context.Background()
	martin := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: "M1", User: "martin"}))
	david := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: "D1", User: "david"}))
	if err := martin.Create(&ExOrder{ID: 7}).Error; err != nil {
		fmt.Println(err)
		return
	}

	// Martin takes the order's lock: creating its lines needs it.
	if _, err := locks.Acquire(martin, &ExOrder{ID: 7}, offlinelock.Write); err != nil {
		fmt.Println(err)
		return
	}
	lines := []ExLine{{ID: 1, ExOrderID: 7, Product: "desk"}, {ID: 2, ExOrderID: 7, Product: "chair"}}
	if err := martin.Create(&lines).Error; err != nil {
		fmt.Println(err)
		return
	}

	// A line's lock is its order's.
	resource, id, _ := locks.KeyOf(db, &ExLine{ID: 2, ExOrderID: 7})
	fmt.Println("line 2 is locked as:", resource, id)

	// David is refused on the order and on every line of it.
	_, err = locks.Acquire(david, &ExLine{ID: 2, ExOrderID: 7}, offlinelock.Write)
	fmt.Println("david refused on line 2:", errors.Is(err, offlinelock.ErrLocked))
	err = david.Create(&ExLine{ID: 3, ExOrderID: 7, Product: "lamp"}).Error
	fmt.Println("david may not add a line:", errors.Is(err, offlinelock.ErrLocked))

	// Martin releases the order, and with it all its lines.
	if err := locks.Release(martin, &ExOrder{ID: 7}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := locks.Acquire(david, &ExLine{ID: 1, ExOrderID: 7}, offlinelock.Write); err == nil {
		fmt.Println("david: granted on line 1")
	}
	holders, _ := locks.Holders(db, &ExOrder{ID: 7})
	fmt.Println("order 7 held by:", holders[0].Owner.User)
	// Output:
	// line 2 is locked as: ex_orders 7
	// david refused on line 2: true
	// david may not add a line: true
	// david: granted on line 1
	// order 7 held by: david
}

// Stats is the lock table at a glance, for monitoring (the offlinelock
// command's stats prints it).
func ExamplePlugin_Stats() {
	db, locks, cleanup, err := exampleDB(&ExCustomer{}, &ExDocument{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	ctx := context.Background()
	martin := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: "M1", User: "martin"}))
	david := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: "D1", User: "david"}))
	for _, target := range []any{&ExCustomer{ID: 1}, &ExCustomer{ID: 2}, &ExDocument{ID: 1}} {
		if _, err := locks.Acquire(martin, target, offlinelock.Write); err != nil {
			fmt.Println(err)
			return
		}
	}
	if _, err := locks.Acquire(david, &ExCustomer{ID: 3}, offlinelock.Write); err != nil {
		fmt.Println(err)
		return
	}

	s, err := locks.Stats(db)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("live locks:", s.Live)
	fmt.Println("by resource:", s.ByResource)
	fmt.Println("by user:", s.ByUser)
	fmt.Println("oldest:", s.Oldest.Resource, s.Oldest.ID, "by", s.Oldest.Owner.User)
	fmt.Println("expired rows waiting for the sweep:", s.ExpiredRows)
	// Output:
	// live locks: 4
	// by resource: [{ex_customers 3} {ex_documents 1}]
	// by user: [{martin 3} {david 1}]
	// oldest: ex_customers 1 by martin
	// expired rows waiting for the sweep: 0
}
