package offlinelock_test

// What the OpenTelemetry instrumentation costs (docs/observability.md).
//
//   BenchmarkOtelLockedFirst: a First that locks an exclusive_read record
//     (its lock released between runs, untimed), on a plugin with the
//     no-op providers (noop) and with the SDK's in-memory providers (sdk),
//     against the same plugin uninstrumented. Target: noop x-uninstrumented
//     <= 1.02 (within noise).
//   BenchmarkOtelVerifiedSave: a Save checked against the session's Write
//     lock and fenced before commit, the same three ways.

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

	"github.com/offlinelock/offlinelock"
)

// otelVariant is one way of instrumenting the plugin.
type otelVariant struct {
	name string
	cfg  func(b *testing.B) offlinelock.Config
}

var otelVariants = []otelVariant{
	// A/A: uninstrumented against uninstrumented, the noise floor.
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

// otelBenchDBs opens d twice, alike: with an uninstrumented plugin and
// with one instrumented as v says, each on a lock table of its own, over
// the same model tables (on SQLite, two handles on one file).
func otelBenchDBs(b *testing.B, d database, v otelVariant) (bare, ours *gorm.DB, pBare, pOurs *offlinelock.Plugin) {
	off := offlinelock.Config{MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()}
	base, _ := setupModels(b, d, off)
	bare, pBare = attachPlugin(b, d, base, off)
	offlinelock.WithoutTelemetry(pBare)
	ours, pOurs = attachPlugin(b, d, base, v.cfg(b))
	if v.name == "none" {
		offlinelock.WithoutTelemetry(pOurs)
	}
	return bare, ours, pBare, pOurs
}

// attachPlugin opens base's database again, with a plugin for cfg on a
// lock table of its own.
func attachPlugin(b *testing.B, d database, base *gorm.DB, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	if d.name != "sqlite" {
		return setup(b, d, cfg)
	}
	db := openSQLiteLike(b, base)
	cfg.Table, cfg.Logger = "ol_"+randomHex(6), slog.New(slog.DiscardHandler)
	p := offlinelock.New(cfg)
	if err := db.Use(p); err != nil {
		b.Fatal(err)
	}
	return db, p
}

func BenchmarkOtelLockedFirst(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		for _, v := range otelVariants {
			b.Run(v.name, func(b *testing.B) {
				bare, ours, pBare, pOurs := otelBenchDBs(b, d, v)
				seedAccounts(b, bare, 64)
				first := func(db *gorm.DB, p *offlinelock.Plugin) func(int) {
					m := as(db, martin)
					return func(i int) {
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
				o, t := first(ours, pOurs), first(bare, pBare)
				interleave(b, "x-uninstrumented", o, t)
				reportAllocs(b, o, t, nil)
			})
		}
	})
}

func BenchmarkOtelVerifiedSave(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		for _, v := range otelVariants {
			b.Run(v.name, func(b *testing.B) {
				bare, ours, pBare, pOurs := otelBenchDBs(b, d, v)
				for i := uint(1); i <= 64; i++ {
					if err := admin(bare).Create(&Doc{ID: i, Title: "t"}).Error; err != nil {
						b.Fatal(err)
					}
				}
				save := func(db *gorm.DB, p *offlinelock.Plugin) func(int) {
					for i := uint(1); i <= 64; i++ {
						if _, err := p.Acquire(as(db, martin), &Doc{ID: i}, offlinelock.Write); err != nil {
							b.Fatal(err)
						}
					}
					m := as(db, martin)
					return func(i int) {
						if err := m.Save(&Doc{ID: uint(i%64 + 1), Title: "saved"}).Error; err != nil {
							b.Fatal(err)
						}
					}
				}
				o, t := save(ours, pOurs), save(bare, pBare)
				interleave(b, "x-uninstrumented", o, t)
				reportAllocs(b, o, t, nil)
			})
		}
	})
}
