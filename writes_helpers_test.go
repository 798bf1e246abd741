package offlinelock_test

// Helpers the root's tests share with the write, attack and token tests
// that moved to tests/plugin (issue 49): they lived in those files, and
// the root's fence, rekey, load, catalog, guard and values tests still
// call them. tests/plugin keeps its own copies, in the moved files.

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// FcHooked counts its hooks in a counter carried by the statement's
// context, so each test has its own.
type FcHooked struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name string
}

type fcHooksKey struct{}

type fcHookCounter struct{ n atomic.Int64 }

func fcCount(tx *gorm.DB) error {
	if c, ok := tx.Statement.Context.Value(fcHooksKey{}).(*fcHookCounter); ok {
		c.n.Add(1)
	}
	return nil
}

func (h *FcHooked) BeforeSave(tx *gorm.DB) error   { return fcCount(tx) }
func (h *FcHooked) AfterSave(tx *gorm.DB) error    { return fcCount(tx) }
func (h *FcHooked) BeforeCreate(tx *gorm.DB) error { return fcCount(tx) }
func (h *FcHooked) AfterCreate(tx *gorm.DB) error  { return fcCount(tx) }
func (h *FcHooked) BeforeUpdate(tx *gorm.DB) error { return fcCount(tx) }
func (h *FcHooked) AfterUpdate(tx *gorm.DB) error  { return fcCount(tx) }
func (h *FcHooked) BeforeDelete(tx *gorm.DB) error { return fcCount(tx) }
func (h *FcHooked) AfterDelete(tx *gorm.DB) error  { return fcCount(tx) }

func fcSafe2(t *testing.T, f func() ([]string, error)) (out []string, err error) {
	t.Helper()
	err = fcSafe(t, func() error {
		var e error
		out, e = f()
		return e
	})
	return out, err
}

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

// atkTwoNodes opens d with the test models and two plugins on one lock
// table: db/p (this node) and other/q (another node). On SQLite the other
// node opens the same file.
func atkTwoNodes(t *testing.T, d database, extra ...any) (db *gorm.DB, p *offlinelock.Plugin, other *gorm.DB, q *offlinelock.Plugin) {
	t.Helper()
	cfg := offlinelock.Config{Table: "ol_" + randomHex(6), Authorize: func(context.Context, string, offlinelock.Lock) error { return nil },
		Logger: slog.New(slog.DiscardHandler)}
	open := d.open
	if d.name == "sqlite" {
		path := filepath.Join(t.TempDir(), "atk.db")
		open = func(t testing.TB) *gorm.DB {
			db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(path)), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			sqlDB, _ := db.DB()
			t.Cleanup(func() { sqlDB.Close() })
			return db
		}
	}
	db, p = setupModels(t, database{d.name, open}, cfg)
	if len(extra) > 0 {
		require.NoError(t, db.Migrator().DropTable(extra...))
		require.NoError(t, admin(db).AutoMigrate(extra...))
		t.Cleanup(func() { db.Migrator().DropTable(extra...) })
	}
	other, q = setupOn(t, open(t), cfg)
	return db, p, other, q
}

// atkLose makes martin's Write lock on target lost on the other node:
// force-released, and with taken, then acquired by david.
func atkLose(t *testing.T, other *gorm.DB, q *offlinelock.Plugin, resource, id string, target any, taken bool) {
	t.Helper()
	require.NoError(t, q.ForceRelease(as(other, offlinelock.Owner{Session: "A1", User: "admin"}), resource, id))
	if taken {
		_, err := q.Acquire(as(other, david), target, offlinelock.Write)
		require.NoError(t, err)
	}
}

func itoa(n uint) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{digits[n%10]}, b...)
	}
	return string(b)
}

// lockRow is one row of the lock table as a reader of the table sees it.
type lockRow struct {
	resource, id, holder, access, session, user, token string
}

// lockRows reads every row of the lock table, raw.
func lockRows(t *testing.T, db *gorm.DB, table string) []lockRow {
	t.Helper()
	rows, err := admin(db).Raw(`SELECT resource, lock_id, holder, access, session, user_name, token FROM ` + table +
		` ORDER BY resource, lock_id, holder`).Rows()
	require.NoError(t, err)
	defer rows.Close()
	var out []lockRow
	for rows.Next() {
		var r lockRow
		require.NoError(t, rows.Scan(&r.resource, &r.id, &r.holder, &r.access, &r.session, &r.user, &r.token))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}
