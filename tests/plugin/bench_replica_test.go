package plugin_test

import (
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// BenchmarkResolver: the locked First and the holder's re-read through
// dbresolver (a hot standby as its replica), which the plugin sends back
// to the source, against the same calls on GORM opened on the primary
// alone, interleaved. PostgreSQL, on scripts/pg-pair's instances.
func BenchmarkResolver(b *testing.B) {
	pp := testkit.StartPGPair(b)
	direct := testkit.OpenPG(b, pp.PrimaryDSN())
	routed := testkit.OpenPG(b, pp.PrimaryDSN())
	if err := routed.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{postgres.Open(pp.StandbyDSN())}})); err != nil {
		b.Fatal(err)
	}
	pd, pr := withPlugin(b, direct, "ol_bench_resolver"), withPlugin(b, routed, "ol_bench_resolver")
	if err := direct.AutoMigrate(&Account{}); err != nil {
		b.Fatal(err)
	}
	seedAccounts(b, direct, 64)
	b.Run("LockedFirst", func(b *testing.B) {
		first := func(db *gorm.DB, p *offlinelock.Plugin) func(int) {
			return func(i int) {
				if err := as(db, martin).First(&Account{}, i%64+1).Error; err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := p.ReleaseAll(direct, martin.Session); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
		interleave(b, "x-without-resolver", first(routed, pr), first(direct, pd))
	})
	b.Run("HeldFirst", func(b *testing.B) {
		if err := as(direct, martin).First(&Account{}, 1).Error; err != nil { // martin holds account 1
			b.Fatal(err)
		}
		held := func(db *gorm.DB) func(int) {
			return func(int) {
				if err := as(db, martin).First(&Account{}, 1).Error; err != nil {
					b.Fatal(err)
				}
			}
		}
		interleave(b, "x-without-resolver", held(routed), held(direct))
	})
}
