package plugin_test

// Helpers of the guard's tests moved here from the library's folder
// because they use only its public API (issue 49): each mirrors the root
// package's helper or model of the same name (guard_test.go,
// guard_order_test.go, guard_forge_test.go, cascade_parent_test.go,
// attack_fold_test.go, mysql_statements_test.go, db_test.go,
// noguard_nogrant_test.go).

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// GdCustomer is a root locked by Acquire (exclusive_write).
type GdCustomer struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name   string
	Credit int
}

// GdOrder is a root with members (GdLine) and tags (many2many).
type GdOrder struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Note  string
	Lines []GdLine
	Tags  []GdTag `gorm:"many2many:gd_order_tags"`
}

// GdLine is a member of its order's aggregate.
type GdLine struct {
	ID        uint `gorm:"primaryKey"`
	GdOrderID uint `lock:"root"`
	Qty       int
}

type GdTag struct {
	ID   uint `gorm:"primaryKey"`
	Name string
}

// GdFolder is not lockable; deleting one cascades to its notes, which are.
type GdFolder struct {
	ID    uint     `gorm:"primaryKey"`
	Notes []GdNote `gorm:"constraint:OnDelete:CASCADE"`
}

type GdNote struct {
	ID         uint `gorm:"primaryKey" lock:"exclusive_write"`
	GdFolderID uint
	Text       string
}

var gdModels = []any{&GdLine{}, &GdNote{}, &GdFolder{}, &GdOrder{}, &GdTag{}, &GdCustomer{}}

// gdSetup makes the guarded tables, seeds them and has martin hold
// customer 129, order 1 and note 1 (customer 130, order 2, note 2 free).
func gdSetup(t *testing.T, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	cfg.Models = append([]any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}}, cfg.Models...)
	db, p := setup(t, d, cfg)
	require.NoError(t, db.Migrator().DropTable("gd_order_tags", "gd_customers_renamed"))
	fcDropCleanup(t, db, gdModels...)
	t.Cleanup(func() { db.Migrator().DropTable("gd_order_tags") })
	require.NoError(t, db.AutoMigrate(&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdTag{}, &GdFolder{}, &GdNote{}))
	seed := admin(db)
	require.NoError(t, seed.Create(&[]GdCustomer{{ID: 129, Name: "Acme", Credit: 100}, {ID: 130, Name: "Free", Credit: 100}}).Error)
	require.NoError(t, seed.Create(&[]GdOrder{{ID: 1, Note: "held"}, {ID: 2, Note: "free"}}).Error)
	require.NoError(t, seed.Create(&[]GdLine{{ID: 1, GdOrderID: 1, Qty: 1}, {ID: 2, GdOrderID: 2, Qty: 2}}).Error)
	require.NoError(t, seed.Create(&[]GdTag{{ID: 1, Name: "t1"}}).Error)
	require.NoError(t, seed.Create(&[]GdFolder{{ID: 1}, {ID: 2}}).Error)
	require.NoError(t, seed.Create(&[]GdNote{{ID: 1, GdFolderID: 1, Text: "held"}, {ID: 2, GdFolderID: 2, Text: "free"}}).Error)
	for _, target := range []any{&GdCustomer{ID: 129}, &GdOrder{ID: 1}, &GdNote{ID: 1}} {
		_, err := p.Acquire(as(db, martin), target, offlinelock.Write)
		require.NoError(t, err)
	}
	require.NoError(t, p.InstallGuard(db)) // the cascade's parent and the join table, now that they exist
	return db, p
}

func q(db *gorm.DB, s string) string {
	if db.Dialector.Name() == "mysql" {
		return s
	}
	return strings.ReplaceAll(s, "`", `"`)
}

func customerUnchanged(t *testing.T, db *gorm.DB) {
	var c GdCustomer
	require.NoError(t, plainGORM(t, db).First(&c, 129).Error)
	assert.Equal(t, GdCustomer{ID: 129, Name: "Acme", Credit: 100}, c)
}

func lineOf(t *testing.T, db *gorm.DB, id uint) GdLine {
	var l GdLine
	require.NoError(t, plainGORM(t, db).First(&l, id).Error)
	return l
}

func rawOn(sqlText string) func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
	return func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
		sqlDB, err := db.DB()
		require.NoError(t, err)
		_, err = sqlDB.Exec(q(db, sqlText))
		return err
	}
}

