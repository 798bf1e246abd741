package offlinelock_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// BenchmarkGrantGuardCheck is what "no guard, no grant" adds to every
// grant while the coverage is current (coverage.go): no statement, an
// atomic load and a map read. Compare with BenchmarkAcquireRelease's
// ns/op for the grant it rides in.
func BenchmarkGrantGuardCheck(b *testing.B) {
	for _, d := range serverDatabases() {
		b.Run(d.name, func(b *testing.B) {
			db, p := setup(b, d, offlinelock.Config{})
			require.NoError(b, db.Migrator().DropTable(&NgPart{}, &NgRoot{}))
			require.NoError(b, db.AutoMigrate(&NgRoot{}, &NgPart{}))
			b.Cleanup(func() { db.Migrator().DropTable(&NgPart{}, &NgRoot{}) })
			_, err := p.Acquire(as(db, martin), &NgRoot{ID: 1}, offlinelock.Write)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if err := offlinelock.CheckGuarded(p, db, "ng_roots"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
