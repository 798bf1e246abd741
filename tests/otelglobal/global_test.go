// Package otelglobal tests that offlinelock reports to OpenTelemetry's
// global providers when Config names none. It is a package of its own so
// that setting the global providers touches no other test's process.
package otelglobal

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

type Customer struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name string
}

// TestGlobalProvidersByDefault: a plugin made before the application sets
// its global providers, with none in Config, reports to them once they are
// set: OpenTelemetry's global delegates forward to the providers set later.
func TestGlobalProvidersByDefault(t *testing.T) {
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(t.TempDir(), "t.db"))), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	p := offlinelock.New(offlinelock.Config{}) // before the providers are set
	require.NoError(t, db.Use(p))
	require.NoError(t, db.AutoMigrate(&Customer{}))

	reader, spans := sdkmetric.NewManualReader(), tracetest.NewSpanRecorder()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { mp.Shutdown(context.Background()); tp.Shutdown(context.Background()) })
	otel.SetMeterProvider(mp)
	otel.SetTracerProvider(tp)

	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	owner := offlinelock.WithOwner(ctx, offlinelock.Owner{Session: "S1", User: "martin"})
	_, err = p.Acquire(db.WithContext(owner), &Customer{ID: 129}, offlinelock.Write)
	require.NoError(t, err)
	span.End()

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	grants := int64(0)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "offlinelock.lock.grants" {
				for _, dp := range sum.DataPoints {
					grants += dp.Value
				}
			}
		}
	}
	assert.EqualValues(t, 1, grants, "the grant reached the global meter provider")
	statements := 0
	for _, s := range spans.Ended() {
		if s.Parent().SpanID() == span.SpanContext().SpanID() && s.Name() != "request" {
			statements++
		}
	}
	assert.Positive(t, statements, "the grant's statements are spans under the request, on the global tracer provider")
}