// GoAcct is locked by its loads (exclusive_read): the locked load's grant.
type GoAcct struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	Credit int
}

// goSetup is gdSetup plus go_accts (2 and 3 free), guarded, on
// PostgreSQL.
func goSetupOn(t *testing.T, d database) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	db, p := gdSetup(t, d, offlinelock.Config{})
	require.NoError(t, db.Migrator().DropTable(&GoAcct{}))
	t.Cleanup(func() { db.Migrator().DropTable(&GoAcct{}) })
	require.NoError(t, db.AutoMigrate(&GoAcct{}))
	require.NoError(t, admin(db).Create(&[]GoAcct{{ID: 2, Credit: 100}, {ID: 3, Credit: 100}}).Error)
	// The first lock of the model puts it in the catalog, and guards it.
	require.NoError(t, as(db, martin).First(&GoAcct{}, 2).Error)
	require.NoError(t, p.Release(as(db, martin), &GoAcct{ID: 2}))
	var n int
	if d.name == "postgres" {
		require.NoError(t, db.Raw(`SELECT count(*) FROM pg_trigger WHERE tgrelid = 'go_accts'::regclass AND tgname LIKE 'ol%'`).Scan(&n).Error)
		require.Equal(t, 4, n, "go_accts is not guarded: the test proves nothing")
	} else {
		require.NoError(t, db.Raw(`SELECT count(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'go_accts' AND TRIGGER_NAME LIKE 'ol%'`).Scan(&n).Error)
		require.Equal(t, 3, n, "go_accts is not guarded: the test proves nothing")
	}
	return db, p
}

// goOrderWriter is another client's connection, outside the plugin.
func goOrderWriter(t *testing.T, db *gorm.DB) *sql.Conn {
	t.Helper()
	sqlDB, err := plainGORM(t, db).DB()
	require.NoError(t, err)
	c, err := sqlDB.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// goAwaitWait returns once waiting, a count of the server's waiting
// sessions, is positive, polling it: the barrier, never a guessed delay.
// done failing first says the grant did not wait.
func goAwaitWait(t *testing.T, db *gorm.DB, done <-chan error, waiting string) {
	t.Helper()
	other := plainGORM(t, db)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		var n int
		require.NoError(t, other.Raw(waiting).Scan(&n).Error)
		if n > 0 {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the grant did not wait for the open write: it returned %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatal("the grant never waited for the open write")
}

// goSerializationFailure: err is PostgreSQL's 40001.
func goSerializationFailure(err error) bool {
	var se interface{ SQLState() string }
	return errors.As(err, &se) && se.SQLState() == "40001"
}

// pinned is one connection of db's pool, closed after the test.
func pinned(t *testing.T, db *gorm.DB) *sql.Conn {
	t.Helper()
	sqlDB, err := db.DB()
	require.NoError(t, err)
	conn, err := sqlDB.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// mysqlDatabase is MariaDB (or MySQL), skipped without its DSN.
func mysqlDatabase() database { return databases()[2] }

func openMySQL(t testing.TB) *gorm.DB { return testkit.OpenMySQL(t) }

// lockTableOf is p's lock table's name (Config.Table), as the root's test
// hook Plugin.TableName gives it: the notes table among p's feature tables
// is named "<Config.Table>_notes" (docs/lock-table.md, docs/guard.md).
func lockTableOf(p *offlinelock.Plugin) string {
	for _, name := range p.FeatureTables() {
		if table, ok := strings.CutSuffix(name, "_notes"); ok {
			return table
		}
	}
	panic("offlinelock: no notes table among the feature tables")
}

// requireUnguardedRefusal asserts err is the refusal of a grant on
// ng_roots for ng_parts' missing guard.
func requireUnguardedRefusal(t *testing.T, err error, table string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, offlinelock.ErrUnguarded), "want ErrUnguarded, got %v", err)
	require.True(t, errors.Is(err, offlinelock.ErrUnenforceable), "ErrUnguarded is ErrUnenforceable too: %v", err)
	require.False(t, errors.Is(err, offlinelock.ErrLocked))
	require.ErrorContains(t, err, "table "+table+" ")
	require.ErrorContains(t, err, "offlinelock guard install")
}
