package testkit

// Database roles and users other than the tests' own: another service, an
// application role or an operator, opened as themselves without the
// plugin, for the guard's privilege tests.

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
)

// PGRole creates a login role of a unique name in db's database with the
// grants given (each a statement with %s for the role), dropped after the
// test, and opens GORM as it (no plugin: another service).
func PGRole(t testing.TB, db *gorm.DB, grants ...string) (string, *gorm.DB) {
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
	other, err := gorm.Open(postgres.Open(DSNOf("postgres")+" user="+role), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	sqlDB.SetMaxOpenConns(1) // the attacker's session settings stay on its one connection
	t.Cleanup(func() { sqlDB.Close() })
	return role, other
}

// replaceRole is s with every %s replaced by role.
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

// PGWriterGrants are another service's: DML on the business tables (the
// Gd models' and GdSub's), none on the lock table.
var PGWriterGrants = []string{
	`GRANT USAGE ON SCHEMA public TO %s`,
	`GRANT SELECT, INSERT, UPDATE, DELETE ON gd_customers, gd_orders, gd_lines, gd_subs, gd_notes, gd_folders TO %s`,
	`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO %s`,
}

// MyUser creates a MariaDB user of a unique name with the grants given
// (each a statement with %s for 'user'@'%' and {db} for db's database),
// dropped after the test, and opens GORM as it (no plugin).
func MyUser(t testing.TB, db *gorm.DB, grants ...string) *gorm.DB {
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
	dsn := DSNOf("mysql")
	_, rest, ok := strings.Cut(dsn, "@")
	require.True(t, ok, "the MariaDB DSN names a user")
	other, err := gorm.Open(mysql.Open(user+"@"+rest), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return other
}

// SplitStatements splits "a; b" into its statements.
func SplitStatements(s string) []string {
	var out []string
	for _, q := range strings.Split(s, ";") {
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, q)
		}
	}
	return out
}
