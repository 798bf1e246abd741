package offlinelock

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"gorm.io/gorm"
)

// instrumentationName names the plugin's meter and tracer.
const instrumentationName = "github.com/offlinelock/offlinelock"

// Attribute values of the plugin's metrics (docs/observability.md).
const (
	modeExplicit = "explicit" // Acquire
	modeImplicit = "implicit" // the callbacks: a load, a write
	modeHTTP     = "http"     // a decision taken over HTTP (httplock's Middleware), told with Refused

	reasonLocked    = "locked"     // another session holds a conflicting lock
	reasonNotLocked = "not_locked" // a write the session holds no Write lock for
	reasonNoOwner   = "no_owner"
	reasonStrict    = "strict"

	kindRelease        = "release"
	kindReleaseAll     = "release_all"
	kindExpiryTakeover = "expiry_takeover"
	kindForce          = "force"
	kindTakeOver       = "takeover"
	kindSweep          = "sweep"
)

// telemetry holds the plugin's OpenTelemetry instruments, made once in New
// (not Initialize: New has the Config, and a plugin called before, or
// without, db.Use must not find nil instruments).
// Every method is one line at the site that decides, and does nothing
// measurable when the providers are no-ops: attributes are built only for
// an instrument that is enabled and a span that is recording. A nil
// *telemetry (a conn on a database the plugin is not registered on) does
// nothing.
type telemetry struct {
	tracer   trace.Tracer // nil for the no-op provider: no span, no context per statement
	client   []trace.SpanStartOption
	grants   metric.Int64Counter
	refusals metric.Int64Counter
	upgrades metric.Int64Counter
	fences   metric.Int64Counter
	releases metric.Int64Counter
	held     metric.Float64Histogram
	latency  metric.Float64Histogram
	swept    metric.Int64Counter
	live     metric.Int64ObservableGauge
	unguard  metric.Int64ObservableGauge
	meter    metric.Meter
}

// newTelemetry makes the instruments on mp and tp. An instrument the
// provider refuses (it never does for the SDK's or the no-op providers) is
// reported as an error.
func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider) (*telemetry, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	m := mp.Meter(instrumentationName)
	t := &telemetry{meter: m, client: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}}
	if _, off := tp.(tracenoop.TracerProvider); !off {
		t.tracer = tp.Tracer(instrumentationName)
	}
	var errs [10]error
	t.grants, errs[0] = m.Int64Counter("offlinelock.lock.grants", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks granted, by resource, mode (explicit Acquire or implicit load) and access."))
	t.refusals, errs[1] = m.Int64Counter("offlinelock.lock.refusals", metric.WithUnit("{statement}"),
		metric.WithDescription("Lock requests and writes refused, by resource, mode, access and reason."))
	t.upgrades, errs[2] = m.Int64Counter("offlinelock.lock.upgrades", metric.WithUnit("{lock}"),
		metric.WithDescription("Read locks upgraded to Write by their only reader."))
	t.fences, errs[3] = m.Int64Counter("offlinelock.fence.failures", metric.WithUnit("{statement}"),
		metric.WithDescription("Writes refused at the fence: the lock was lost between the check and the commit."))
	t.releases, errs[4] = m.Int64Counter("offlinelock.lock.releases", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks ended, by kind: release, release_all, expiry_takeover, force, sweep (rows)."))
	t.held, errs[5] = m.Float64Histogram("offlinelock.lock.held.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a lock was held when its holder released it."))
	t.latency, errs[6] = m.Float64Histogram("offlinelock.statement.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the plugin's own lock-table statements."),
		metric.WithExplicitBucketBoundaries(statementBuckets...))
	t.swept, errs[7] = m.Int64Counter("offlinelock.sweep.deleted", metric.WithUnit("{row}"),
		metric.WithDescription("Expired lock rows the sweeper deleted."))
	t.live, errs[8] = m.Int64ObservableGauge("offlinelock.locks.live", metric.WithUnit("{lock}"),
		metric.WithDescription("Live locks by resource, read from the lock table at each collection."))
	t.unguard, errs[9] = m.Int64ObservableGauge("offlinelock.guard.unguarded", metric.WithUnit("{table}"),
		metric.WithDescription("Tables that can hold rows of lockable records and that the database guard does not cover, as last shown (grants of their records are refused)."))
	return t, errors.Join(errs[:]...)
}

