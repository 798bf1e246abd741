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

	"gorm.io/gorm"

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
// the plugin (testkit.OpenSQLiteLike).
func openSQLiteLike(b testing.TB, db *gorm.DB) *gorm.DB { return testkit.OpenSQLiteLike(b, db) }

// lockTableName finds the plugin's lock table through a probe lock
// (testkit.LockTableName).
func lockTableName(b testing.TB, db *gorm.DB, p *offlinelock.Plugin) string {
	return testkit.LockTableName(b, db, p)
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
// in one statement (testkit.Fill).
func fill(b testing.TB, db *gorm.DB, table, resource, session string, n int, expiresIn time.Duration) {
	testkit.Fill(b, db, table, resource, session, n, expiresIn)
}

// reportAllocs reports the allocations of one call of ours and of theirs
// (testkit.ReportAllocs).
func reportAllocs(b *testing.B, ours, theirs func(i int), cleanup func()) {
	b.Helper()
	testkit.ReportAllocs(b, ours, theirs, cleanup)
}
