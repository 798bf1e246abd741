package offlinelock_test

// Taking a lock: offlinelock's Acquire and a locked First, against the one
// bare statement a hand-written lock table takes the same lock with.
//
//   BenchmarkAcquireRelease: Acquire (acquire-x) and Acquire+Release
//     (acquire+release-x) of a Write lock, against the bare upsert and the
//     bare upsert + DELETE on a table with the same columns and indexes.
//     Target: acquire-x <= 1.05 on PostgreSQL, <= 1.3 on SQLite and
//     MySQL/MariaDB. Allocations per call: Acquire (allocs/ours) beside
//     the bare upsert sent through plain GORM (allocs/theirs).
//   BenchmarkLockedFirst (a): a First by key under exclusive_read, which
//     takes the lock and reads the row, against the bare upsert alone.
//     Target: x-bare-lock <= 1.1 on PostgreSQL.
//   BenchmarkLockedFirstOverLockAndFirst (a, by hand): the same locked
//     First against what a hand-written lock table does for it: the bare
//     upsert, then a plain GORM First of the row (x-bare-lock+first).
//     Target: <= 1.3 on SQLite and MySQL/MariaDB. Allocations per call
//     beside a plain GORM First's.
//   BenchmarkAcquireStatement: Acquire's one statement sent raw through
//     database/sql, against the bare upsert: what the statement itself
//     costs beyond the bare one (it also draws a generation from a
//     sequence, keeps token, generation and acquisition time on a
//     re-acquire, and returns the lock's columns). PostgreSQL only.
//   BenchmarkLockedFirstStatement: the locked First's one statement sent
//     raw through database/sql, against the bare upsert: what the database
//     pays, apart from what GORM and the plugin add in Go. PostgreSQL only
//     (the other databases take the lock in statements of their own).
//   BenchmarkLockedFirstOverGORM: the locked First, against plain GORM (no
//     plugin) sending the very statement the plugin sends, with the same
//     arguments (Raw + Scan into the same model): what the plugin's own Go
//     work adds over GORM running its SQL. PostgreSQL only.
//   BenchmarkGORMFirst: a plain GORM First, no plugin, against the same
//     SELECT sent raw through database/sql: what GORM itself adds to any
//     one-row read, which a locked First pays on top of its statement.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

func BenchmarkAcquireRelease(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBs(b, d)
		x := newBare(b, plain, lockTableName(b, db, p))
		sdb := as(db, martin)
		const keys = 64
		var ours, theirs [2]time.Duration // acquire, release
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
				t0 := time.Now()
				x.lock(b, "bare", id)
				t1 := time.Now()
				x.unlock(b, "bare", id)
				theirs[0] += t1.Sub(t0)
				theirs[1] += time.Since(t1)
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
		b.ReportMetric(float64(theirs[0].Nanoseconds())/n, "ns/bare-acquire")
		b.ReportMetric(float64(ours[0])/float64(theirs[0]), "acquire-x")
		b.ReportMetric(float64(ours[0]+ours[1])/float64(theirs[0]+theirs[1]), "acquire+release-x")
		reportAllocs(b, func(i int) {
			if _, err := p.Acquire(sdb, &Customer{ID: uint(i%keys + 1)}, offlinelock.Write); err != nil {
				b.Fatal(err)
			}
		}, func(i int) {
			x.lockGORM(b, plain, "bare", strconv.Itoa(i%keys+1))
		}, func() {
			if _, err := p.ReleaseAll(db, martin.Session); err != nil {
				b.Fatal(err)
			}
			x.clear(b, "bare")
		})
	})
}

func BenchmarkLockedFirst(b *testing.B) { benchLockedFirst(b, "x-bare-lock", false) }

// BenchmarkLockedFirstOverLockAndFirst sets the locked First beside what
// the database must do for it: the bare upsert and a plain First.
func BenchmarkLockedFirstOverLockAndFirst(b *testing.B) {
	benchLockedFirst(b, "x-bare-lock+first", true)
}

