package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

func TestDSNFormsPickTheDriver(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a b.db")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, c := range []struct {
		dsn, server, driverDSN string
	}{
		{"postgres://u:p@db:5432/app?sslmode=disable", "PostgreSQL", "postgres://u:p@db:5432/app?sslmode=disable"},
		{"postgresql://db/app", "PostgreSQL", "postgresql://db/app"},
		{"host=db user=u dbname=app", "PostgreSQL", "host=db user=u dbname=app"},
		{"  dbname = app", "PostgreSQL", "  dbname = app"},
		{file, "SQLite", offlinelock.SQLiteDSN(file)},
		{"sqlite:" + file, "SQLite", offlinelock.SQLiteDSN(file)},
		{"sqlite://" + file, "SQLite", offlinelock.SQLiteDSN(file)},
		{"file:" + file, "SQLite", offlinelock.SQLiteDSN(file)},
		{offlinelock.SQLiteDSN(file), "SQLite", offlinelock.SQLiteDSN(file)}, // a file: URI with settings: as it is
	} {
		dial, server, err := dialectorFor(c.dsn)
		require.NoError(t, err, c.dsn)
		assert.Equal(t, c.server, server, c.dsn)
		assert.Equal(t, c.driverDSN, driverDSN(dial), c.dsn)
	}
}

func driverDSN(d gorm.Dialector) string {
	switch d := d.(type) {
	case *postgres.Dialector:
		return d.Config.DSN
	case *sqlite.Dialector:
		return d.DSN
	case *mysql.Dialector:
		return d.Config.DSN
	}
	return ""
}

// The MySQL store needs parseTime=true and loc=UTC; the command sets them
// whatever the DSN says, and a connect timeout unless it has one.
func TestMySQLDSNsGetParseTimeAndUTC(t *testing.T) {
	for _, c := range []struct {
		dsn                  string
		user, pass, addr, db string
		timeout              time.Duration
	}{
		{"root@tcp(127.0.0.1:3306)/app", "root", "", "127.0.0.1:3306", "app", connectTimeout},
		{"u:p@tcp(db:3307)/app?parseTime=false&loc=Local&timeout=3s", "u", "p", "db:3307", "app", 3 * time.Second},
		{"mysql://u:p%40ss%2F@db:3307/app?loc=Local", "u", "p@ss/", "db:3307", "app", connectTimeout},
		{"mysql://root@db/app", "root", "", "db:3306", "app", connectTimeout},
	} {
		dial, server, err := dialectorFor(c.dsn)
		require.NoError(t, err, c.dsn)
		assert.Equal(t, "MySQL/MariaDB", server)
		cfg, err := mysqldriver.ParseDSN(driverDSN(dial))
		require.NoError(t, err, c.dsn)
		assert.True(t, cfg.ParseTime, c.dsn)
		assert.Equal(t, time.UTC, cfg.Loc, c.dsn)
		assert.Equal(t, c.timeout, cfg.Timeout, c.dsn)
		assert.Equal(t, []string{c.user, c.pass, "tcp", c.addr, c.db}, []string{cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName}, c.dsn)
	}
}

// TestBadDSNExits1NamingTheProblem: the message says what is wrong, and
// never shows the DSN's password.
func TestBadDSNExits1NamingTheProblem(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(empty)), &gorm.Config{})
	require.NoError(t, err)
	require.NoError(t, db.Exec("CREATE TABLE customers (id integer primary key)").Error)
	sqlDB, _ := db.DB()
	sqlDB.Close()
	for _, c := range []struct {
		dsn  string
		msgs []string
	}{
		{filepath.Join(dir, "nosuch.db"), []string{`no SQLite database at "` + filepath.Join(dir, "nosuch.db") + `"`}},
		{"sqlite:" + dir, []string{`no SQLite database at "` + dir + `"`}},
		{empty, []string{`no lock table "offline_locks" in this SQLite database: check --dsn and --table`}},
		{"postgres://postgres:s3cret@127.0.0.1:1/app?sslmode=disable", []string{"connecting to PostgreSQL: ", "connection refused"}},
		{"host=127.0.0.1 port=1 user=postgres password=s3cret dbname=app sslmode=disable", []string{"connecting to PostgreSQL: ", "connection refused"}},
		{"postgres://db:notaport/app", []string{"connecting to PostgreSQL: ", "invalid port"}},
		{"root:s3cret@tcp(127.0.0.1:1)/app", []string{"connecting to MySQL/MariaDB: ", "connection refused"}},
		{"mysql://root:s3cret@127.0.0.1:1/app", []string{"connecting to MySQL/MariaDB: ", "connection refused"}},
		{"mysql://root@127.0.0.1:3306/", []string{"the MySQL DSN names no database (…/DBNAME)"}},
		{"root@tcp(127.0.0.1:3306)/app?parseTime=maybe", []string{"reading the MySQL DSN: invalid bool value: maybe"}},
		{"oracle://scott:s3cret@db/orcl", []string{`unsupported DSN scheme "oracle": use postgres://, postgresql://, mysql://, or a sqlite: or file: prefix`}},
	} {
		r := cmd("stats", "--dsn", c.dsn)
		assert.Equal(t, exitFailed, r.code, c.dsn)
		assert.Empty(t, r.stdout, c.dsn)
		assert.True(t, strings.HasPrefix(r.stderr, "offlinelock stats: "), "%s: %s", c.dsn, r.stderr)
		for _, m := range c.msgs {
			assert.Contains(t, r.stderr, m, c.dsn)
		}
		assert.NotContains(t, r.stderr, "s3cret", "%s: the password is not shown", c.dsn)
	}
}

// TestMalformedDSNNeverShowsThePassword: a DSN that cannot even be parsed
// (a bad escape, a bad host) is reported without its password, whatever
// the parser's own message quotes.
func TestMalformedDSNNeverShowsThePassword(t *testing.T) {
	for _, dsn := range []string{
		"mysql://root:s3cret%zz@127.0.0.1:1/app",
		"mysql://root:s3cret@bad host/app",
		"postgres://postgres:s3cret%zz@127.0.0.1:1/app",
		"postgresql://postgres:s3cret@bad host/app",
		"root:s3cret@tcp(127.0.0.1:1)/app?x=%zz",
		"host=127.0.0.1 port=x user=postgres password=s3cret dbname=app",
	} {
		r := cmd("stats", "--dsn", dsn)
		assert.Equal(t, exitFailed, r.code, dsn)
		assert.NotContains(t, r.stderr, "s3cret", "%s: the password is not shown", dsn)
	}
}
