package offlinelock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// BenchmarkAcquireRelease compares, in one run and interleaved so that noise
// hits both alike, offlinelock's Acquire+Release of a Write lock on
// PostgreSQL with the bare single statements a hand-written lock table needs
// for the same writes (an upsert that takes a free or expired key, and a
// DELETE), sent through the same connection pool. It reports each path's
// time and the ratios; the target is acquire-x <= 1.1.
func BenchmarkAcquireRelease(b *testing.B) {
	table := "ol_" + randomHex(6)
	db, p := setup(b, database{"postgres", openPostgres}, offlinelock.Config{Table: table})
	sqlDB, err := db.DB()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	bare := "bare_" + randomHex(4)
	// The hand-written table has the same columns and indexes as ours: a
	// lock table needs them to release a session's locks and to sweep.
	if _, err := sqlDB.Exec(`CREATE TABLE ` + bare + ` (LIKE ` + table + ` INCLUDING ALL)`); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sqlDB.Exec(`DROP TABLE ` + bare) })
	bareAcquire := `INSERT INTO ` + bare + ` AS l VALUES ($1, $2, '', 'write', $3, 'martin', $4, 1, clock_timestamp(), clock_timestamp() + interval '30 minutes')
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET session = EXCLUDED.session, token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
WHERE l.session = EXCLUDED.session OR l.expires_at <= clock_timestamp() RETURNING expires_at`
	bareRelease := `DELETE FROM ` + bare + ` WHERE resource = $1 AND lock_id = $2 AND session = $3`
	sdb := as(db, martin)
	const keys = 64
	var ours, plain [2]time.Duration // acquire, release
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := &Customer{ID: uint(i%keys + 1)}
		id := strconv.Itoa(i%keys + 1)
		runOurs := func() {
			t0 := time.Now()
			if _, err := p.Acquire(sdb, c, offlinelock.Write); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := p.Release(sdb, c); err != nil {
				b.Fatal(err)
			}
			ours[0] += t1.Sub(t0)
			ours[1] += time.Since(t1)
		}
		runBare := func() {
			var exp time.Time
			t0 := time.Now()
			if err := sqlDB.QueryRowContext(ctx, bareAcquire, "customers", id, "M1", "0123456789abcdef0123456789abcdef").Scan(&exp); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := sqlDB.ExecContext(ctx, bareRelease, "customers", id, "M1"); err != nil {
				b.Fatal(err)
			}
			plain[0] += t1.Sub(t0)
			plain[1] += time.Since(t1)
		}
		if i%2 == 0 {
			runOurs()
			runBare()
		} else {
			runBare()
			runOurs()
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours[0].Nanoseconds())/n, "ns/acquire")
	b.ReportMetric(float64(plain[0].Nanoseconds())/n, "ns/bare-acquire")
	b.ReportMetric(float64(ours[0])/float64(plain[0]), "acquire-x")
	b.ReportMetric(float64(ours[0]+ours[1])/float64(plain[0]+plain[1]), "acquire+release-x")
}

// interleave runs ours and theirs alternately b.N times, timing each, and
// reports both and their ratio under name. Time a function spends between
// b.StopTimer and b.StartTimer (cleanup) is left out of both.
func interleave(b *testing.B, name string, ours, theirs func(i int)) {
	b.Helper()
	var tOurs, tTheirs time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run := func(f func(int), acc *time.Duration) {
			before := b.Elapsed()
			f(i)
			*acc += b.Elapsed() - before
		}
		if i%2 == 0 {
			run(ours, &tOurs)
			run(theirs, &tTheirs)
		} else {
			run(theirs, &tTheirs)
			run(ours, &tOurs)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(tOurs.Nanoseconds())/n, "ns/ours")
	b.ReportMetric(float64(tTheirs.Nanoseconds())/n, "ns/theirs")
	b.ReportMetric(float64(tOurs)/float64(tTheirs), name)
}

// benchDBs opens PostgreSQL twice: with the plugin, and plain.
func benchDBs(b *testing.B) (with *gorm.DB, plain *gorm.DB, p *offlinelock.Plugin) {
	d := database{"postgres", openPostgres}
	with, p = setupModels(b, d, offlinelock.Config{})
	plain = openPostgres(b)
	return with, plain, p
}

