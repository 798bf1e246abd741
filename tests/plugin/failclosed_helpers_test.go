package plugin_test

// Helpers and models of the tests moved here from the library's folder
// (issue 49): the fail-closed checks (fc…, fm…), the models the load,
// write and aggregate tests share, and the lock-table fillers of the scale
// tests. What the root package's tests use too lives once in
// internal/testkit (models_fm.go, locktable.go); the names here stand for it.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// counter is a GORM logger that counts statements (testkit.Counter).
type counter = testkit.Counter

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

// FcAccountView is a DTO over the lockable table accounts: lockability
// belongs to the table, not to the Go type.
type FcAccountView struct {
	ID     uint
	Name   string
	Credit int
}

func (FcAccountView) TableName() string { return "accounts" }

// The fm_ models: eachFm (or fmSetup) gives them fresh tables on a lock
// table of their own, with accounts 1, 2 and 129 and seats 1 and 129. The
// load, write, key and catalog shape tests share them.

// The Fm models are testkit's (models_fm.go), shared with the root
// package's tests.
type (
	FmAcct     = testkit.FmAcct
	FmAcctView = testkit.FmAcctView
	FmSeat     = testkit.FmSeat
	FmDoc      = testkit.FmDoc
	FmIntStr   = testkit.FmIntStr
	FmUq       = testkit.FmUq
	FmParent   = testkit.FmParent
	FmChild    = testkit.FmChild
	FmEmbBase  = testkit.FmEmbBase
	FmEmb      = testkit.FmEmb
	FmEmbNamed = testkit.FmEmbNamed
	FmSoft     = testkit.FmSoft
)

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
// tables (extra: tables of one database only; testkit.FmSetup).
func fmSetup(t *testing.T, d database, extra ...any) (*gorm.DB, *offlinelock.Plugin) {
	return testkit.FmSetup(t, d.open(t), extra...)
}

func eachFm(t *testing.T, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := fmSetup(t, d)
			fn(t, db, p)
		})
	}
}

// eachDB runs fn as a subtest on every database.
func eachDB(t *testing.T, cfg offlinelock.Config, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, cfg)
			fn(t, db, p)
		})
	}
}

// lockTableName is the plugin's lock table (testkit.LockTableName).
func lockTableName(b testing.TB, db *gorm.DB, p *offlinelock.Plugin) string {
	return testkit.LockTableName(b, db, p)
}

// fill inserts n Write-lock rows of resource straight into the lock table
// (testkit.Fill).
func fill(b testing.TB, db *gorm.DB, table, resource, session string, n int, expiresIn time.Duration) {
	testkit.Fill(b, db, table, resource, session, n, expiresIn)
}

// From helpers_test.go.

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

// From models_test.go.

// The fm_ models: eachFm (or fmSetup) gives them fresh tables on a lock
// table of their own, with accounts 1, 2 and 129 and seats 1 and 129.

// From concurrency_test.go.

// Counter is a record whose n only the offline lock protects: each business
// transaction reads it in one statement and writes n+1 in another, with no
// database lock in between.
type Counter struct {
	ID uint `gorm:"primaryKey"`
	N  int
}

// From coarse_test.go.

// From write_test.go.

// From write_shapes_test.go.

// From write_where_test.go.

// From write_reads_test.go.

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
