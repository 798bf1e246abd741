package offlinelock_test

// Helpers the root's remaining tests (guard_forge_test.go,
// guard_order_bounds_test.go, bench_guard_test.go, engine_test.go,
// noguard_nogrant_test.go, binding_test.go) share with the guard tests
// that moved to tests/plugin (issue 49): the originals moved with those
// files (guard_roles_test.go, guard_twodb_test.go, guard_root_test.go),
// these copies stay for the root.

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

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

// secondDatabase creates a database of a unique name on db's server,
// dropped after the test, and opens GORM on it.
func secondDatabase(t *testing.T, db *gorm.DB) (*gorm.DB, string) {
	t.Helper()
	name := "ol_second_" + randomHex(4)
	require.NoError(t, db.Exec(`CREATE DATABASE `+name).Error)
	var dsn string
	if db.Dialector.Name() == "mysql" {
		head, tail, ok := strings.Cut(dsnOf("mysql"), ")/")
		require.True(t, ok)
		_, params, _ := strings.Cut(tail, "?")
		dsn = head + ")/" + name + "?" + params
	} else {
		dsn = dsnOf("postgres") + " dbname=" + name
	}
	other, err := gorm.Open(dialectorOf(db.Dialector.Name(), dsn), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	t.Cleanup(func() {
		sqlDB.Close()
		if db.Dialector.Name() == "postgres" {
			db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
			return
		}
		db.Exec(`DROP DATABASE IF EXISTS ` + name)
	})
	return other, dsn
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
