package offlinelock_test

// Working under a lock one holds: the re-read and the save of a record the
// session holds, against the same GORM call without the plugin.
//
//   BenchmarkHeldFirst (b): a First by the session holding the record's
//     lock, with the session holding 1, 1,000 and 10,000 locks in all,
//     against a plain GORM First. Target: x-plain <= 1.2 at every count.
//   BenchmarkHeldFirstStatement (b, its SQL alone): the held First's one
//     statement (the SELECT with its EXISTS on the lock row) sent raw
//     through database/sql, against the plain SELECT sent raw: what the
//     database pays for the check. PostgreSQL only.
//   BenchmarkHeldFirstOverGORM (b, the plugin's share): the held First,
//     against plain GORM sending its very statement with the same
//     arguments (Raw + Scan): what the plugin's own Go work adds.
//     PostgreSQL only.
//   BenchmarkVerifiedSave (c): a Save checked against the session's Write
//     lock and fenced before commit, against a plain GORM Save. Target:
//     x-plain <= 1.1.

import (
	"strconv"
	"testing"
	"time"

	"github.com/offlinelock/offlinelock"
)

func BenchmarkHeldFirst(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBs(b, d)
		seedAccounts(b, db, 1)
		table := lockTableName(b, db, p)
		m := as(db, martin)
		if err := m.First(&Account{}, 1).Error; err != nil { // Martin holds account 1
			b.Fatal(err)
		}
		held := 1
		for _, n := range []int{1, 1_000, 10_000} {
			fill(b, db, table, "filler-"+strconv.Itoa(n), martin.Session, n-held, time.Hour)
			held = n
			b.Run("held-"+strconv.Itoa(n), func(b *testing.B) {
				held := func(int) {
					if err := m.First(&Account{}, 1).Error; err != nil {
						b.Fatal(err)
					}
				}
				plainFirst := func(int) {
					if err := plain.First(&Account{}, 1).Error; err != nil {
						b.Fatal(err)
					}
				}
				interleave(b, "x-plain", held, plainFirst)
				reportAllocs(b, held, plainFirst, nil)
			})
		}
	})
}

func BenchmarkHeldFirstOverGORM(b *testing.B) {
	d := database{"postgres", openPostgres}
	db, plain, _ := benchDBs(b, d)
	seedAccounts(b, db, 1)
	m := as(db, martin)
	load := func() {
		if err := m.First(&Account{}, 1).Error; err != nil {
			b.Fatal(err)
		}
	}
	load() // Martin holds account 1
	overGORM(b, plain, db, "EXISTS", load, nil)
}

// BenchmarkVerifiedSave: the holder's Save through the plugin, on the
// guarded table, against a plain Save on an unguarded twin of it.
func BenchmarkVerifiedSave(b *testing.B) { verifiedSave(b, offlinelock.Config{}) }

// BenchmarkVerifiedSaveGuardOff: the same with the database guard off
// (Config.DisableGuard): what the guard's triggers cost the holder's Save,
// beside BenchmarkVerifiedSave.
func BenchmarkVerifiedSaveGuardOff(b *testing.B) {
	verifiedSave(b, offlinelock.Config{DisableGuard: true})
}

func verifiedSave(b *testing.B, cfg offlinelock.Config) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBsWith(b, d, cfg)
		const twin = "bench_docs_unguarded"
		unguardedTwin(b, db, plain, twin, 64)
		for i := uint(1); i <= 64; i++ {
			if _, err := p.Acquire(as(db, martin), &Doc{ID: i}, offlinelock.Write); err != nil {
				b.Fatal(err)
			}
		}
		m := as(db, martin)
		ours := func(i int) {
			if err := m.Save(&Doc{ID: uint(i%64 + 1), Title: "ours"}).Error; err != nil {
				b.Fatal(err)
			}
		}
		theirs := func(i int) {
			if err := plain.Table(twin).Save(&Doc{ID: uint(i%64 + 1), Title: "plain"}).Error; err != nil {
				b.Fatal(err)
			}
		}
		interleave(b, "x-plain", ours, theirs)
		reportAllocs(b, ours, theirs, nil)
	})
}

func BenchmarkHeldFirstStatement(b *testing.B) {
	db, plain, p := benchDBs(b, database{"postgres", openPostgres})
	seedAccounts(b, db, 1)
	table := lockTableName(b, db, p)
	if err := as(db, martin).First(&Account{}, 1).Error; err != nil { // Martin holds account 1
		b.Fatal(err)
	}
	sqlDB, err := plain.DB()
	if err != nil {
		b.Fatal(err)
	}
	held := `SELECT * FROM "accounts" WHERE "accounts"."id" = $1 AND (EXISTS (SELECT 1 FROM ` + table +
		` WHERE resource = $2 AND lock_id = $3 AND session IS NOT DISTINCT FROM $4 AND holder = '' AND access = 'write'` +
		` AND expires_at > clock_timestamp() + $5 * interval '1 microsecond')) ORDER BY "accounts"."id" LIMIT 1`
	bare := `SELECT * FROM "accounts" WHERE "accounts"."id" = $1 ORDER BY "accounts"."id" LIMIT 1`
	interleave(b, "x-plain", func(int) {
		var a Account
		if err := sqlDB.QueryRow(held, 1, "accounts", "1", martin.Session, int64(15*time.Minute/time.Microsecond)).Scan(&a.ID, &a.Name, &a.Credit); err != nil {
			b.Fatal(err)
		}
	}, func(int) {
		var a Account
		if err := sqlDB.QueryRow(bare, 1).Scan(&a.ID, &a.Name, &a.Credit); err != nil {
			b.Fatal(err)
		}
	})
}
