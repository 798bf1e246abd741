package plugin_test

// What the OpenTelemetry instrumentation costs (docs/observability.md).
// Two plugins on one database and one lock table: ours with the variant's
// providers, theirs with the no-op providers, called alternately
// (interleave), so the instrumented path runs against the same path
// instrumented by no-ops. (These benchmarks live in the tests module, which
// may require OpenTelemetry's SDK; the library's module does not.)
//
//   BenchmarkOtelLockedFirst: a First that locks an exclusive_read record
//     (its lock released between calls, untimed), with the SDK's in-memory
//     providers (sdk), against the no-op providers; noop is no-op against
//     no-op, the noise floor; none is the global providers (no-ops until
//     an application sets its own) against no-op. Target: sdk's cost shown,
//     noop x-noop within the noise.
//   BenchmarkOtelVerifiedSave: a Save checked against the session's Write
//     lock and fenced before commit, the same ways.

import (
	"context"
	"log/slog"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// otelVariant is one way of instrumenting the plugin; cfg returns nil
// providers for none.
type otelVariant struct {
	name string
	cfg  func(b *testing.B) offlinelock.Config
}

var otelVariants = []otelVariant{
	{"none", func(*testing.B) offlinelock.Config { return offlinelock.Config{} }},
	{"noop", func(*testing.B) offlinelock.Config {
		return offlinelock.Config{MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()}
	}},
	{"sdk", func(b *testing.B) offlinelock.Config {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
		b.Cleanup(func() { mp.Shutdown(context.Background()); tp.Shutdown(context.Background()) })
		return offlinelock.Config{MeterProvider: mp, TracerProvider: tp}
	}},
}

// side is one of the two plugins a benchmark compares: its handle on the
// database, its plugin, the session it works as and the records it uses
// (ids from+1 … from+64), so that neither sees the other's locks.
type side struct {
	db    *gorm.DB
	p     *offlinelock.Plugin
	owner offlinelock.Owner
	from  int
}

// eachOtelVariant runs fn per database and variant with two sides on one
// database and lock table: ours, whose plugin has the variant's providers,
// as martin on records 1-64; theirs, whose plugin has the no-op providers,
// as david on records 65-128.
func eachOtelVariant(b *testing.B, fn func(b *testing.B, ours, theirs side)) {
	eachBenchDB(b, func(b *testing.B, d database) {
		for _, v := range otelVariants {
			b.Run(v.name, func(b *testing.B) {
				cfg := v.cfg(b)
				cfg.Table = "ol_" + testkit.RandomHex(6)
				db, p := setupModels(b, d, cfg)
				other, err := gorm.Open(db.Dialector, &gorm.Config{Logger: logger.Discard})
				if err != nil {
					b.Fatal(err)
				}
				sqlDB, _ := other.DB()
				b.Cleanup(func() { sqlDB.Close() })
				q := offlinelock.New(offlinelock.Config{Table: cfg.Table, Logger: slog.New(slog.DiscardHandler),
					MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()})
				if err := other.Use(q); err != nil {
					b.Fatal(err)
				}
				fn(b, side{db, p, martin, 0}, side{other, q, david, 64})
			})
		}
	})
}

func BenchmarkOtelLockedFirst(b *testing.B) {
	eachOtelVariant(b, func(b *testing.B, ours, theirs side) {
		seedAccounts(b, ours.db, 128)
		first := func(s side) func(int) {
			m := as(s.db, s.owner)
			return func(i int) {
				if err := m.First(&Account{}, s.from+i%64+1).Error; err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := s.p.ReleaseAll(s.db, s.owner.Session); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
		interleave(b, "x-noop", first(ours), first(theirs))
		reportAllocs(b, first(ours), first(theirs), nil)
	})
}

func BenchmarkOtelVerifiedSave(b *testing.B) {
	eachOtelVariant(b, func(b *testing.B, ours, theirs side) {
		for _, s := range []side{ours, theirs} {
			for i := uint(s.from + 1); i <= uint(s.from+64); i++ {
				if err := admin(ours.db).Create(&Doc{ID: i, Title: "t"}).Error; err != nil {
					b.Fatal(err)
				}
				if _, err := s.p.Acquire(as(s.db, s.owner), &Doc{ID: i}, offlinelock.Write); err != nil {
					b.Fatal(err)
				}
			}
		}
		save := func(s side) func(int) {
			m := as(s.db, s.owner)
			return func(i int) {
				if err := m.Save(&Doc{ID: uint(s.from + i%64 + 1), Title: "saved"}).Error; err != nil {
					b.Fatal(err)
				}
			}
		}
		interleave(b, "x-noop", save(ours), save(theirs))
		reportAllocs(b, save(ours), save(theirs), nil)
	})
}
