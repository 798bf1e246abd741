package testkit

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// Account is locked exclusively by every load (exclusive_read).
type Account struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name   string
	Credit int
}

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

// Desk is locked on load.
type Desk struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_read"`
	Floor int
}

// Badge has a unique key besides its primary key.
type Badge struct {
	ID   uint   `gorm:"primaryKey" lock:"exclusive_write"`
	Code string `gorm:"uniqueIndex"`
	Name string
}

// AllModels are the tables SetupModels makes.
var AllModels = []any{&Account{}, &Doc{}, &Policy{}, &Team{}, &Member{}, &Desk{}, &Customer{}}

// SetupModels is SetupOn plus fresh tables for AllModels, dropped after
// the test.
func SetupModels(t testing.TB, db *gorm.DB, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	db, p := SetupOn(t, db, cfg)
	require.NoError(t, db.Migrator().DropTable(AllModels...))
	require.NoError(t, db.AutoMigrate(AllModels...))
	t.Cleanup(func() { db.Migrator().DropTable(AllModels...) })
	return db, p
}

// SeedAccounts creates accounts 1..n ("acct", credit 100).
func SeedAccounts(t testing.TB, db *gorm.DB, n int) {
	t.Helper()
	rows := make([]Account, n)
	for i := range rows {
		rows[i] = Account{ID: uint(i + 1), Name: "acct", Credit: 100}
	}
	require.NoError(t, Admin(db).CreateInBatches(rows, 200).Error)
}

// Customer is not lockable.
type Customer struct {
	ID     uint `gorm:"primaryKey"`
	Name   string
	Credit int
}

// Doc is free to load; writes need a Write lock taken with Acquire.
type Doc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
	Body  string
}

// OtCustomer is the root of the telemetry tests' aggregate.
type OtCustomer struct {
	ID        uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name      string
	Credit    int
	Addresses []OtAddress `gorm:"foreignKey:CustomerID"`
}

// OtAddress is a member of an OtCustomer's aggregate.
type OtAddress struct {
	ID         uint `gorm:"primaryKey"`
	CustomerID uint `lock:"root=ot_customers"`
	City       string
}

// OtPolicy takes shared Read locks on load.
type OtPolicy struct {
	ID     uint `gorm:"primaryKey" lock:"read_write"`
	Holder string
}

// Policy takes shared Read locks on load (read_write) that live 2 hours.
type Policy struct {
	ID   uint `gorm:"primaryKey" lock:"read_write,ttl=2h"`
	Name string
}
