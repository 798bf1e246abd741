package offlinelock_test

import (
	"context"
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

// Doc is free to load; writes need a Write lock taken with Acquire.
type Doc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
	Body  string
}

// Policy takes shared Read locks on load (read_write) that live 2 hours.
type Policy struct {
	ID   uint `gorm:"primaryKey" lock:"read_write,ttl=2h"`
	Name string
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

type Desk struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_read"`
	Floor int
}

var allModels = []any{&Account{}, &Doc{}, &Policy{}, &Team{}, &Member{}, &Desk{}, &Customer{}}

// admin is the context for test setup: it runs under Bypass.
func admin(db *gorm.DB) *gorm.DB {
	return db.WithContext(offlinelock.Bypass(context.Background(), "test setup"))
}

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
