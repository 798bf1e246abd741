package testkit

// The lock table as a reader of it sees it: finding a plugin's table,
// filling it with rows straight in SQL, reading its rows raw, and a second
// connection to a SQLite file without the plugin.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// LockTableName finds p's lock table through a probe lock on Customer
// 987654, quoted for db.
func LockTableName(b testing.TB, db *gorm.DB, p *offlinelock.Plugin) string {
	probe := offlinelock.Owner{Session: "probe"}
	if _, err := p.Acquire(As(db, probe), &Customer{ID: 987654}, offlinelock.Write); err != nil {
		b.Fatal(err)
	}
	defer p.Release(As(db, probe), &Customer{ID: 987654})
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

// Fill inserts n Write-lock rows of resource straight into the lock table
// in one statement (not through the API, so a million take seconds): ids
// 1..n, owned by session (or, with session "", by a thousand sessions
// filler-0 … filler-999), expiring expiresIn from now (negative: expired).
func Fill(b testing.TB, db *gorm.DB, table, resource, session string, n int, expiresIn time.Duration) {
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
	if err := Admin(db).Exec(q, args...).Error; err != nil {
		b.Fatal(err)
	}
}

// fillMySQL is Fill's statement on MySQL: the numbers 1..n from a cross
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

// LockRow is one row of the lock table as a reader of the table sees it.
type LockRow struct {
	Resource, ID, Holder, Access, Session, User, Token string
}

// LockRows reads every row of the lock table, raw.
func LockRows(t *testing.T, db *gorm.DB, table string) []LockRow {
	t.Helper()
	rows, err := Admin(db).Raw(`SELECT resource, lock_id, holder, access, session, user_name, token FROM ` + table +
		` ORDER BY resource, lock_id, holder`).Rows()
	require.NoError(t, err)
	defer rows.Close()
	var out []LockRow
	for rows.Next() {
		var r LockRow
		require.NoError(t, rows.Scan(&r.Resource, &r.ID, &r.Holder, &r.Access, &r.Session, &r.User, &r.Token))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// OpenSQLiteLike opens the file of an open SQLite database again, with the
// plugin's recommended DSN and without the plugin.
func OpenSQLiteLike(b testing.TB, db *gorm.DB) *gorm.DB {
	var path string
	if err := db.Raw(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path).Error; err != nil {
		b.Fatal(err)
	}
	plain, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(path)), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		b.Fatal(err)
	}
	sqlDB, _ := plain.DB()
	b.Cleanup(func() { sqlDB.Close() })
	return plain
}
