package plugin_test

// Helpers and models of the tests moved here from the library's folder
// (issue 49): the fail-closed checks (fc…, fm…), the models the load,
// write and aggregate tests share, and the lock-table fillers of the scale
// tests. Each is a copy of the root package's helper of the same name,
// where the root's own tests still use it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

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

// Desk is locked on load.
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

// eachDB runs fn as a subtest on every database.
func eachDB(t *testing.T, cfg offlinelock.Config, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, cfg)
			fn(t, db, p)
		})
	}
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

// fill inserts n Write-lock rows of resource straight into the lock table
// in one statement (not through the API, so a million take seconds): ids
// 1..n, owned by session (or, with session "", by a thousand sessions
// filler-0 … filler-999), expiring expiresIn from now (negative: expired).
func fill(b testing.TB, db *gorm.DB, table, resource, session string, n int, expiresIn time.Duration) {
	b.Helper()
	secs := int64(expiresIn / time.Second)
	q := `INSERT INTO ` + table + ` (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
SELECT ?, g::text, '', 'write', CASE WHEN ? = '' THEN 'filler-' || (g % 1000) ELSE ? END, 'filler', md5(g::text), g,
	clock_timestamp(), clock_timestamp() + ? * interval '1 second'
FROM generate_series(1, ?) g`
	args := []any{resource, session, session, secs, n}
	if db.Dialector.Name() == "sqlite" {
		q = `INSERT INTO ` + table + ` (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
SELECT ?, CAST(n AS TEXT), '', 'write', CASE WHEN ? = '' THEN 'filler-' || (n % 1000) ELSE ? END, 'filler', hex(randomblob(16)), n,
	strftime('%Y-%m-%d %H:%M:%f','now'), strftime('%Y-%m-%d %H:%M:%f','now', ? || ' seconds')
FROM g`
		args = []any{n, resource, session, session, secs}
	}
	if db.Dialector.Name() == "mysql" {
		q, args = fillMySQL(table, resource, session, n, secs)
	}
	if err := admin(db).Exec(q, args...).Error; err != nil {
		b.Fatal(err)
	}
}

// fillMySQL is fill's statement on MySQL: the numbers 1..n from a cross
// join of digit tables (MySQL 8.0 and MariaDB name the recursion limit of
// a recursive CTE differently, and both stop it at 1000 by default).
func fillMySQL(table, resource, session string, n int, secs int64) (string, []any) {
	digits := `(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
	UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)`
	var from, num []string
	for i, p := 0, 1; p < n; i, p = i+1, p*10 {
		t := "d" + strconv.Itoa(i)
		from = append(from, digits+" "+t)
		num = append(num, strconv.Itoa(p)+"*"+t+".d")
	}
	if len(from) == 0 {
		from, num = []string{"(SELECT 0 d) d0"}, []string{"d0.d"}
	}
	q := `INSERT INTO ` + table + ` (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
SELECT ?, CAST(g.n AS CHAR), '', 'write', IF(? = '', CONCAT('filler-', g.n % 1000), ?), 'filler', MD5(g.n), g.n,
	UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? SECOND
FROM (SELECT ` + strings.Join(num, " + ") + ` + 1 AS n FROM ` + strings.Join(from, ", ") + `) g WHERE g.n <= ?`
	return q, []any{resource, session, session, secs, n}
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

// Badge has a unique key besides its primary key.
type Badge struct {
	ID   uint   `gorm:"primaryKey" lock:"exclusive_write"`
	Code string `gorm:"uniqueIndex"`
	Name string
}

// The fm_ models: eachFm (or fmSetup) gives them fresh tables on a lock
// table of their own, with accounts 1, 2 and 129 and seats 1 and 129.

// FmAcctView is a DTO of fm_accts.
type FmAcctView struct {
	ID     uint
	Name   string
	Credit int
}

func (FmAcctView) TableName() string { return "fm_accts" }

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
