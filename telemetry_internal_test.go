package offlinelock

import (
	"context"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// BenchmarkOtelStatementOverhead is what the instrumentation adds to one
// lock-table statement, the statement itself left out: finding the
// plugin's instruments, the span and the latency record, with the no-op
// providers (noop) and the global ones with no SDK set (global). The
// figure to set beside a statement's round trip (docs/observability.md).
func BenchmarkOtelStatementOverhead(b *testing.B) {
	db, err := gorm.Open(sqlite.Open(SQLiteDSN(b.TempDir()+"/x.db")), &gorm.Config{Logger: logger.Discard, DryRun: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name string
		cfg  Config
	}{
		{"noop", Config{MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()}},
		{"global", Config{}},
	} {
		b.Run(v.name, func(b *testing.B) {
			db := db.Session(&gorm.Session{NewDB: true})
			db.Config = &gorm.Config{Dialector: db.Dialector, Plugins: map[string]gorm.Plugin{"offlinelock": New(v.cfg)}}
			obs := observerOf(db)
			const q = "SELECT 1 FROM offline_locks WHERE resource = ?"
			b.ReportAllocs()
			for b.Loop() {
				ctx, started := obs.StatementStart(context.Background(), q)
				obs.StatementEnd(ctx, started, q, time.Time{}, 1, nil)
			}
		})
	}
}
