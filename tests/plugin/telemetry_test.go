package plugin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// The seed 001 scenarios' models, on tables of their own.
type (
	OtCustomer = testkit.OtCustomer
	OtAddress  = testkit.OtAddress
	OtPolicy   = testkit.OtPolicy
)

// otel is a plugin recording into the SDK's in-memory reader and span
// recorder.
type otelRun struct {
	db     *gorm.DB
	p      *offlinelock.Plugin
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func setupOtel(t *testing.T, d database) *otelRun {
	r := &otelRun{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()); r.tp.Shutdown(context.Background()) })
	r.db, r.p = setup(t, d, offlinelock.Config{
		MeterProvider: mp, TracerProvider: r.tp, Strict: true,
		Authorize: func(context.Context, string, offlinelock.Lock) error { return nil },
	})
	models := []any{&OtCustomer{}, &OtAddress{}, &OtPolicy{}}
	require.NoError(t, r.db.Migrator().DropTable(models...))
	require.NoError(t, r.db.AutoMigrate(models...))
	t.Cleanup(func() { r.db.Migrator().DropTable(models...) })
	require.NoError(t, admin(r.db).Create(&OtCustomer{ID: 129, Name: "Acme Ltd", Credit: 5000,
		Addresses: []OtAddress{{ID: 301, City: "Portland, Oregon"}}}).Error)
	require.NoError(t, admin(r.db).Create(&OtCustomer{ID: 130, Name: "Beta plc"}).Error)
	require.NoError(t, admin(r.db).Create(&OtPolicy{ID: 129, Holder: "Acme Ltd"}).Error)
	return r
}

// TestTelemetryCountsTheSeedScenarios plays the seed 001 scenarios (lock
// refused, abandoned session, read/write and upgrade, coarse-grained lock,
// the save paused while its lock is taken over) plus a refusal of each
// other reason, a force release and a sweep, and asserts every count.
func TestTelemetryCountsTheSeedScenarios(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			r := setupOtel(t, d)
			paused := d.name != "sqlite" // SQLite's one writer: no takeover can happen during a save
			r.play(t, paused)
			r.assertCounts(t, d.name, paused)
		})
	}
}

func (r *otelRun) play(t *testing.T, paused bool) {
	db, p := r.db, r.p
	c := &OtCustomer{ID: 129}
	locked := func(err error) { t.Helper(); require.ErrorIs(t, err, offlinelock.ErrLocked) }

	// 2. Lock refused.
	_, err := p.Acquire(as(db, martin), c, offlinelock.Write)
	require.NoError(t, err)
	_, err = p.Acquire(as(db, david), c, offlinelock.Write)
	locked(err)
	locked(as(db, david).Model(c).Update("credit", 8000).Error)
	require.NoError(t, as(db, martin).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(c).Update("name", "Acme Group").Error; err != nil {
			return err
		}
		return p.Release(tx, c)
	}))
	require.ErrorIs(t, as(db, martin).Model(c).Update("name", "no lock").Error, offlinelock.ErrNotLocked)
	_, err = p.Acquire(as(db, david), c, offlinelock.Write)
	require.NoError(t, err)
	require.NoError(t, p.Release(as(db, david), c))

	// 3. Abandoned session: the lock expires and David takes it over.
	mine, err := p.Acquire(withTTL(db, martin, time.Second), c, offlinelock.Write)
	require.NoError(t, err)
	_, err = p.Acquire(as(db, david), c, offlinelock.Write)
	locked(err)
	waitPast(t, db, mine.ExpiresAt)
	_, err = p.Acquire(as(db, david), c, offlinelock.Write)
	require.NoError(t, err)
	locked(as(db, martin).Model(c).Update("name", "late").Error)
	n, err := p.ReleaseAll(db, david.Session)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	// 4. Read locks, a refused Write, an upgrade, a refused read.
	for _, o := range []offlinelock.Owner{martin, david} {
		require.NoError(t, as(db, o).First(&OtPolicy{}, 129).Error)
	}
	pol := &OtPolicy{ID: 129}
	_, err = p.Acquire(as(db, david), pol, offlinelock.Write)
	locked(err)
	require.NoError(t, p.Release(as(db, martin), pol))
	_, err = p.Acquire(as(db, david), pol, offlinelock.Write)
	require.NoError(t, err)
	locked(as(db, martin).First(&OtPolicy{}, 129).Error)
	require.NoError(t, p.Release(as(db, david), pol))

	// 5. Coarse-grained: the customer's lock covers its address.
	_, err = p.Acquire(as(db, martin), c, offlinelock.Write)
	require.NoError(t, err)
	_, err = p.Acquire(as(db, david), &OtAddress{ID: 301}, offlinelock.Write)
	locked(err)
	locked(as(db, david).Model(&OtAddress{ID: 301}).Update("city", "Seattle").Error)
	require.NoError(t, as(db, martin).Model(&OtAddress{ID: 301}).Update("city", "Salem").Error)

	// The other reasons: no owner, Strict.
	require.ErrorIs(t, db.First(&OtPolicy{}, 129).Error, offlinelock.ErrNoOwner)
	require.ErrorIs(t, as(db, martin).Exec("UPDATE ot_customers SET credit = 1").Error, offlinelock.ErrStrict)

	if paused {
		r.pausedSave(t)
	}

	// A force release, and a sweep of one expired lock.
	require.NoError(t, p.ForceRelease(db, "ot_customers", "129"))
	gone, err := p.Acquire(withTTL(db, martin, time.Second), &OtCustomer{ID: 999}, offlinelock.Write)
	require.NoError(t, err)
	waitPast(t, db, gone.ExpiresAt)
	swept, err := p.Sweep(db)
	require.NoError(t, err)
	require.EqualValues(t, 1, swept)
}