// BenchmarkLockedFirst (a): a First by primary key under exclusive_read,
// which takes the lock and reads the row, against the bare single
// statement that takes the lock. Target: x-bare-lock <= 1.1.
func BenchmarkLockedFirst(b *testing.B) {
	db, plain, p := benchDBs(b)
	seedAccounts(b, db, 64)
	table := lockTableName(b, db, p)
	sqlDB, _ := plain.DB()
	bare := `INSERT INTO ` + table + ` AS l (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
VALUES ($1, $2, '', 'write', $3, 'martin', $4, 1, clock_timestamp(), clock_timestamp() + interval '30 minutes')
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET session = EXCLUDED.session, token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
WHERE l.session = EXCLUDED.session OR l.expires_at <= clock_timestamp() RETURNING expires_at`
	m := as(db, martin)
	interleave(b, "x-bare-lock", func(i int) {
		var a Account
		if err := m.First(&a, i%64+1).Error; err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := p.Release(m, &a); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}, func(i int) {
		var exp time.Time
		if err := sqlDB.QueryRow(bare, "bare", strconv.Itoa(i%64+1), "M1", "0123456789abcdef0123456789abcdef").Scan(&exp); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		sqlDB.Exec(`DELETE FROM ` + table + ` WHERE resource = 'bare'`)
		b.StartTimer()
	})
}