// statementBuckets are the bucket boundaries, in seconds, that
// offlinelock.statement.duration advises: lock-table statements take
// from about half a millisecond to a few seconds (a wait for a busy
// SQLite file), where OpenTelemetry's default boundaries (0 to 10,000 s)
// would put nearly every statement in the first of them. The SDK, and so
// every exporter wired to it (Prometheus, OTLP), uses them unless a View
// sets others.
var statementBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// dbSystem is the OpenTelemetry db.system.name of db's database, spelt as
// go-gorm/opentelemetry spells it.
func dbSystem(db *gorm.DB) attribute.KeyValue {
	return attribute.String("db.system.name", lockstore.System(db.Dialector))
}

// storeObserver is what one store tells the plugin's telemetry (the
// store's lockstore.Observer, handed to it in New): its statements' spans
// and latency, and the upgrades and takeovers its grants make. It reads
// the plugin's instruments at each call, so a test can swap them.
type storeObserver struct {
	p      *Plugin
	system attribute.KeyValue
}

// observerOf is the Observer of db's store, for the plugin's own
// statements on db (savepoints, reads of the application's rows); nil
// where the plugin is not registered on db.
func observerOf(db *gorm.DB) lockstore.Observer {
	if db == nil || db.Config == nil {
		return nil
	}
	p, ok := db.Config.Plugins["offlinelock"].(*Plugin)
	if !ok {
		return nil
	}
	t, err := p.storeFor(db)
	if err != nil {
		return nil
	}
	return t.obs
}

// StatementStart starts the span of one lock-table statement, a child of
// the caller's span in ctx.
func (o *storeObserver) StatementStart(ctx context.Context, query string) (context.Context, any) {
	t := o.p.tel
	if t == nil || t.tracer == nil || ctx.Value(spanLogCtx{}) != nil && deferred(ctx) != nil {
		return ctx, nil
	}
	ctx, span := t.tracer.Start(ctx, spanName(query), t.client...)
	return ctx, span
}

// StatementEnd ends the span StatementStart began and records the latency.
// The SQL's arguments are never attributes: they hold session ids and
// tokens.
func (o *storeObserver) StatementEnd(ctx context.Context, started any, query string, begin time.Time, rows int64, err error) {
	t := o.p.tel
	if t == nil {
		return
	}
	if span, ok := started.(trace.Span); ok {
		if span.IsRecording() {
			span.SetAttributes(statementAttrs(o.system, query, rows)...)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, "statement failed")
			}
		}
		span.End()
	} else if t.tracer != nil && ctx.Value(spanLogCtx{}) != nil {
		if l := deferred(ctx); l != nil {
			l.keep(pendingSpan{name: spanName(query), begin: begin, end: time.Now(), attrs: statementAttrs(o.system, query, rows), err: err})
		}
	}
	if t.latency.Enabled(ctx) {
		t.latency.Record(ctx, time.Since(begin).Seconds(), metric.WithAttributes(o.system, attribute.String("db.operation.name", sqlOp(query))))
	}
}

// Upgraded counts a Read lock its only reader upgraded to Write.
func (o *storeObserver) Upgraded(ctx context.Context, resource string) {
	if t := o.p.tel; t != nil && t.upgrades.Enabled(ctx) {
		t.upgrades.Add(ctx, 1, metric.WithAttributes(o.system, attribute.String("resource", resource)))
	}
}

// TakenOver counts a grant of a record whose lock had expired.
func (o *storeObserver) TakenOver(ctx context.Context, resource string) {
	o.p.tel.released(ctx, o.system, kindExpiryTakeover, resource, 1)
}

// statementAttrs are the attributes of a lock-table statement's span.
func statementAttrs(sys attribute.KeyValue, query string, rows int64) []attribute.KeyValue {
	return []attribute.KeyValue{sys, attribute.String("db.operation.name", sqlOp(query)),
		attribute.Int64("db.response.returned_rows", rows)}
}

