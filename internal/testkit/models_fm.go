package testkit

// The fm_ models: FmSetup gives them fresh tables on a lock table of their
// own, with accounts 1, 2 and 129 and seats 1 and 129. The load, write,
// key and catalog shape tests share them.

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

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

// TableName is fm_accts.
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

// FmChild belongs to an FmParent; deleting the parent deletes it.
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

// FmEmbNamed embeds its tagged key as a named embedded field.
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

// FmModels are the tables FmSetup makes.
var FmModels = []any{&FmAcct{}, &FmSeat{}, &FmDoc{}, &FmIntStr{}, &FmUq{}, &FmParent{}, &FmChild{}, &FmEmb{}, &FmEmbNamed{}, &FmSoft{}}

// FmSetup registers a plugin on db on a lock table of its own (SetupOn)
// and creates and seeds the Fm tables (extra: tables of one database only).
func FmSetup(t *testing.T, db *gorm.DB, extra ...any) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	models := append(slices.Clone(FmModels), extra...)
	// Config.Models lists lockable models only: FmSeat is not (db.Use
	// would refuse it as a lock tag never read).
	lockable := slices.DeleteFunc(slices.Clone(models), func(m any) bool { _, seat := m.(*FmSeat); return seat })
	db, p := SetupOn(t, db, offlinelock.Config{Models: lockable, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, Admin(db).Migrator().DropTable(models...))
	require.NoError(t, Admin(db).AutoMigrate(models...))
	t.Cleanup(func() { Admin(db).Migrator().DropTable(models...) })
	require.NoError(t, Admin(db).Create(&[]FmAcct{{ID: 1, Name: "one", Credit: 1}, {ID: 2, Name: "two", Credit: 2}, {ID: 129, Name: "secret", Credit: 9999}}).Error)
	require.NoError(t, Admin(db).Create(&[]FmSeat{{ID: 1, Label: "s1", FmAcctID: 1}, {ID: 129, Label: "s129", FmAcctID: 129}}).Error)
	return db, p
}
