package main

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// serverRole creates a login role (a user on MariaDB) of a unique name
// starting with prefix, with the grants given (each a statement in which
// {role} stands for the role, {db} for the database), dropped with what
// it owns when the test ends; it returns its name and a DSN that logs in
// as it.
func serverRole(t *testing.T, d testDB, prefix string, grants ...string) (string, string) {
	t.Helper()
	b := make([]byte, 5)
	rand.Read(b)
	name, pw := prefix+"_h1_"+hex.EncodeToString(b), "pw_"+hex.EncodeToString(b)
	var dbName string
	require.NoError(t, d.db.Raw(map[string]string{"postgres": `SELECT current_database()`, "mysql": `SELECT DATABASE()`}[d.name]).Scan(&dbName).Error)
	role, dsn := `"`+name+`"`, d.dsn+" user="+name+" password="+pw // the last value of a key wins
	if d.name == "mysql" {
		role = "'" + name + "'@'%'"
		require.NoError(t, d.db.Exec(`CREATE USER `+role+` IDENTIFIED BY '`+pw+`'`).Error)
		t.Cleanup(func() { d.db.Exec(`DROP USER IF EXISTS ` + role) })
		cfg, err := mysqldriver.ParseDSN(d.dsn)
		require.NoError(t, err)
		cfg.User, cfg.Passwd = name, pw
		dsn = cfg.FormatDSN()
		dbName = "`" + dbName + "`"
	} else {
		require.NoError(t, d.db.Exec(`CREATE ROLE `+role+` LOGIN PASSWORD '`+pw+`'`).Error)
		t.Cleanup(func() {
			d.db.Exec(`DROP OWNED BY ` + role + ` CASCADE`)
			d.db.Exec(`DROP ROLE ` + role)
		})
		dbName = `"` + dbName + `"`
	}
	for _, g := range grants {
		q := strings.NewReplacer("{role}", role, "{db}", dbName).Replace(g)
		require.NoError(t, d.db.Exec(q).Error, q)
	}
	return name, dsn
}

// openAs opens GORM with dsn (another role's), closed when the test ends.
func openAs(t *testing.T, d testDB, dsn string) *gorm.DB {
	t.Helper()
	dial, _, err := dialectorFor(dsn)
	require.NoError(t, err)
	db, err := gorm.Open(dial, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// dropLockTables drops lock table table's tables (the lock table, its
// catalog, counter, order, notes and viewers tables) and the guard, as the
// test's superuser, when the test ends.
func dropLockTables(t *testing.T, d testDB, table string) {
	t.Cleanup(func() {
		q := `"`
		if d.name == "mysql" {
			q = "`"
		}
		cmd("guard", "remove", "--dsn", d.dsn, "--table", table)
		for _, suffix := range []string{"", "_generation", "_tables", "_order", "_notes", "_viewers"} {
			d.db.Exec(`DROP TABLE IF EXISTS ` + q + table + suffix + q)
		}
		if d.name == "postgres" {
			d.db.Exec(`DROP SEQUENCE IF EXISTS "` + table + `_generation"`)
		}
	})
}
