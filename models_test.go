package offlinelock_test

// Models shared by the test files, their tables and their seeds. Models
// only one file uses live in that file.

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// Account is locked exclusively by every load (exclusive_read).
type Account struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name   string
	Credit int
}

// Doc is free to load; writes need a Write lock taken with Acquire.
type Doc = testkit.Doc

// Policy takes shared Read locks on load (read_write) that live 2 hours.
type Policy = testkit.Policy

// Team is not lockable; its members are.
type Team struct {
	ID      uint `gorm:"primaryKey"`
	Name    string
	Members []Member
}

// Member is locked on load, and joins its Desk, also locked on load.
type Member struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	TeamID uint
	Name   string
	DeskID *uint
	Desk   *Desk
}

type Desk struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_read"`
	Floor int
}

type Customer = testkit.Customer

var allModels = []any{&Account{}, &Doc{}, &Policy{}, &Team{}, &Member{}, &Desk{}, &Customer{}}

// admin is the context for test setup: it runs under Bypass.
//
// Under the database guard a Bypass no longer writes records other
// sessions hold, so setup writes as martin, the usual holder.
func admin(db *gorm.DB) *gorm.DB { return testkit.Admin(db) }

// setupModels is setup plus fresh tables for the test models.
func setupModels(t testing.TB, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	db, p := setup(t, d, cfg)
	require.NoError(t, db.Migrator().DropTable(allModels...))
	require.NoError(t, db.AutoMigrate(allModels...))
	t.Cleanup(func() { db.Migrator().DropTable(allModels...) })
	return db, p
}

// eachDBWithModels runs fn on every database with fresh model tables.
func eachDBWithModels(t *testing.T, cfg offlinelock.Config, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setupModels(t, d, cfg)
			fn(t, db, p)
		})
	}
}

func seedAccounts(t testing.TB, db *gorm.DB, n int) {
	t.Helper()
	rows := make([]Account, n)
	for i := range rows {
		rows[i] = Account{ID: uint(i + 1), Name: "acct", Credit: 100}
	}
	require.NoError(t, admin(db).CreateInBatches(rows, 200).Error)
}

// Badge has a unique key besides its primary key.
type Badge struct {
	ID   uint   `gorm:"primaryKey" lock:"exclusive_write"`
	Code string `gorm:"uniqueIndex"`
	Name string
}

// FcAccountView is a DTO over the lockable table accounts: lockability
// belongs to the table, not to the Go type.
type FcAccountView struct {
	ID     uint
	Name   string
	Credit int
}

func (FcAccountView) TableName() string { return "accounts" }

// FcDocView is a DTO over the lockable table docs (exclusive_write).
type FcDocView struct {
	ID    uint `gorm:"primaryKey"`
	Title string
	Body  string
}

func (FcDocView) TableName() string { return "docs" }

// The fm_ models: eachFm (or fmSetup) gives them fresh tables on a lock
// table of their own, with accounts 1, 2 and 129 and seats 1 and 129. The
// load, write, key and catalog shape tests share them.

// FmAcct is locked by every load (exclusive_read). Row 129 is Martin's
// "secret".
type FmAcct struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name   string
	Credit int
}

// FmAcctView is a DTO of fm_accts.
type FmAcctView struct {
	ID     uint
	Name   string
	Credit int
}

func (FmAcctView) TableName() string { return "fm_accts" }

// FmSeat is not lockable; it joins (belongs to) a lockable FmAcct.
type FmSeat struct {
	ID       uint `gorm:"primaryKey"`
	Label    string
	FmAcctID uint
	FmAcct   *FmAcct
}

// FmDoc is free to read; writes need a Write lock.
type FmDoc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

// FmIntStr keeps an integer column in a Go string: "0129" and "129" are
// one row to the database.
type FmIntStr struct {
	ID   string `gorm:"primaryKey;type:integer" lock:"exclusive_write"`
	Name string
}

// FmUq has a unique name besides its key.
type FmUq struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name   string
	Credit int
}

// FmParent and FmChild: the child's foreign key cascades deletes.
type FmParent struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_write"`
}

type FmChild struct {
	ID         uint `gorm:"primaryKey" lock:"exclusive_write"`
	FmParentID uint
	FmParent   *FmParent `gorm:"constraint:OnDelete:CASCADE"`
	Name       string
}

// FmEmbBase carries the tagged key of embedding models.
type FmEmbBase struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_read"`
}

// FmEmb embeds its tagged key anonymously; FmEmbNamed through
// gorm:"embedded".
type FmEmb struct {
	FmEmbBase
	Name string
}

type FmEmbNamed struct {
	Base FmEmbBase `gorm:"embedded"`
	Name string
}

// FmSoft is locked on load and soft-deleted.
type FmSoft struct {
	ID        uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name      string
	DeletedAt gorm.DeletedAt
}

var fmModels = []any{&FmAcct{}, &FmSeat{}, &FmDoc{}, &FmIntStr{}, &FmUq{}, &FmParent{}, &FmChild{}, &FmEmb{}, &FmEmbNamed{}, &FmSoft{}}

// fmSetup registers a plugin on a lock table of its own and creates the Fm
// tables (extra: tables of one database only).
func fmSetup(t *testing.T, d database, extra ...any) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	models := append(slices.Clone(fmModels), extra...)
	// Config.Models lists lockable models only: FmSeat is not (db.Use
	// would refuse it as a lock tag never read).
	lockable := slices.DeleteFunc(slices.Clone(models), func(m any) bool { _, seat := m.(*FmSeat); return seat })
	db, p := setup(t, d, offlinelock.Config{Models: lockable, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, admin(db).Migrator().DropTable(models...))
	require.NoError(t, admin(db).AutoMigrate(models...))
	t.Cleanup(func() { admin(db).Migrator().DropTable(models...) })
	require.NoError(t, admin(db).Create(&[]FmAcct{{ID: 1, Name: "one", Credit: 1}, {ID: 2, Name: "two", Credit: 2}, {ID: 129, Name: "secret", Credit: 9999}}).Error)
	require.NoError(t, admin(db).Create(&[]FmSeat{{ID: 1, Label: "s1", FmAcctID: 1}, {ID: 129, Label: "s129", FmAcctID: 129}}).Error)
	return db, p
}

// The aggregate of orders (coarse-grained locks) and the folders and pages
// of an untagged parent, which tests/plugin keeps copies of.

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