// pausedSave is the seed's save paused between its check and its commit
// while its lock expires and David takes it over: the fence fails it.
func (r *otelRun) pausedSave(t *testing.T) {
	db, p := r.db, r.p
	pauseBetweenCheckAndCommit(t, db)
	mine, err := p.Acquire(withTTL(db, martin, time.Second), &OtCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
	paused, resume := make(chan struct{}), make(chan struct{})
	ctx := context.WithValue(offlinelock.WithOwner(context.Background(), martin), pauseKey{}, func() {
		close(paused)
		<-resume
	})
	done := make(chan error, 1)
	go func() { done <- db.WithContext(ctx).Model(&OtCustomer{ID: 130}).Update("name", "late").Error }()
	<-paused
	waitPast(t, db, mine.ExpiresAt)
	_, err = p.Acquire(as(db, david), &OtCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
	close(resume)
	require.ErrorIs(t, <-done, offlinelock.ErrLocked)
}

func (r *otelRun) assertCounts(t *testing.T, dbName string, paused bool) {
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	m := metricsOf(rm)
	sys := map[string]string{"sqlite": "sqlite", "postgres": "postgresql", "mysql": "mysql"}[dbName]
	fence, takeovers, held := 0, 0, 4
	if paused {
		fence = 1
	}
	if dbName == "mysql" {
		takeovers = 2 // decided in Go; the one-statement grants of the others do not tell
		held = 1      // only the Read lock's: MySQL frees a Write lock without RETURNING
	}
	grantsExplicit := 7 + 2*fence
	for _, c := range []struct {
		name  string
		attrs map[string]string
		want  int64
	}{
		{"offlinelock.lock.grants", map[string]string{"db.system.name": sys, "mode": "explicit", "access": "write", "resource": "ot_customers"}, int64(grantsExplicit - 1)},
		{"offlinelock.lock.grants", map[string]string{"mode": "explicit", "access": "write", "resource": "ot_policies"}, 1},
		{"offlinelock.lock.grants", map[string]string{"mode": "implicit", "access": "read", "resource": "ot_policies"}, 2},
		{"offlinelock.lock.grants", nil, int64(grantsExplicit + 2)},
		{"offlinelock.lock.refusals", map[string]string{"mode": "explicit", "reason": "locked", "resource": "ot_customers"}, 3},
		{"offlinelock.lock.refusals", map[string]string{"mode": "explicit", "reason": "locked", "resource": "ot_policies"}, 1},
		{"offlinelock.lock.refusals", map[string]string{"mode": "implicit", "reason": "locked", "access": "write", "resource": "ot_customers"}, 3},
		{"offlinelock.lock.refusals", map[string]string{"mode": "implicit", "reason": "locked", "access": "read", "resource": "ot_policies"}, 1},
		{"offlinelock.lock.refusals", map[string]string{"reason": "not_locked"}, 1},
		{"offlinelock.lock.refusals", map[string]string{"reason": "no_owner", "resource": "ot_policies"}, 1},
		{"offlinelock.lock.refusals", map[string]string{"reason": "strict", "resource": "ot_customers"}, 1},
		{"offlinelock.lock.refusals", nil, 11},
		{"offlinelock.lock.upgrades", map[string]string{"resource": "ot_policies"}, 1},
		{"offlinelock.fence.failures", map[string]string{"resource": "ot_customers", "op": "update"}, int64(fence)},
		{"offlinelock.lock.releases", map[string]string{"kind": "release", "resource": "ot_customers"}, 2},
		{"offlinelock.lock.releases", map[string]string{"kind": "release", "resource": "ot_policies"}, 2},
		{"offlinelock.lock.releases", map[string]string{"kind": "release_all"}, 1},
		{"offlinelock.lock.releases", map[string]string{"kind": "expiry_takeover"}, int64(takeovers)},
		{"offlinelock.lock.releases", map[string]string{"kind": "force", "resource": "ot_customers"}, 1},
		{"offlinelock.lock.releases", map[string]string{"kind": "sweep"}, 1},
		{"offlinelock.sweep.deleted", map[string]string{"db.system.name": sys}, 1},
		{"offlinelock.lock.held.duration", nil, int64(held)},
		{"offlinelock.locks.live", map[string]string{"resource": "ot_customers"}, int64(fence)},
	} {
		assert.Equal(t, c.want, m.total(c.name, c.attrs), "%s %v", c.name, c.attrs)
	}
	assert.NotZero(t, m.total("offlinelock.statement.duration", map[string]string{"db.system.name": sys}), "latency recorded")
	r.assertSpans(t, sys)
}

// assertSpans checks the statements' spans: named for their operation,
// with db.system.name, never a session or a token; and that a call's spans are
// children of the caller's span, which carries the decision.
func (r *otelRun) assertSpans(t *testing.T, sys string) {
	ended := r.spans.Ended()
	require.NotEmpty(t, ended)
	for _, s := range ended {
		assert.Regexp(t, `^offlinelock (SELECT|INSERT|UPDATE|DELETE|WITH|SAVEPOINT|OTHER)$`, s.Name())
		assert.Contains(t, s.Attributes(), attribute.String("db.system.name", sys), s.Name())
		for _, a := range s.Attributes() {
			assert.NotContains(t, []string{martin.Session, david.Session}, a.Value.String(), "no session in %s", s.Name())
		}
	}

	ctx, req := r.tp.Tracer("test").Start(offlinelock.WithOwner(context.Background(), david), "request")
	before := len(r.spans.Ended())
	_, err := r.p.Acquire(r.db.WithContext(ctx), &OtCustomer{ID: 131}, offlinelock.Write)
	require.NoError(t, err)
	_, err = r.p.Acquire(r.db.WithContext(offlinelock.WithOwner(ctx, martin)), &OtCustomer{ID: 131}, offlinelock.Write)
	require.True(t, errors.Is(err, offlinelock.ErrLocked))
	req.End()
	var children int
	for _, s := range r.spans.Ended()[before:] {
		if s.Name() == "request" {
			var events []string
			for _, e := range s.Events() {
				events = append(events, e.Name)
				assert.Contains(t, e.Attributes, attribute.Int("offlinelock.keys", 1))
			}
			assert.Equal(t, []string{"offlinelock.granted", "offlinelock.refused"}, events)
			continue
		}
		children++
		assert.Equal(t, req.SpanContext().SpanID(), s.Parent().SpanID(), "%s is a child of the request", s.Name())
	}
	assert.NotZero(t, children, "the statements have spans")
}

// metricSet is collected metrics by name.
type metricSet map[string]metricdata.Aggregation

func metricsOf(rm metricdata.ResourceMetrics) metricSet {
	m := metricSet{}
	for _, sm := range rm.ScopeMetrics {
		for _, x := range sm.Metrics {
			m[x.Name] = x.Data
		}
	}
	return m
}

// total sums the points of name whose attributes include attrs: a counter's
// values, a gauge's values, a histogram's counts.
func (m metricSet) total(name string, attrs map[string]string) int64 {
	match := func(set attribute.Set) bool {
		for k, v := range attrs {
			if got, ok := set.Value(attribute.Key(k)); !ok || got.String() != v {
				return false
			}
		}
		return true
	}
	var n int64
	switch d := m[name].(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				n += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				n += p.Value
			}
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				n += int64(p.Count)
			}
		}
	}
	return n
}

