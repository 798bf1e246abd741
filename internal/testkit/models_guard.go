package testkit

// The database guard's models: customers, orders with lines, tags and
// subs, folders with notes (a cascading parent), and GoAcct of the
// guard's grant-order tests, with their setups.

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// GdCustomer is a root locked by Acquire (exclusive_write).
type GdCustomer struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name   string
	Credit int
}

// GdOrder is a root with members (GdLine) and tags (many2many).
type GdOrder struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Note  string
	Lines []GdLine
	Tags  []GdTag `gorm:"many2many:gd_order_tags"`
}

// GdLine is a member of its order's aggregate.
type GdLine struct {
	ID        uint `gorm:"primaryKey"`
	GdOrderID uint `lock:"root"`
	Qty       int
}

// GdTag is not lockable; orders carry tags through gd_order_tags.
type GdTag struct {
	ID   uint `gorm:"primaryKey"`
	Name string
}

// GdFolder is not lockable; deleting one cascades to its notes, which are.
type GdFolder struct {
	ID    uint     `gorm:"primaryKey"`
	Notes []GdNote `gorm:"constraint:OnDelete:CASCADE"`
}

// GdNote is locked by Acquire (exclusive_write); its folder's delete
// cascades to it.
type GdNote struct {
	ID         uint `gorm:"primaryKey" lock:"exclusive_write"`
	GdFolderID uint
	Text       string
}

// GdSub is a member two levels down: its root is its line's order.
type GdSub struct {
	ID       uint `gorm:"primaryKey"`
	GdLineID uint `lock:"root"`
	Note     string
}

// GdModels are the tables GdSetup makes, children first.
var GdModels = []any{&GdLine{}, &GdNote{}, &GdFolder{}, &GdOrder{}, &GdTag{}, &GdCustomer{}}

// GdSetup registers a plugin on db (SetupOn) with the Gd models added to
// cfg.Models, makes the guarded tables, seeds them and has Martin hold
// customer 129, order 1 and note 1 (customer 130, order 2, note 2 free).
func GdSetup(t *testing.T, db *gorm.DB, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	cfg.Models = append([]any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}}, cfg.Models...)
	db, p := SetupOn(t, db, cfg)
	require.NoError(t, db.Migrator().DropTable("gd_order_tags", "gd_customers_renamed"))
	DropCleanup(t, db, GdModels...)
	t.Cleanup(func() { db.Migrator().DropTable("gd_order_tags") })
	require.NoError(t, db.AutoMigrate(&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdTag{}, &GdFolder{}, &GdNote{}))
	seed := Admin(db)
	require.NoError(t, seed.Create(&[]GdCustomer{{ID: 129, Name: "Acme", Credit: 100}, {ID: 130, Name: "Free", Credit: 100}}).Error)
	require.NoError(t, seed.Create(&[]GdOrder{{ID: 1, Note: "held"}, {ID: 2, Note: "free"}}).Error)
	require.NoError(t, seed.Create(&[]GdLine{{ID: 1, GdOrderID: 1, Qty: 1}, {ID: 2, GdOrderID: 2, Qty: 2}}).Error)
	require.NoError(t, seed.Create(&[]GdTag{{ID: 1, Name: "t1"}}).Error)
	require.NoError(t, seed.Create(&[]GdFolder{{ID: 1}, {ID: 2}}).Error)
	require.NoError(t, seed.Create(&[]GdNote{{ID: 1, GdFolderID: 1, Text: "held"}, {ID: 2, GdFolderID: 2, Text: "free"}}).Error)
	for _, target := range []any{&GdCustomer{ID: 129}, &GdOrder{ID: 1}, &GdNote{ID: 1}} {
		_, err := p.Acquire(As(db, Martin), target, offlinelock.Write)
		require.NoError(t, err)
	}
	require.NoError(t, p.InstallGuard(db)) // the cascade's parent and the join table, now that they exist
	return db, p
}

// GdSubSetup is GdSetup on a lock table named ol_roles_… with GdSub in the
// catalog, sub 1 under the held order's line 1 and sub 2 under the free
// order's line 2; it returns the lock table's name.
func GdSubSetup(t *testing.T, db *gorm.DB) (*gorm.DB, *offlinelock.Plugin, string) {
	t.Helper()
	table := "ol_roles_" + RandomHex(4)
	db, p := GdSetup(t, db, offlinelock.Config{Table: table, Models: []any{&GdSub{}}})
	require.NoError(t, db.Migrator().DropTable(&GdSub{}))
	t.Cleanup(func() { db.Migrator().DropTable(&GdSub{}) })
	require.NoError(t, db.AutoMigrate(&GdSub{}))
	require.NoError(t, Admin(db).Create(&[]GdSub{{ID: 1, GdLineID: 1, Note: "held"}, {ID: 2, GdLineID: 2, Note: "free"}}).Error)
	require.NoError(t, p.InstallGuard(db))
	return db, p, table
}

// GoAcct is locked by its loads (exclusive_read): the locked load's grant.
type GoAcct struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	Credit int
}

// GoSetup is GdSetup plus go_accts (2 and 3 free), guarded, on db
// (PostgreSQL or MySQL/MariaDB).
func GoSetup(t *testing.T, db *gorm.DB) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	db, p := GdSetup(t, db, offlinelock.Config{})
	require.NoError(t, db.Migrator().DropTable(&GoAcct{}))
	t.Cleanup(func() { db.Migrator().DropTable(&GoAcct{}) })
	require.NoError(t, db.AutoMigrate(&GoAcct{}))
	require.NoError(t, Admin(db).Create(&[]GoAcct{{ID: 2, Credit: 100}, {ID: 3, Credit: 100}}).Error)
	// The first lock of the model puts it in the catalog, and guards it.
	require.NoError(t, As(db, Martin).First(&GoAcct{}, 2).Error)
	require.NoError(t, p.Release(As(db, Martin), &GoAcct{ID: 2}))
	var n int
	if db.Dialector.Name() == "postgres" {
		require.NoError(t, db.Raw(`SELECT count(*) FROM pg_trigger WHERE tgrelid = 'go_accts'::regclass AND tgname LIKE 'ol%'`).Scan(&n).Error)
		require.Equal(t, 4, n, "go_accts is not guarded: the test proves nothing")
	} else {
		require.NoError(t, db.Raw(`SELECT count(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'go_accts' AND TRIGGER_NAME LIKE 'ol%'`).Scan(&n).Error)
		require.Equal(t, 3, n, "go_accts is not guarded: the test proves nothing")
	}
	return db, p
}
