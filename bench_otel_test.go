package offlinelock_test

// What the OpenTelemetry instrumentation costs (docs/observability.md).
// One plugin, one connection pool, one lock table: its instruments are
// swapped in for one call and out for the next (interleave), so the
// instrumented path runs against the very same uninstrumented one.
//
//   BenchmarkOtelLockedFirst: a First that locks an exclusive_read record
//     (its lock released between calls, untimed), with the no-op providers
//     (noop) and with the SDK's in-memory providers (sdk), against the
//     plugin without instruments; none is uninstrumented against itself,
//     the noise floor. Target: noop x-uninstrumented <= 1.02, and as many
//     allocations.
//   BenchmarkOtelVerifiedSave: a Save checked against the session's Write
//     lock and fenced before commit, the same ways.

import (
	"context"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
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

// eachOtelVariant runs fn per database and variant with the plugin, and
// on and off: functions that put the variant's instruments in the plugin
// (none: none) and take them out.
func eachOtelVariant(b *testing.B, fn func(b *testing.B, db *gorm.DB, p *offlinelock.Plugin, on, off func())) {
	eachBenchDB(b, func(b *testing.B, d database) {
		for _, v := range otelVariants {
			b.Run(v.name, func(b *testing.B) {
				db, p := setupModels(b, d, v.cfg(b))
				tel := offlinelock.InstrumentationOf(p)
				if v.name == "none" {
					tel = nil
				}
				fn(b, db, p, func() { offlinelock.SetInstrumentation(p, tel) }, func() { offlinelock.SetInstrumentation(p, nil) })
			})
		}
	})
}

func BenchmarkOtelLockedFirst(b *testing.B) {
	eachOtelVariant(b, func(b *testing.B, db *gorm.DB, p *offlinelock.Plugin, on, off func()) {
		seedAccounts(b, db, 64)
		m := as(db, martin)
		first := func(set func()) func(int) {
			return func(i int) {
				set()
				if err := m.First(&Account{}, i%64+1).Error; err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := p.ReleaseAll(db, martin.Session); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
		interleave(b, "x-uninstrumented", first(on), first(off))
		reportAllocs(b, first(on), first(off), nil)
	})
}

func BenchmarkOtelVerifiedSave(b *testing.B) {
	eachOtelVariant(b, func(b *testing.B, db *gorm.DB, p *offlinelock.Plugin, on, off func()) {
		for i := uint(1); i <= 64; i++ {
			if err := admin(db).Create(&Doc{ID: i, Title: "t"}).Error; err != nil {
				b.Fatal(err)
			}
			if _, err := p.Acquire(as(db, martin), &Doc{ID: i}, offlinelock.Write); err != nil {
				b.Fatal(err)
			}
		}
		m := as(db, martin)
		save := func(set func()) func(int) {
			return func(i int) {
				set()
				if err := m.Save(&Doc{ID: uint(i%64 + 1), Title: "saved"}).Error; err != nil {
					b.Fatal(err)
				}
			}
		}
		interleave(b, "x-uninstrumented", save(on), save(off))
		reportAllocs(b, save(on), save(off), nil)
	})
}