// benchLockedFirst interleaves a First that takes the exclusive_read lock
// with the bare lock statement, and with a plain First after it when
// withFirst; the allocations are reported beside a plain First's.
func benchLockedFirst(b *testing.B, metric string, withFirst bool) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBs(b, d)
		seedAccounts(b, db, 64)
		x := newBare(b, plain, lockTableName(b, db, p))
		m := as(db, martin)
		locked := func(i int) {
			if err := m.First(&Account{}, i%64+1).Error; err != nil {
				b.Fatal(err)
			}
		}
		plainFirst := func(i int) {
			if err := plain.First(&Account{}, i%64+1).Error; err != nil {
				b.Fatal(err)
			}
		}
		release := func() {
			if _, err := p.ReleaseAll(db, martin.Session); err != nil {
				b.Fatal(err)
			}
		}
		interleave(b, metric, func(i int) {
			locked(i)
			b.StopTimer()
			release()
			b.StartTimer()
		}, func(i int) {
			x.lock(b, "bare", strconv.Itoa(i%64+1))
			if withFirst {
				plainFirst(i)
			}
			b.StopTimer()
			x.clear(b, "bare")
			b.StartTimer()
		})
		// Beside a plain First's (ResetTimer in interleave drops metrics
		// reported before it).
		reportAllocs(b, locked, plainFirst, release)
	})
}

func BenchmarkAcquireStatement(b *testing.B) {
	d := database{"postgres", openPostgres}
	db, plain, p := benchDBs(b, d)
	x := newBare(b, plain, lockTableName(b, db, p))
	rawVersusBare(b, x, "customers", func(i int) (string, []any) {
		return offlinelock.GrantStatement(p, "customers", strconv.Itoa(i%64+1), "M1")
	})
}

func BenchmarkLockedFirstStatement(b *testing.B) {
	d := database{"postgres", openPostgres}
	db, plain, p := benchDBs(b, d)
	seedAccounts(b, db, 64)
	x := newBare(b, plain, lockTableName(b, db, p))
	locked := `WITH g AS (` + x.upsert()[:len(x.upsert())-len(" RETURNING expires_at")] + ` RETURNING 1)
SELECT * FROM accounts WHERE accounts.id = $5 AND EXISTS (SELECT 1 FROM g) ORDER BY accounts.id LIMIT 1 FOR SHARE OF accounts`
	rawVersusBare(b, x, "accounts", func(i int) (string, []any) {
		id := i%64 + 1
		return locked, []any{"accounts", strconv.Itoa(id), "M1", "0123456789abcdef0123456789abcdef", id}
	})
}

// rawVersusBare interleaves a statement sent raw through database/sql,
// which takes a lock of resource, with the bare upsert, clearing the lock
// rows of each after it, untimed; it reports x-bare-lock.
func rawVersusBare(b *testing.B, x bare, resource string, statement func(i int) (string, []any)) {
	interleave(b, "x-bare-lock", func(i int) {
		q, args := statement(i)
		rows, err := x.db.Query(q, args...)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
		}
		rows.Close()
		b.StopTimer()
		x.clear(b, resource)
		b.StartTimer()
	}, func(i int) {
		x.lock(b, "bare", strconv.Itoa(i%64+1))
		b.StopTimer()
		x.clear(b, "bare")
		b.StartTimer()
	})
}

func BenchmarkLockedFirstOverGORM(b *testing.B) {
	d := database{"postgres", openPostgres}
	db, plain, p := benchDBs(b, d)
	seedAccounts(b, db, 64)
	m := as(db, martin)
	overGORM(b, plain, db, "INSERT INTO", func() {
		if err := m.First(&Account{}, 1).Error; err != nil {
			b.Fatal(err)
		}
	}, func() {
		if _, err := p.ReleaseAll(db, martin.Session); err != nil {
			b.Fatal(err)
		}
	})
}

