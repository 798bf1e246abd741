package offlinelock_test

// Helpers shared by the test files: the two sessions and their contexts,
// the database clock, a statement counter and a pause between a write's
// check and its fence.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
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

// fcDropCleanup drops tables at the end of the test.
func fcDropCleanup(t *testing.T, db *gorm.DB, tables ...any) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(tables...))
	t.Cleanup(func() { db.Migrator().DropTable(tables...) })
}

// Roles, second databases, hooked models and lock-row helpers of the
// guard, fence and load tests; tests/plugin keeps copies of those its
// tests use.

// GdSub is a member two levels down: its root is its line's order.
type GdSub struct {
	ID       uint `gorm:"primaryKey"`
	GdLineID uint `lock:"root"`
	Note     string
}

// pgRole creates a login role of a unique name in db's database with the
// grants given (each a statement with %s for the role), dropped after the
// test, and opens GORM as it (no plugin: another service).
func pgRole(t testing.TB, db *gorm.DB, grants ...string) (string, *gorm.DB) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	role := "ol_role_" + hex.EncodeToString(b)
	require.NoError(t, db.Exec(`CREATE ROLE `+role+` LOGIN`).Error)
	t.Cleanup(func() {
		db.Exec(`DROP OWNED BY ` + role + ` CASCADE`)
		db.Exec(`DROP ROLE ` + role)
	})
	for _, g := range grants {
		require.NoError(t, db.Exec(replaceRole(g, role)).Error, g)
	}
	other, err := gorm.Open(postgres.Open(dsnOf("postgres")+" user="+role), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	sqlDB.SetMaxOpenConns(1) // the attacker's session settings stay on its one connection
	t.Cleanup(func() { sqlDB.Close() })
	return role, other
}

func replaceRole(s, role string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+1 < len(s) && s[i+1] == 's' {
			out = append(out, role...)
			i++
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// pgWriterGrants are another service's: DML on the business tables, none
// on the lock table.
var pgWriterGrants = []string{
	`GRANT USAGE ON SCHEMA public TO %s`,
	`GRANT SELECT, INSERT, UPDATE, DELETE ON gd_customers, gd_orders, gd_lines, gd_subs, gd_notes, gd_folders TO %s`,
	`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO %s`,
}

// gdSubSetup is gdSetup with GdSub in the catalog, sub 1 under the held
// order's line 1 and sub 2 under the free order's line 2.
func gdSubSetup(t *testing.T) (*gorm.DB, *offlinelock.Plugin, string) {
	return gdSubSetupOn(t, database{"postgres", openPostgres})
}

// gdSubSetupOn is gdSubSetup on d.
func gdSubSetupOn(t *testing.T, d database) (*gorm.DB, *offlinelock.Plugin, string) {
	t.Helper()
	table := "ol_roles_" + randomHex(4)
	db, p := gdSetup(t, d, offlinelock.Config{Table: table, Models: []any{&GdSub{}}})
	require.NoError(t, db.Migrator().DropTable(&GdSub{}))
	t.Cleanup(func() { db.Migrator().DropTable(&GdSub{}) })
	require.NoError(t, db.AutoMigrate(&GdSub{}))
	require.NoError(t, admin(db).Create(&[]GdSub{{ID: 1, GdLineID: 1, Note: "held"}, {ID: 2, GdLineID: 2, Note: "free"}}).Error)
	require.NoError(t, p.InstallGuard(db))
	return db, p, table
}

// myUser creates a MariaDB user of a unique name with the grants given
// (each a statement with %s for 'user'@'%'), dropped after the test, and
// opens GORM as it (no plugin).
func myUser(t testing.TB, db *gorm.DB, grants ...string) *gorm.DB {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	user := "ol_u_" + hex.EncodeToString(b)
	account := "'" + user + "'@'%'"
	require.NoError(t, db.Exec(`CREATE USER `+account).Error)
	t.Cleanup(func() { db.Exec(`DROP USER IF EXISTS ` + account) })
	var name string
	require.NoError(t, db.Raw(`SELECT DATABASE()`).Scan(&name).Error)
	for _, g := range grants {
		require.NoError(t, db.Exec(replaceRole(strings.ReplaceAll(g, "{db}", "`"+name+"`"), account)).Error, g)
	}
	dsn := dsnOf("mysql")
	_, rest, ok := strings.Cut(dsn, "@")
	require.True(t, ok, "the MariaDB DSN names a user")
	other, err := gorm.Open(mysql.Open(user+"@"+rest), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return other
}

// splitStatements splits "a; b" into its statements.
func splitStatements(s string) []string {
	var out []string
	for _, q := range strings.Split(s, ";") {
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, q)
		}
	}
	return out
}

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

type FtAcct struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name string
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
