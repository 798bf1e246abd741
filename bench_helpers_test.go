package offlinelock_test

// Helpers of the bench_*_test.go files: interleaved timing, the databases
// the benchmarks run on, and the bare lock-table statements they compare
// the plugin with.

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// interleave runs ours and theirs alternately, timing each, and reports
// their ratio under name (testkit.Interleave).
func interleave(b *testing.B, name string, ours, theirs func(i int)) {
	b.Helper()
	testkit.Interleave(b, name, ours, theirs)
}

// eachBenchDB runs fn as a sub-benchmark on every database the tests use.
func eachBenchDB(b *testing.B, fn func(b *testing.B, d database)) {
	for _, d := range databases() {
		b.Run(d.name, func(b *testing.B) { fn(b, d) })
	}
}

// benchDBs opens d twice: with the plugin (and fresh model tables), and
// plain, on the same database.
func benchDBs(b *testing.B, d database) (with *gorm.DB, plain *gorm.DB, p *offlinelock.Plugin) {
	return benchDBsWith(b, d, offlinelock.Config{})
}

// benchDBsWith is benchDBs with the plugin configured by cfg.
func benchDBsWith(b *testing.B, d database, cfg offlinelock.Config) (with *gorm.DB, plain *gorm.DB, p *offlinelock.Plugin) {
	with, p = setupModels(b, d, cfg)
	if d.name == "sqlite" {
		return with, openSQLiteLike(b, with), p
	}
	return with, d.open(b), p
}

// openSQLiteLike opens the file of an open SQLite database again, without
// the plugin.
func openSQLiteLike(b testing.TB, db *gorm.DB) *gorm.DB {
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

// bare is the hand-written lock-table SQL of one database, for a table
// with the plugin's columns and indexes: what a lock costs without the
// plugin.
type bare struct {
	db         *sql.DB
	table      string
	dial       string
	upsertSQL  string // upsert(), built once
	expirySQL  string // MySQL: the expiry the upsert set, read by a second statement
	releaseSQL string
}

func newBare(b *testing.B, plain *gorm.DB, table string) bare {
	sqlDB, err := plain.DB()
	if err != nil {
		b.Fatal(err)
	}
	x := bare{db: sqlDB, table: table, dial: plain.Dialector.Name()}
	x.upsertSQL = x.upsert()
	if x.dial == "mysql" {
		x.expirySQL = `SELECT expires_at FROM ` + table + ` WHERE resource = ? AND lock_id = ? AND holder = '' AND session = ?`
	}
	x.releaseSQL = x.sql(`DELETE FROM ` + table + ` WHERE resource = ? AND lock_id = ? AND session = ?`)
	return x
}

// sql puts a statement in the database's form: its clock, its interval
// arithmetic and its placeholders.
func (x bare) sql(q string) string {
	if x.dial == "mysql" {
		q = strings.ReplaceAll(q, "NOW()", "UTC_TIMESTAMP(6)")
		return strings.ReplaceAll(q, "LATER()", "UTC_TIMESTAMP(6) + INTERVAL 30 MINUTE")
	}
	if x.dial == "sqlite" {
		q = strings.ReplaceAll(q, "NOW()", `strftime('%Y-%m-%d %H:%M:%f','now')`)
		return strings.ReplaceAll(q, "LATER()", `strftime('%Y-%m-%d %H:%M:%f','now','+30 minutes')`)
	}
	q = strings.ReplaceAll(q, "NOW()", "clock_timestamp()")
	q = strings.ReplaceAll(q, "LATER()", "clock_timestamp() + interval '30 minutes'")
	var out strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			out.WriteString("$" + strconv.Itoa(n))
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}

// upsert is the one statement a hand-written lock table takes a Write
// lock with: insert the key, or take it over when it is the session's
// own or expired, and return its expiry.
func (x bare) upsert() string {
	if x.dial == "mysql" {
		// No ON CONFLICT … WHERE: each column takes the new value on the
		// same condition, session first, so that the later columns see the
		// condition through it (MySQL assigns left to right). No RETURNING:
		// lock reads the expiry with a second SELECT.
		return x.sql(`INSERT INTO ` + x.table + ` (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
VALUES (?, ?, '', 'write', ?, 'martin', ?, 1, NOW(), LATER())
ON DUPLICATE KEY UPDATE session = IF(session = VALUES(session) OR expires_at <= NOW(), VALUES(session), session),
	token = IF(session = VALUES(session), VALUES(token), token),
	expires_at = IF(session = VALUES(session), VALUES(expires_at), expires_at)`)
	}
	return x.sql(`INSERT INTO ` + x.table + ` AS l (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
VALUES (?, ?, '', 'write', ?, 'martin', ?, 1, NOW(), LATER())
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET session = excluded.session, token = excluded.token, expires_at = excluded.expires_at
WHERE l.session = excluded.session OR l.expires_at <= NOW() RETURNING expires_at`)
}

// lock runs upsert for resource and id.
func (x bare) lock(b *testing.B, resource, id string) {
	var exp any
	if x.dial == "mysql" {
		if _, err := x.db.Exec(x.upsertSQL, resource, id, "M1", "0123456789abcdef0123456789abcdef"); err != nil {
			b.Fatal(err)
		}
		if err := x.db.QueryRow(x.expirySQL, resource, id, "M1").Scan(&exp); err != nil {
			b.Fatal(err)
		}
		return
	}
	// Read to the end, as the plugin's statements are read: SQLite runs its
	// WAL hook, and so its automatic checkpoint (about 7 ms every 1,000
	// pages), only when a statement steps to its end. QueryRow stops at the
	// first row, which left every checkpoint to the plugin's side.
	rows, err := x.db.Query(x.upsertSQL, resource, id, "M1", "0123456789abcdef0123456789abcdef")
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		if err := rows.Scan(&exp); err != nil {
			b.Fatal(err)
		}
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		b.Fatal(err)
	}
}

// lockGORM is lock sent through plain GORM (Raw, Exec): what a
// hand-written lock table costs in allocations through GORM.
func (x bare) lockGORM(b *testing.B, plain *gorm.DB, resource, id string) {
	var exp string
	if x.dial == "mysql" {
		if err := plain.Exec(x.upsertSQL, resource, id, "M1", "0123456789abcdef0123456789abcdef").Error; err != nil {
			b.Fatal(err)
		}
		if err := plain.Raw(x.expirySQL, resource, id, "M1").Scan(&exp).Error; err != nil {
			b.Fatal(err)
		}
		return
	}
	if err := plain.Raw(x.upsertSQL, resource, id, "M1", "0123456789abcdef0123456789abcdef").Scan(&exp).Error; err != nil {
		b.Fatal(err)
	}
}

// unlock is the hand-written release: one DELETE.
func (x bare) unlock(b *testing.B, resource, id string) {
	if _, err := x.db.Exec(x.releaseSQL, resource, id, "M1"); err != nil {
		b.Fatal(err)
	}
}

// clear deletes every lock row of resource.
func (x bare) clear(b *testing.B, resource string) {
	if _, err := x.db.Exec(x.sql(`DELETE FROM `+x.table+` WHERE resource = ?`), resource); err != nil {
		b.Fatal(err)
	}
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

// reportAllocs reports the allocations of one call of ours and of theirs
// (testkit.ReportAllocs).
func reportAllocs(b *testing.B, ours, theirs func(i int), cleanup func()) {
	b.Helper()
	testkit.ReportAllocs(b, ours, theirs, cleanup)
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
