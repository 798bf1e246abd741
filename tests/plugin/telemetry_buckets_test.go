package plugin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/offlinelock/offlinelock"
)

// TestStatementBucketsFitLockStatements: the statement-latency histogram
// advises buckets from 0.5 ms to 5 s, which the SDK (and so every
// exporter wired to it, Prometheus's included) uses: OpenTelemetry's
// defaults (0 to 10,000 s) put every lock statement in the first bucket.
func TestStatementBucketsFitLockStatements(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { mp.Shutdown(context.Background()) })
			db, p := setupModels(t, d, offlinelock.Config{MeterProvider: mp})
			_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, p.Release(as(db, martin), &Doc{ID: 1}))

			var rm metricdata.ResourceMetrics
			require.NoError(t, reader.Collect(context.Background(), &rm))
			h, ok := metricsOf(rm)["offlinelock.statement.duration"].(metricdata.Histogram[float64])
			require.True(t, ok, "the statement histogram is recorded")
			require.NotEmpty(t, h.DataPoints)
			for _, pt := range h.DataPoints {
				assert.Equal(t, []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}, pt.Bounds)
				require.Len(t, pt.BucketCounts, len(pt.Bounds)+1)
				assert.Zero(t, pt.BucketCounts[len(pt.Bounds)], "no lock statement here takes over 5 s")
				assert.Positive(t, pt.Count)
			}
		})
	}
}