// overGORM interleaves load (a First of one Account through the plugin on
// db) with plain GORM sending the very statement load sent, with the same
// arguments, scanned into the same model; after, when not nil, runs untimed
// after each of them. want is a fragment that statement must hold, so
// that the benchmark fails if load stops taking the path it measures. It
// reports x-gorm-same-sql: what the plugin's own Go work adds.
func overGORM(b *testing.B, plain, db *gorm.DB, want string, load, after func()) {
	b.Helper()
	sql, vars := capturedQuery(b, db, load)
	if !strings.Contains(sql, want) {
		b.Fatalf("the load did not take the path measured (no %q): %s", want, sql)
	}
	untimed := func() {
		if after != nil {
			b.StopTimer()
			after()
			b.StartTimer()
		}
	}
	if after != nil {
		after()
	}
	interleave(b, "x-gorm-same-sql", func(int) {
		load()
		untimed()
	}, func(int) {
		var a Account
		if r := plain.Raw(sql, vars...).Scan(&a); r.Error != nil || r.RowsAffected != 1 {
			b.Fatalf("the plugin's statement sent by plain GORM: %v, %d rows", r.Error, r.RowsAffected)
		}
		untimed()
	})
}

// capturedQuery runs load on db and returns the SQL and arguments of the
// first query statement it sent, as gorm:query sent them.
func capturedQuery(b *testing.B, db *gorm.DB, load func()) (string, []any) {
	b.Helper()
	var sql string
	var vars []any
	const name = "bench:capture"
	if err := db.Callback().Query().After("gorm:query").Register(name, func(tx *gorm.DB) {
		if sql == "" {
			sql, vars = tx.Statement.SQL.String(), append([]any(nil), tx.Statement.Vars...)
		}
	}); err != nil {
		b.Fatal(err)
	}
	load()
	if err := db.Callback().Query().Remove(name); err != nil {
		b.Fatal(err)
	}
	return sql, vars
}

func BenchmarkGORMFirst(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, _ := benchDBs(b, d)
		seedAccounts(b, db, 64)
		sqlDB, err := plain.DB()
		if err != nil {
			b.Fatal(err)
		}
		q := `SELECT * FROM "accounts" WHERE "accounts"."id" = $1 ORDER BY "accounts"."id" LIMIT 1`
		switch d.name {
		case "sqlite":
			q = `SELECT * FROM "accounts" WHERE "accounts"."id" = ? ORDER BY "accounts"."id" LIMIT 1`
		case "mysql":
			q = "SELECT * FROM `accounts` WHERE `accounts`.`id` = ? ORDER BY `accounts`.`id` LIMIT 1"
		}
		interleave(b, "x-raw", func(i int) {
			if err := plain.First(&Account{}, i%64+1).Error; err != nil {
				b.Fatal(err)
			}
		}, func(i int) {
			var a Account
			if err := sqlDB.QueryRow(q, i%64+1).Scan(&a.ID, &a.Name, &a.Credit); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkLockedFirstOfNewRecords is the locked First as an application
// makes it: each of a new record, by one session that keeps its locks (it
// holds b.N of them at the end), beside the bare lock statement and a
// plain First of the same new record. Cost must not grow with the locks a
// session holds.
func BenchmarkLockedFirstOfNewRecords(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBs(b, d)
		n := max(b.N, 1)
		seedAccounts(b, db, n)
		p.ReleaseAll(db, martin.Session)
		x := newBare(b, plain, lockTableName(b, db, p))
		m := as(db, martin)
		interleave(b, "x-bare-lock+first", func(i int) {
			if err := m.First(&Account{}, i+1).Error; err != nil {
				b.Fatal(err)
			}
		}, func(i int) {
			x.lock(b, "bare", strconv.Itoa(i+1))
			if err := plain.First(&Account{}, i+1).Error; err != nil {
				b.Fatal(err)
			}
		})
	})
}
