package plugin_test

// Helpers and models of the write, write-shape, attack and DDL tests moved
// here from the library's folder (issue 49): each mirrors the root
// package's helper or model of the same name.

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

func openMySQL(t testing.TB) *gorm.DB { return testkit.OpenMySQL(t) }

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
// write shape tests share them.

// FmAcct is locked by every load (exclusive_read). Row 129 is Martin's
// "secret".
type FmAcct struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name   string
	Credit int
}

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

func eachFm(t *testing.T, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := fmSetup(t, d)
			fn(t, db, p)
		})
	}
}

// fcUnenforceable is true for the refusals acceptable for a statement shape
// the plugin cannot bound.
func fcUnenforceable(err error) bool {
	return errors.Is(err, offlinelock.ErrUnenforceable) || errors.Is(err, offlinelock.ErrInvalid) || errors.Is(err, offlinelock.ErrStrict)
}

// fcRefused is true for any of the plugin's refusals.
func fcRefused(err error) bool {
	return errors.Is(err, offlinelock.ErrLocked) || errors.Is(err, offlinelock.ErrNotLocked) ||
		errors.Is(err, offlinelock.ErrNoOwner) || fcUnenforceable(err)
}

// fmRefused asserts a plugin refusal.
func fmRefused(t *testing.T, err error, msg string, args ...any) {
	t.Helper()
	if assert.Error(t, err, append([]any{msg}, args...)...) {
		assert.True(t, fcRefused(err), "refusal must be a plugin error, got %v", err)
	}
}

// fcSafe runs f and turns a panic (of the plugin, in a callback) into a
// test failure and an error, so that one panic does not hide the other
// cases.
func fcSafe(t *testing.T, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("the statement panicked: %v", r)
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// fcLocksOf lists the live locks of a session.
func fcLocksOf(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, o offlinelock.Owner) []offlinelock.Lock {
	t.Helper()
	l, err := p.List(db, offlinelock.Filter{Session: o.Session})
	require.NoError(t, err)
	return l
}

// fcHolds is true when o holds a Write lock on the record.
func fcHolds(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, target any, o offlinelock.Owner, access offlinelock.Access) bool {
	t.Helper()
	h, err := p.Holders(db, target)
	require.NoError(t, err)
	for _, l := range h {
		if l.Owner.Session == o.Session && l.Access == access {
			return true
		}
	}
	return false
}

func fmRowNames(q *gorm.DB) ([]string, error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func fmAcctName(t *testing.T, db *gorm.DB, id uint) string {
	t.Helper()
	var a FmAcct
	require.NoError(t, admin(db).First(&a, id).Error)
	return a.Name
}

// fmWrite is a write of David's own account 1 that copies, or tests,
// something of account 129.
type fmWrite struct {
	name  string
	write func(tx *gorm.DB) error
}

// lockTableName finds the plugin's lock table through a probe lock.
func lockTableName(b testing.TB, db *gorm.DB, p *offlinelock.Plugin) string {
	probe := offlinelock.Owner{Session: "probe"}
	if _, err := p.Acquire(as(db, probe), &Customer{ID: 987654}, offlinelock.Write); err != nil {
		b.Fatal(err)
	}
	defer p.Release(as(db, probe), &Customer{ID: 987654})
	var names []string
	q := `SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'ol\_%' AND table_name NOT LIKE '%\_generation' AND table_name NOT LIKE '%\_tables'`
	quote := func(n string) string { return `"` + n + `"` }
	switch db.Dialector.Name() {
	case "sqlite":
		q = `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ol\_%' ESCAPE '\' AND name NOT LIKE '%\_generation' ESCAPE '\' AND name NOT LIKE '%\_tables' ESCAPE '\'`
	case "mysql":
		q += ` AND table_schema = DATABASE()`
		quote = func(n string) string { return "`" + n + "`" }
	}
	db.Raw(q).Scan(&names)
	for _, n := range names {
		var c int64
		db.Raw(`SELECT count(*) FROM ` + quote(n) + ` WHERE lock_id = '987654' AND session = 'probe'`).Scan(&c)
		if c == 1 {
			return quote(n)
		}
	}
	b.Fatal("lock table not found")
	return ""
}