// sqlOp is the statement's first keyword, upper case: a handful of
// constants, so spans and metrics stay low in cardinality.
func sqlOp(query string) string {
	q := strings.TrimLeft(query, " \t\n(")
	for _, op := range [...]string{"SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "SAVEPOINT", "RELEASE", "ROLLBACK", "CREATE", "ALTER", "SET", "DO"} {
		if len(q) >= len(op) && strings.EqualFold(q[:len(op)], op) {
			return op
		}
	}
	return "OTHER"
}

// spanName is "offlinelock <op>", from constants: no allocation per
// statement.
func spanName(query string) string {
	switch sqlOp(query) {
	case "SELECT":
		return "offlinelock SELECT"
	case "INSERT":
		return "offlinelock INSERT"
	case "UPDATE":
		return "offlinelock UPDATE"
	case "DELETE":
		return "offlinelock DELETE"
	case "WITH":
		return "offlinelock WITH"
	case "SAVEPOINT", "RELEASE", "ROLLBACK":
		return "offlinelock SAVEPOINT"
	default:
		return "offlinelock OTHER"
	}
}

// note adds a decision to the caller's span as an event: the statements'
// spans say what locking cost, the event what it decided.
func note(ctx context.Context, decision, resource string, keys int) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("offlinelock."+decision, trace.WithAttributes(
			attribute.String("offlinelock.decision", decision),
			attribute.String("resource", resource), attribute.Int("offlinelock.keys", keys)))
	}
}

// granted counts keys granted to one statement or call, by resource.
func (t *telemetry) granted(ctx context.Context, db *gorm.DB, mode string, access Access, keys []key) {
	if t == nil {
		return
	}
	eachResource(keys, func(resource string, n int) {
		note(ctx, "granted", resource, n)
		if t.grants.Enabled(ctx) {
			t.grants.Add(ctx, int64(n), metric.WithAttributes(dbSystem(db), attribute.String("resource", resource),
				attribute.String("mode", mode), attribute.String("access", string(access))))
		}
	})
}

// refused counts one refused request or write; err says why.
func (t *telemetry) refused(ctx context.Context, db *gorm.DB, mode string, access Access, resource string, err error) {
	reason := refusalReason(err)
	if t == nil || reason == "" {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("offlinelock.refused", trace.WithAttributes(
			attribute.String("offlinelock.decision", "refused"), attribute.String("offlinelock.reason", reason),
			attribute.String("resource", resource), attribute.Int("offlinelock.keys", 1)))
	}
	if t.refusals.Enabled(ctx) {
		t.refusals.Add(ctx, 1, metric.WithAttributes(dbSystem(db), attribute.String("resource", resource),
			attribute.String("mode", mode), attribute.String("access", string(access)), attribute.String("reason", reason)))
	}
}

// refusalReason is the reason attribute of a refusal, "" for an error that
// is not one (a database error, bad input).
func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrLocked):
		return reasonLocked
	case errors.Is(err, ErrNotLocked):
		return reasonNotLocked
	case errors.Is(err, ErrNoOwner):
		return reasonNoOwner
	case errors.Is(err, ErrStrict):
		return reasonStrict
	}
	return ""
}

// fenceFailed counts a write refused at the fence.
func (t *telemetry) fenceFailed(ctx context.Context, db *gorm.DB, resource string, op opKind) {
	if t == nil {
		return
	}
	note(ctx, "fence_failed", resource, 1)
	if t.fences.Enabled(ctx) {
		t.fences.Add(ctx, 1, metric.WithAttributes(dbSystem(db), attribute.String("resource", resource), attribute.String("op", string(op))))
	}
}

// released counts n locks ended by kind; resource is "" for session-wide
// kinds (release_all, sweep), which do not learn the resources.
func (t *telemetry) released(ctx context.Context, sys attribute.KeyValue, kind, resource string, n int64) {
	if t == nil || n == 0 || !t.releases.Enabled(ctx) {
		return
	}
	attrs := []attribute.KeyValue{sys, attribute.String("kind", kind)}
	if resource != "" {
		attrs = append(attrs, attribute.String("resource", resource))
	}
	t.releases.Add(ctx, n, metric.WithAttributes(attrs...))
}

