package offlinelock_test

import (
	"strconv"
	"testing"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// unguardedTwin makes table twin, with Doc's columns and no guard, holding
// docs 1..n as docs does: what a write costs without the guard.
func unguardedTwin(b *testing.B, db, plain *gorm.DB, twin string, n int) {
	b.Helper()
	if err := plain.Migrator().DropTable(twin); err != nil {
		b.Fatal(err)
	}
	if err := plain.Table(twin).AutoMigrate(&Doc{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { plain.Migrator().DropTable(twin) })
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{ID: uint(i + 1), Title: "t", Body: "b"}
	}
	if err := admin(db).CreateInBatches(&docs, 500).Error; err != nil {
		b.Fatal(err)
	}
	if err := plain.Table(twin).CreateInBatches(&docs, 500).Error; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkGuard: writes of free records by a client without the plugin,
// on the guarded docs table against the same writes on an unguarded twin,
// interleaved. PostgreSQL and MySQL/MariaDB (SQLite has no guard).
func BenchmarkGuard(b *testing.B) {
	for _, d := range serverDatabases() {
		b.Run(d.name, func(b *testing.B) {
			db, plain, p := benchDBs(b, d)
			const twin = "bench_docs_unguarded"
			unguardedTwin(b, db, plain, twin, 1000)
			if _, err := p.Acquire(as(db, martin), &Doc{ID: 1001}, offlinelock.Write); err != nil {
				b.Fatal(err) // the lock table is not empty: a lock on a record no write touches
			}
			if err := p.InstallGuard(db); err != nil {
				b.Fatal(err)
			}
			b.Run("Update", func(b *testing.B) {
				ours := func(i int) {
					if err := plain.Model(&Doc{ID: uint(i%1000 + 1)}).Update("title", "g").Error; err != nil {
						b.Fatal(err)
					}
				}
				theirs := func(i int) {
					if err := plain.Table(twin).Where("id = ?", i%1000+1).Update("title", "u").Error; err != nil {
						b.Fatal(err)
					}
				}
				interleave(b, "x-unguarded", ours, theirs)
				reportAllocs(b, ours, theirs, nil)
			})
			b.Run("Updates1000", func(b *testing.B) {
				ours := func(i int) {
					if err := plain.Model(&Doc{}).Where("id <= ?", 1000).Updates(map[string]any{"body": strconv.Itoa(i)}).Error; err != nil {
						b.Fatal(err)
					}
				}
				theirs := func(i int) {
					if err := plain.Table(twin).Where("id <= ?", 1000).Updates(map[string]any{"body": strconv.Itoa(i)}).Error; err != nil {
						b.Fatal(err)
					}
				}
				interleave(b, "x-unguarded", ours, theirs)
			})
		})
	}
}
