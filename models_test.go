package offlinelock_test

// Models shared by the test files, their tables and their seeds. Models
// only one file uses live in that file.

import (
	"testing"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// Account is locked exclusively by every load (exclusive_read).
type Account = testkit.Account

// Doc is free to load; writes need a Write lock taken with Acquire.
type Doc = testkit.Doc

// Policy takes shared Read locks on load (read_write) that live 2 hours.
type Policy = testkit.Policy

type Customer = testkit.Customer

// admin is the context for test setup: it runs under Bypass.
//
// Under the database guard a Bypass no longer writes records other
// sessions hold, so setup writes as martin, the usual holder.
func admin(db *gorm.DB) *gorm.DB { return testkit.Admin(db) }

// setupModels is setup plus fresh tables for the test models
// (testkit.SetupModels).
func setupModels(t testing.TB, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	return testkit.SetupModels(t, d.open(t), cfg)
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

// seedAccounts creates accounts 1..n (testkit.SeedAccounts).
func seedAccounts(t testing.TB, db *gorm.DB, n int) { testkit.SeedAccounts(t, db, n) }

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

// The fm_ models (testkit.FmSetup), the aggregate of orders
// (testkit.AggregateModels, testkit.SeedOrder) and the folders and pages
// of an untagged parent are testkit's (models_fm.go, models_aggregate.go),
// shared with tests/plugin.