// TestTelemetryCountsRowsAsALoad: a Rows() of a read_write model takes a
// Read lock, and is counted as one (mode implicit, access read); its
// refusal is a refused read, not a write.
func TestTelemetryCountsRowsAsALoad(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			r := setupOtel(t, d)
			rows, err := as(r.db, martin).Model(&OtPolicy{}).Where("id = ?", 129).Rows()
			require.NoError(t, err)
			require.NoError(t, rows.Close())
			held, err := r.p.Holders(r.db, &OtPolicy{ID: 129})
			require.NoError(t, err)
			require.Len(t, held, 1)
			require.Equal(t, offlinelock.Read, held[0].Access)

			require.NoError(t, admin(r.db).Create(&OtPolicy{ID: 130, Holder: "Beta plc"}).Error)
			_, err = r.p.Acquire(as(r.db, david), &OtPolicy{ID: 130}, offlinelock.Write)
			require.NoError(t, err)
			_, err = as(r.db, martin).Model(&OtPolicy{}).Where("id = ?", 130).Rows()
			require.ErrorIs(t, err, offlinelock.ErrLocked)

			var rm metricdata.ResourceMetrics
			require.NoError(t, r.reader.Collect(context.Background(), &rm))
			m := metricsOf(rm)
			implicit := func(access string) map[string]string {
				return map[string]string{"mode": "implicit", "access": access, "resource": "ot_policies"}
			}
			assert.Equal(t, int64(1), m.total("offlinelock.lock.grants", implicit("read")), "the Rows' Read lock")
			assert.Zero(t, m.total("offlinelock.lock.grants", implicit("write")))
			assert.Equal(t, int64(1), m.total("offlinelock.lock.refusals", implicit("read")), "the refused Rows is a refused read")
			assert.Zero(t, m.total("offlinelock.lock.refusals", implicit("write")))
		})
	}
}
