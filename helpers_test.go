package offlinelock_test

// Helpers shared by the test files: the two sessions and their contexts,
// the database clock, a statement counter, a pause between a write's check
// and its fence, and the assertions of the fail-closed promise (a refusal
// is the plugin's error, a panic is a failure, the locks a session holds).

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

var (
	martin = testkit.Martin
	david  = testkit.David
)

func as(db *gorm.DB, o offlinelock.Owner) *gorm.DB { return testkit.As(db, o) }

func withTTL(db *gorm.DB, o offlinelock.Owner, ttl time.Duration) *gorm.DB {
	return db.WithContext(offlinelock.WithTTL(offlinelock.WithOwner(context.Background(), o), ttl))
}

// dbNow reads the database clock, the one lock expiry is judged by.
func dbNow(t testing.TB, db *gorm.DB) time.Time { return testkit.DBNow(t, db) }

// waitPast waits until the database clock has passed at.
func waitPast(t testing.TB, db *gorm.DB, at time.Time) { testkit.WaitPast(t, db, at) }

// counter is a GORM logger that counts statements.
type counter struct {
	logger.Interface
	n atomic.Int64
}

func (c *counter) LogMode(logger.LogLevel) logger.Interface { return c }
func (c *counter) Trace(_ context.Context, _ time.Time, _ func() (string, int64), _ error) {
	c.n.Add(1)
}

// pauseKey carries a function the test callback calls between the plugin's
// check and its fence (testkit.PauseBetweenCheckAndCommit).
type pauseKey = testkit.PauseKey

func pauseBetweenCheckAndCommit(t *testing.T, db *gorm.DB) { testkit.PauseBetweenCheckAndCommit(t, db) }

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

// fcReset releases every lock of martin and david.
func fcReset(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
	t.Helper()
	for _, o := range []offlinelock.Owner{martin, david} {
		_, err := p.ReleaseAll(db, o.Session)
		require.NoError(t, err)
	}
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

// fcDropCleanup drops tables at the end of the test.
func fcDropCleanup(t *testing.T, db *gorm.DB, tables ...any) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(tables...))
	t.Cleanup(func() { db.Migrator().DropTable(tables...) })
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
