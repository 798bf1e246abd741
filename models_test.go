package offlinelock_test

// Models shared by the test files, their tables and their seeds. Models
// only one file uses live in that file.

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

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

// fcSeedLoads seeds accounts 1..3 ("acct", credit 100) and 129 ("zzz",
// credit 9999): the largest name and credit, so aggregates reveal it. The
// customers table has a row 129 too, for raw joins.
func fcSeedLoads(t *testing.T, db *gorm.DB) {
	t.Helper()
	seedAccounts(t, db, 3)
	require.NoError(t, admin(db).Create(&Account{ID: 129, Name: "zzz", Credit: 9999}).Error)
	require.NoError(t, admin(db).Create(&Customer{ID: 129, Name: "cust"}).Error)
	require.NoError(t, admin(db).Create(&Customer{ID: 2, Name: "zzz"}).Error)
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

// fmPrepared opens the database like d, with gorm.Config{PrepareStmt: true}.
func fmPrepared(d database) database {
	return database{d.name + "-prepared", func(t testing.TB) *gorm.DB {
		t.Helper()
		cfg := &gorm.Config{Logger: logger.Discard, PrepareStmt: true}
		var db *gorm.DB
		var err error
		if d.name == "sqlite" {
			db, err = gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(t.TempDir(), "p.db"))), cfg)
		} else {
			dsn := dsnOf(d.name)
			if dsn == "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true needs %s: set its DSN", d.name)
				}
				t.Skipf("%s tests need its DSN", d.name)
			}
			db, err = gorm.Open(dialectorOf(d.name, dsn), cfg)
		}
		require.NoError(t, err)
		sqlDB, _ := db.DB()
		t.Cleanup(func() { sqlDB.Close() })
		return db
	}}
}

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

func eachFm(t *testing.T, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := fmSetup(t, d)
			fn(t, db, p)
		})
	}
}
