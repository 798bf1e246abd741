package testkit

// The aggregate of orders (coarse-grained locks: a root and its members,
// two levels down), the customer and address of the walk-through, and
// the folders and pages of an untagged parent whose delete cascades.

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// Order is an aggregate root; its lines, shipments and parcels are members.
type Order struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_read"`
	Note  string
	Lines []LineItem
}

// LineItem is a member of its Order, through the belongs-to field.
type LineItem struct {
	ID      uint `gorm:"primaryKey"`
	OrderID uint `lock:"root"` // through the belongs-to field Order
	Order   *Order
	Qty     int
}

// Shipment is a member of its Order, naming the root's table.
type Shipment struct {
	ID      uint `gorm:"primaryKey"`
	OrderID uint `lock:"root=orders"` // no association field: the root's table is named
	Carrier string
}

// Parcel is a member two levels down: Parcel -> Shipment -> Order.
type Parcel struct {
	ID         uint `gorm:"primaryKey"`
	ShipmentID uint `lock:"root"` // two levels: Parcel -> Shipment -> Order
	Weight     int
}

// Client is customer 129 of the walk-through, a root (exclusive_write).
type Client struct {
	ID        uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name      string
	Addresses []Address
}

// Address is address 301 of the walk-through, a member of its Client.
type Address struct {
	ID       uint `gorm:"primaryKey"`
	ClientID uint `lock:"root"`
	City     string
}

// AggregateModels are the aggregate's tables: orders and clients with
// their members.
var AggregateModels = []any{&Order{}, &LineItem{}, &Shipment{}, &Parcel{}, &Client{}, &Address{}}

// SeedOrder creates order id with n lines, a shipment and a parcel.
func SeedOrder(t testing.TB, db *gorm.DB, id uint, n int) {
	t.Helper()
	o := Order{ID: id, Note: "new"}
	for i := 0; i < n; i++ {
		o.Lines = append(o.Lines, LineItem{ID: id*10000 + uint(i), Qty: 1})
	}
	require.NoError(t, Admin(db).CreateInBatches(&o, 500).Error)
	require.NoError(t, Admin(db).Create(&Shipment{ID: id, OrderID: id, Carrier: "post"}).Error)
	require.NoError(t, Admin(db).Create(&Parcel{ID: id, ShipmentID: id, Weight: 1}).Error)
}

// CpFolder is not lockable; deleting one deletes its CpPages (a declared
// ON DELETE CASCADE), which are.
type CpFolder struct {
	ID    uint
	Pages []CpPage `gorm:"constraint:OnDelete:CASCADE"`
}

// CpPage is locked by Acquire (exclusive_write); its folder's delete
// cascades to it.
type CpPage struct {
	ID         uint `gorm:"primaryKey" lock:"exclusive_write"`
	CpFolderID uint
	Text       string
}
