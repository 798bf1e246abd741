package plugin_test

// Helpers and models of the load, key, tag and strict-mode tests moved
// here from the library's folder because they use only its public API
// (issue 49): copies of the root's helpers and models of the same names.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// From helpers_test.go.

// counter is a GORM logger that counts statements.
type counter struct {
	logger.Interface
	n atomic.Int64
}

func (c *counter) LogMode(logger.LogLevel) logger.Interface { return c }
func (c *counter) Trace(_ context.Context, _ time.Time, _ func() (string, int64), _ error) {
	c.n.Add(1)
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

// fcSafeLoad is fcSafe for a load that reports whether it touched its
// destination.
func fcSafeLoad(t *testing.T, f func() (bool, error)) (touched bool, err error) {
	t.Helper()
	err = fcSafe(t, func() error {
		var e error
		touched, e = f()
		return e
	})
	return touched, err
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

// fcLoad is one call shape of a load of account id. It reports whether its
// destination changed from the value it started with.
type fcLoad struct {
	name string
	only string // "sqlite" or "postgres": the shape exists on that database only
	load func(tx *gorm.DB, id uint) (touched bool, err error)
}

// fcScanRow reads the first row of q's Rows into dest.
func fcScanRow(q *gorm.DB, dest ...any) error {
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
	}
	return rows.Err()
}

func fcTouched(before, after any) bool { return !reflect.DeepEqual(before, after) }

// fcCheckRefusedLoad runs load as david on account 129, which martin holds
// by loading it: it must be refused, leave its destination as it was and
// leave no lock of David's.
func fcCheckRefusedLoad(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, l fcLoad) {
	t.Helper()
	require.NoError(t, as(db, martin).First(&Account{}, 129).Error)
	touched, err := fcSafeLoad(t, func() (bool, error) { return l.load(as(db, david), 129) })
	if assert.Error(t, err, "David read accounts 129 while Martin holds it") {
		assert.True(t, fcRefused(err), "refusal must be a plugin error, got %v", err)
	}
	assert.False(t, touched, "the refused load filled its destination")
	assert.Empty(t, fcLocksOf(t, db, p, david), "the refused load left David's locks behind")
}

func fmNames(rows []FmAcct) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
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

// From models_test.go.

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

// The fm_ models: eachFm (or fmSetup) gives them fresh tables on a lock
// table of their own, with accounts 1, 2 and 129 and seats 1 and 129.

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

func eachFm(t *testing.T, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := fmSetup(t, d)
			fn(t, db, p)
		})
	}
}

// From concurrency_test.go.

// Counter is a record whose n only the offline lock protects: each business
// transaction reads it in one statement and writes n+1 in another, with no
// database lock in between.
type Counter struct {
	ID uint `gorm:"primaryKey"`
	N  int
}

// From coarse_test.go.

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

// From write_test.go.

type fcHooksKey struct{}

type fcHookCounter struct{ n atomic.Int64 }

func fcCount(tx *gorm.DB) error {
	if c, ok := tx.Statement.Context.Value(fcHooksKey{}).(*fcHookCounter); ok {
		c.n.Add(1)
	}
	return nil
}

// From write_shapes_test.go.

// fcDoc reads doc 129 under admin; found is false when it is gone.
func fcDoc(t *testing.T, db *gorm.DB) (Doc, bool) {
	t.Helper()
	var d []Doc
	require.NoError(t, admin(db).Where("id = ?", 129).Find(&d).Error)
	if len(d) == 0 {
		return Doc{}, false
	}
	return d[0], true
}

func fcAssertDocUnchanged(t *testing.T, db *gorm.DB) {
	t.Helper()
	d, ok := fcDoc(t, db)
	if assert.True(t, ok, "the refused write deleted doc 129") {
		assert.Equal(t, Doc{ID: 129, Title: "draft", Body: "secret"}, d, "the refused write changed doc 129")
	}
}

// From write_where_test.go.

func fcSafe2(t *testing.T, f func() ([]string, error)) (out []string, err error) {
	t.Helper()
	err = fcSafe(t, func() error {
		var e error
		out, e = f()
		return e
	})
	return out, err
}

// From write_reads_test.go.

// FtAcct is locked by every load (exclusive_read).
type FtAcct struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name string
}

// ftSetup registers a plugin (Config.Models: lockables) on a lock table of
// its own and creates tables (models and join tables by name).
func ftSetup(t *testing.T, d database, lockables []any, tables ...any) (*gorm.DB, *offlinelock.Plugin, string) {
	t.Helper()
	table := "ol_ft" + randomHex(5)
	db, p := setup(t, d, offlinelock.Config{Table: table, Models: lockables, Logger: slog.New(slog.DiscardHandler)})
	all := append(slices.Clone(tables), lockables...)
	require.NoError(t, admin(db).Migrator().DropTable(all...))
	var models []any
	for _, m := range all {
		if _, isName := m.(string); !isName {
			models = append(models, m)
		}
	}
	require.NoError(t, admin(db).AutoMigrate(models...))
	t.Cleanup(func() { admin(db).Migrator().DropTable(all...) })
	return db, p, table
}