// BenchmarkHeldFirst (b): a First by the session that already holds a
// fresh lock, against a plain GORM First without the plugin. Target <= 1.2.
func BenchmarkHeldFirst(b *testing.B) {
	db, plain, _ := benchDBs(b)
	seedAccounts(b, db, 64)
	m := as(db, martin)
	if err := m.Find(&[]Account{}).Error; err != nil { // Martin holds them all
		b.Fatal(err)
	}
	interleave(b, "x-plain", func(i int) {
		if err := m.First(&Account{}, i%64+1).Error; err != nil {
			b.Fatal(err)
		}
	}, func(i int) {
		if err := plain.First(&Account{}, i%64+1).Error; err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkVerifiedSave (c): a Save checked against the lock (and fenced
// before commit), against a plain GORM Save. Target <= 1.2.
func BenchmarkVerifiedSave(b *testing.B) {
	db, plain, p := benchDBs(b)
	for i := uint(1); i <= 64; i++ {
		if err := admin(db).Create(&Doc{ID: i, Title: "t"}).Error; err != nil {
			b.Fatal(err)
		}
		if _, err := p.Acquire(as(db, martin), &Doc{ID: i}, offlinelock.Write); err != nil {
			b.Fatal(err)
		}
	}
	m := as(db, martin)
	interleave(b, "x-plain", func(i int) {
		if err := m.Save(&Doc{ID: uint(i%64 + 1), Title: "ours"}).Error; err != nil {
			b.Fatal(err)
		}
	}, func(i int) {
		if err := plain.Save(&Doc{ID: uint(i%64 + 1), Title: "plain"}).Error; err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkFind1000 (d): a Find of 1000 rows under exclusive_read, against
// a plain GORM Find; it also reports the statements each locked Find runs,
// which must not grow with the rows.
func BenchmarkFind1000(b *testing.B) {
	db, plain, p := benchDBs(b)
	seedAccounts(b, db, 1000)
	c := &counter{Interface: logger.Discard}
	m := as(db, martin).Session(&gorm.Session{Logger: c})
	interleave(b, "x-plain", func(i int) {
		var got []Account
		if err := m.Find(&got).Error; err != nil || len(got) != 1000 {
			b.Fatal(err, len(got))
		}
		b.StopTimer()
		if _, err := p.ReleaseAll(db, martin.Session); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}, func(i int) {
		var got []Account
		if err := plain.Find(&got).Error; err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(float64(c.n.Load())/float64(b.N), "statements/find")
}

// lockTableName finds the plugin's lock table through a probe lock.
func lockTableName(b *testing.B, db *gorm.DB, p *offlinelock.Plugin) string {
	var names []string
	db.Raw(`SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'ol\_%' AND table_name NOT LIKE '%\_generation'`).Scan(&names)
	probe := offlinelock.Owner{Session: "probe"}
	if _, err := p.Acquire(as(db, probe), &Customer{ID: 987654}, offlinelock.Write); err != nil {
		b.Fatal(err)
	}
	defer p.Release(as(db, probe), &Customer{ID: 987654})
	for _, n := range names {
		var c int64
		db.Raw(`SELECT count(*) FROM "` + n + `" WHERE lock_id = '987654' AND session = 'probe'`).Scan(&c)
		if c == 1 {
			return `"` + n + `"`
		}
	}
	b.Fatal("lock table not found")
	return ""
}

// BenchmarkFind1000Members: loading the 1000 lines of one order under
// exclusive_read, against a plain GORM Find of them plus the one bare
// statement that writes the order's lock. Target: x-plain+lock <= 1.2.
func BenchmarkFind1000Members(b *testing.B) {
	d := database{"postgres", openPostgres}
	db, p := setup(b, d, offlinelock.Config{Models: aggregateModels})
	db.Migrator().DropTable(aggregateModels...)
	if err := db.AutoMigrate(aggregateModels...); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Migrator().DropTable(aggregateModels...) })
	seedOrder(b, db, 1, 1000)
	table := lockTableName(b, db, p)
	plain := openPostgres(b)
	sqlDB, _ := plain.DB()
	bare := `INSERT INTO ` + table + ` AS l (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
VALUES ('bare', '1', '', 'write', 'M1', 'martin', '0123456789abcdef0123456789abcdef', 1, clock_timestamp(), clock_timestamp() + interval '30 minutes')
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET session = EXCLUDED.session, expires_at = EXCLUDED.expires_at
WHERE l.session = EXCLUDED.session OR l.expires_at <= clock_timestamp() RETURNING expires_at`
	m := as(db, martin)
	interleave(b, "x-plain+lock", func(int) {
		var lines []LineItem
		if err := m.Where("order_id = ?", 1).Find(&lines).Error; err != nil || len(lines) != 1000 {
			b.Fatal(err, len(lines))
		}
		b.StopTimer()
		if _, err := p.ReleaseAll(db, martin.Session); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}, func(int) {
		var lines []LineItem
		if err := plain.Where("order_id = ?", 1).Find(&lines).Error; err != nil {
			b.Fatal(err)
		}
		var exp time.Time
		if err := sqlDB.QueryRow(bare).Scan(&exp); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		sqlDB.Exec(`DELETE FROM ` + table + ` WHERE resource = 'bare'`)
		b.StartTimer()
	})
}

// BenchmarkLockedFirstStatement (a, the SQL alone): the one statement a
// locked First sends (take the lock in a CTE, read the row FOR SHARE),
// sent raw through database/sql, against the bare upsert. It separates
// what the database pays from what GORM and the plugin add in Go.
func BenchmarkLockedFirstStatement(b *testing.B) {
	db, plain, p := benchDBs(b)
	seedAccounts(b, db, 64)
	table := lockTableName(b, db, p)
	sqlDB, _ := plain.DB()
	upsert := func(resource, id string) string {
		return `INSERT INTO ` + table + ` AS l (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
VALUES ('` + resource + `', ` + id + `, '', 'write', 'M1', 'martin', '0123456789abcdef0123456789abcdef', 1, clock_timestamp(), clock_timestamp() + interval '30 minutes')
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET session = EXCLUDED.session, token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
WHERE l.session = EXCLUDED.session OR l.expires_at <= clock_timestamp()`
	}
	locked := `WITH g AS (` + upsert("accounts", "$1") + ` RETURNING 1)
SELECT * FROM accounts WHERE accounts.id = $2 AND EXISTS (SELECT 1 FROM g) ORDER BY accounts.id LIMIT 1 FOR SHARE OF accounts`
	bare := upsert("bare", "$1") + ` RETURNING expires_at`
	interleave(b, "x-bare-lock", func(i int) {
		id := i%64 + 1
		rows, err := sqlDB.Query(locked, strconv.Itoa(id), id)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
		}
		rows.Close()
		b.StopTimer()
		sqlDB.Exec(`DELETE FROM ` + table + ` WHERE resource = 'accounts'`)
		b.StartTimer()
	}, func(i int) {
		var exp time.Time
		if err := sqlDB.QueryRow(bare, strconv.Itoa(i%64+1)).Scan(&exp); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		sqlDB.Exec(`DELETE FROM ` + table + ` WHERE resource = 'bare'`)
		b.StartTimer()
	})
}

// BenchmarkUntaggedFirst: a First on an untagged table with the plugin
// registered (and a table locked on load known to it, so the fail-closed
// check of what the statement reads is armed), against the same First
// without the plugin. The plugin sends no SQL of its own here; the ratio is
// its Go work per statement.
func BenchmarkUntaggedFirst(b *testing.B) {
	db, plain, _ := benchDBs(b)
	if err := admin(db).Create(&Team{ID: 1, Name: "core"}).Error; err != nil {
		b.Fatal(err)
	}
	m := as(db, martin)
	if err := m.Find(&[]Account{}).Error; err != nil { // accounts: locked on load
		b.Fatal(err)
	}
	interleave(b, "x-plain", func(int) {
		if err := m.Where("name = ?", "core").First(&Team{}).Error; err != nil {
			b.Fatal(err)
		}
	}, func(int) {
		if err := plain.Where("name = ?", "core").First(&Team{}).Error; err != nil {
			b.Fatal(err)
		}
	})
}
