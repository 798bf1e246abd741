package offlinelock_test

// Models the root's tests share with tests that moved to the tests module
// (issue 49): the aggregate of coarse_test.go and the folders and pages of
// cascade_parent_test.go, both now in tests/plugin, which keep their own
// copies. The root's rekey, tags, guard_select_limit and find benchmark
// tests still use them.

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// Order is an aggregate root; its lines, shipments and parcels are members.
type Order struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_read"`
	Note  string
	Lines []LineItem
}

type LineItem struct {
	ID      uint `gorm:"primaryKey"`
	OrderID uint `lock:"root"` // through the belongs-to field Order
	Order   *Order
	Qty     int
}

type Shipment struct {
	ID      uint `gorm:"primaryKey"`
	OrderID uint `lock:"root=orders"` // no association field: the root's table is named
	Carrier string
}

type Parcel struct {
	ID         uint `gorm:"primaryKey"`
	ShipmentID uint `lock:"root"` // two levels: Parcel -> Shipment -> Order
	Weight     int
}

// Client and Address are customer 129 and address 301 of the walk-through.
type Client struct {
	ID        uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name      string
	Addresses []Address
}

type Address struct {
	ID       uint `gorm:"primaryKey"`
	ClientID uint `lock:"root"`
	City     string
}

var aggregateModels = []any{&Order{}, &LineItem{}, &Shipment{}, &Parcel{}, &Client{}, &Address{}}

func eachDBWithAggregates(t *testing.T, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, offlinelock.Config{Models: aggregateModels})
			require.NoError(t, db.Migrator().DropTable(aggregateModels...))
			require.NoError(t, db.AutoMigrate(aggregateModels...))
			t.Cleanup(func() { db.Migrator().DropTable(aggregateModels...) })
			fn(t, db, p)
		})
	}
}

// seedOrder creates order id with n lines, a shipment and a parcel.
func seedOrder(t testing.TB, db *gorm.DB, id uint, n int) {
	t.Helper()
	o := Order{ID: id, Note: "new"}
	for i := 0; i < n; i++ {
		o.Lines = append(o.Lines, LineItem{ID: id*10000 + uint(i), Qty: 1})
	}
	require.NoError(t, admin(db).CreateInBatches(&o, 500).Error)
	require.NoError(t, admin(db).Create(&Shipment{ID: id, OrderID: id, Carrier: "post"}).Error)
	require.NoError(t, admin(db).Create(&Parcel{ID: id, ShipmentID: id, Weight: 1}).Error)
}

// CpFolder is not lockable; deleting one deletes its CpPages (a declared
// ON DELETE CASCADE), which are.
type CpFolder struct {
	ID    uint
	Pages []CpPage `gorm:"constraint:OnDelete:CASCADE"`
}

type CpPage struct {
	ID         uint `gorm:"primaryKey" lock:"exclusive_write"`
	CpFolderID uint
	Text       string
}