// heldFor records how long a released lock was held, on the database
// clock (0 is possible: the clock's resolution is a millisecond on SQLite).
func (t *telemetry) heldFor(ctx context.Context, db *gorm.DB, resource string, held time.Duration) {
	if t != nil && held >= 0 && t.held.Enabled(ctx) {
		t.held.Record(ctx, held.Seconds(), metric.WithAttributes(dbSystem(db), attribute.String("resource", resource)))
	}
}

// sweptRows counts the rows one sweep deleted.
func (t *telemetry) sweptRows(ctx context.Context, db *gorm.DB, n int64) {
	if t == nil || n == 0 {
		return
	}
	if t.swept.Enabled(ctx) {
		t.swept.Add(ctx, n, metric.WithAttributes(dbSystem(db)))
	}
	t.released(ctx, dbSystem(db), kindSweep, "", n)
}

// eachResource calls fn once per run of keys of one resource.
func eachResource(keys []key, fn func(resource string, n int)) {
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j].Resource == keys[i].Resource {
			j++
		}
		fn(keys[i].Resource, j-i)
		i = j
	}
}

// observeLive registers the live-locks gauge's callback for db: at each
// collection it counts the live locks by resource, one GROUP BY on the lock
// table. The registration lasts as long as the MeterProvider.
func (t *telemetry) observeLive(db *gorm.DB, s lockStore) error {
	if t == nil {
		return nil
	}
	db = db.Session(&gorm.Session{NewDB: true})
	sys := dbSystem(db)
	_, err := t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		counts, err := s.LiveByResource(direct(db.WithContext(ctx)))
		if err != nil {
			return err
		}
		for resource, n := range counts {
			o.ObserveInt64(t.live, n, metric.WithAttributes(sys, attribute.String("resource", resource)))
		}
		return nil
	}, t.live)
	return err
}

// observeUnguarded registers the unguarded-tables gauge's callback for
// b: the number of tables the last coverage shown found not covered
// (coverage.go), with no statement of its own; nothing before the first
// is shown, and nothing where grants do not depend on the guard.
func (t *telemetry) observeUnguarded(db *gorm.DB, b *binding) error {
	if t == nil {
		return nil
	}
	sys := dbSystem(db)
	_, err := t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		if !b.guard.Governs() {
			return nil
		}
		if n := b.guard.Count(); n >= 0 {
			o.ObserveInt64(t.unguard, n, metric.WithAttributes(sys))
		}
		return nil
	}, t.unguard)
	return err
}

// ctxOf is db's statement context, never nil.
func ctxOf(db *gorm.DB) context.Context {
	if ctx := db.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}

// active says whether a count or an event would be kept: without it the
// callers skip building the keys they would report.
func (t *telemetry) active(ctx context.Context) bool {
	return t != nil && (t.grants.Enabled(ctx) || trace.SpanFromContext(ctx).IsRecording())
}

// countStatement counts what the callbacks decided for one statement when
// it ends: the keys a load locked, or the refusal of a load or a write (a
// fence failure is counted as such by fence).
func (p *Plugin) countStatement(db *gorm.DB, st *state) {
	if st.m == nil || st.fenceFailed {
		return
	}
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if db.Error != nil {
		resource := st.m.LockResource()
		if le := (*LockedError)(nil); errors.As(db.Error, &le) {
			resource = le.Resource
		}
		p.tel.refused(ctx, db, modeImplicit, accessFor(st.m, st.op), resource, db.Error)
		return
	}
	if !st.op.loads() || len(st.locked) == 0 || !p.tel.active(ctx) {
		return
	}
	keys := make([]key, 0, len(st.locked))
	for k, held := range st.locked {
		if held {
			keys = append(keys, k)
		}
	}
	p.tel.granted(ctx, db, modeImplicit, accessFor(st.m, st.op), lockstore.SortKeys(keys))
}
