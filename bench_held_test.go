package offlinelock_test

// Working under a lock one holds: the re-read and the save of a record the
// session holds, against the same GORM call without the plugin.
//
//   BenchmarkHeldFirst (b): a First by the session holding the record's
//     lock, with the session holding 1, 1,000 and 10,000 locks in all,
//     against a plain GORM First. Target: x-plain <= 1.2 at every count.
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
				b.ReportAllocs()
				interleave(b, "x-plain", func(int) {
					if err := m.First(&Account{}, 1).Error; err != nil {
						b.Fatal(err)
					}
				}, func(int) {
					if err := plain.First(&Account{}, 1).Error; err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	})
}

func BenchmarkVerifiedSave(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBs(b, d)
		for i := uint(1); i <= 64; i++ {
			if err := admin(db).Create(&Doc{ID: i, Title: "t"}).Error; err != nil {
				b.Fatal(err)
			}
			if _, err := p.Acquire(as(db, martin), &Doc{ID: i}, offlinelock.Write); err != nil {
				b.Fatal(err)
			}
		}
		m := as(db, martin)
		b.ReportAllocs()
		interleave(b, "x-plain", func(i int) {
			if err := m.Save(&Doc{ID: uint(i%64 + 1), Title: "ours"}).Error; err != nil {
				b.Fatal(err)
			}
		}, func(i int) {
			if err := plain.Save(&Doc{ID: uint(i%64 + 1), Title: "plain"}).Error; err != nil {
				b.Fatal(err)
			}
		})
	})
}
