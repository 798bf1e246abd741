// Package telemetry is offlinelock's OpenTelemetry instrumentation
// (docs/observability.md): metrics, the lock-table statements' spans and
// the decisions' events, in strings and the store's keys, never the root's
// types. Attributes are built only for an enabled instrument or a
// recording span; a nil *Telemetry does nothing.
package telemetry

import (
	"context"
	"errors"
	"fmt"
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

// name names the plugin's meter and tracer.
const name = "github.com/offlinelock/offlinelock"

// Modes of a grant or a refusal, and kinds of a release: the attribute
// values of the plugin's metrics.
const (
	Explicit = "explicit" // Acquire
	Implicit = "implicit" // the callbacks: a load, a write
	HTTP     = "http"     // a decision taken over HTTP (httplock's Middleware)

	Release        = "release"
	ReleaseAll     = "release_all"
	expiryTakeover = "expiry_takeover"
	Force          = "force"
	TakeOver       = "takeover"
	sweep          = "sweep"
)

// Refusal names the refusals of one sentinel error in the reason
// attribute; an error that matches none is not counted.
type Refusal struct {
	Err    error
	Reason string
}

// Telemetry holds the plugin's instruments, made once by New.
type Telemetry struct {
	// Grants counts granted locks; the statement path reads its Enabled
	// inline, before it builds the keys it would count.
	Grants   metric.Int64Counter
	tracer   trace.Tracer // nil for the no-op provider: no span, no context per statement
	client   []trace.SpanStartOption
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
	reasons  []Refusal
}

// New makes the instruments on mp and tp (the global providers when nil).
// An instrument the provider refuses is reported as an error.
func New(mp metric.MeterProvider, tp trace.TracerProvider, reasons ...Refusal) (*Telemetry, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	m := mp.Meter(name)
	t := &Telemetry{meter: m, reasons: reasons, client: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}}
	if _, off := tp.(tracenoop.TracerProvider); !off {
		t.tracer = tp.Tracer(name)
	}
	var errs [10]error
	t.Grants, errs[0] = m.Int64Counter("offlinelock.lock.grants", metric.WithUnit("{lock}"),
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
	// Statements take 0.5 ms to seconds: the default boundaries (to
	// 10,000 s) would put nearly all in the first bucket.
	t.latency, errs[6] = m.Float64Histogram("offlinelock.statement.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the plugin's own lock-table statements."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
	t.swept, errs[7] = m.Int64Counter("offlinelock.sweep.deleted", metric.WithUnit("{row}"),
		metric.WithDescription("Expired lock rows the sweeper deleted."))
	t.live, errs[8] = m.Int64ObservableGauge("offlinelock.locks.live", metric.WithUnit("{lock}"),
		metric.WithDescription("Live locks by resource, read from the lock table at each collection."))
	t.unguard, errs[9] = m.Int64ObservableGauge("offlinelock.guard.unguarded", metric.WithUnit("{table}"),
		metric.WithDescription("Tables that can hold rows of lockable records and that the database guard does not cover, as last shown (grants of their records are refused)."))
	return t, errors.Join(errs[:]...)
}

// Tracing says whether spans are recorded: only then may a statement keep
// its spans aside (spans.go).
func (t *Telemetry) Tracing() bool { return t != nil && t.tracer != nil }

// system is the OpenTelemetry db.system.name of db's database.
func system(db *gorm.DB) attribute.KeyValue { return systemOf(db.Dialector.Name()) }

// systemOf is the db.system.name of a GORM dialect, spelt as
// go-gorm/opentelemetry spells it.
func systemOf(dialect string) attribute.KeyValue {
	switch dialect {
	case "postgres":
		dialect = "postgresql"
	case "mysql":
	default:
		dialect = "sqlite"
	}
	return attribute.String("db.system.name", dialect)
}

// Observer is one store's lockstore.Observer: its statements' spans and
// latency, and its grants' upgrades and takeovers.
type Observer struct {
	t      *Telemetry
	system attribute.KeyValue
}

// Observer is the observer of a store on a database of a GORM dialect.
func (t *Telemetry) Observer(dialect string) *Observer {
	return &Observer{t: t, system: systemOf(dialect)}
}

// StatementStart starts the span of one lock-table statement, a child of
// the caller's span in ctx.
func (o *Observer) StatementStart(ctx context.Context, query string) (context.Context, any) {
	t := o.t
	if t == nil || t.tracer == nil || ctx.Value(spanLogCtx{}) != nil && deferred(ctx) != nil {
		return ctx, nil
	}
	_, span := sqlOp(query)
	ctx, s := t.tracer.Start(ctx, span, t.client...)
	return ctx, s
}

// StatementEnd ends the span StatementStart began and records the latency.
// The SQL's arguments, which hold tokens, are never attributes.
func (o *Observer) StatementEnd(ctx context.Context, started any, query string, begin time.Time, rows int64, err error) {
	t := o.t
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
			_, name := sqlOp(query)
			l.keep(pendingSpan{name: name, begin: begin, end: time.Now(), attrs: statementAttrs(o.system, query, rows), err: err})
		}
	}
	if t.latency.Enabled(ctx) {
		op, _ := sqlOp(query)
		t.latency.Record(ctx, time.Since(begin).Seconds(), metric.WithAttributes(o.system, attribute.String("db.operation.name", op)))
	}
}

// Upgraded counts a Read lock its only reader upgraded to Write.
func (o *Observer) Upgraded(ctx context.Context, resource string) {
	if t := o.t; t != nil && t.upgrades.Enabled(ctx) {
		t.upgrades.Add(ctx, 1, metric.WithAttributes(o.system, attribute.String("resource", resource)))
	}
}

// TakenOver counts a grant of a record whose lock had expired.
func (o *Observer) TakenOver(ctx context.Context, resource string) {
	o.t.released(ctx, o.system, expiryTakeover, resource, 1)
}

// statementAttrs are the attributes of a lock-table statement's span.
func statementAttrs(sys attribute.KeyValue, query string, rows int64) []attribute.KeyValue {
	op, _ := sqlOp(query)
	return []attribute.KeyValue{sys, attribute.String("db.operation.name", op),
		attribute.Int64("db.response.returned_rows", rows)}
}

// sqlOp is the statement's first keyword, upper case, and its span's name:
// constants, low in cardinality and free of allocations.
func sqlOp(query string) (op, span string) {
	q := strings.TrimLeft(query, " \t\n(")
	for _, o := range [...]struct{ op, span string }{{"SELECT", "offlinelock SELECT"}, {"INSERT", "offlinelock INSERT"},
		{"UPDATE", "offlinelock UPDATE"}, {"DELETE", "offlinelock DELETE"}, {"WITH", "offlinelock WITH"},
		{"SAVEPOINT", "offlinelock SAVEPOINT"}, {"RELEASE", "offlinelock SAVEPOINT"}, {"ROLLBACK", "offlinelock SAVEPOINT"},
		{"CREATE", "offlinelock OTHER"}, {"ALTER", "offlinelock OTHER"}, {"SET", "offlinelock OTHER"}, {"DO", "offlinelock OTHER"}} {
		if len(q) >= len(o.op) && strings.EqualFold(q[:len(o.op)], o.op) {
			return o.op, o.span
		}
	}
	return "OTHER", "offlinelock OTHER"
}

// note adds a decision to the caller's span as an event: the statements'
// spans say what locking cost, the event what it decided.
func note(ctx context.Context, decision, resource string, keys int, more ...attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		attrs := append([]attribute.KeyValue{attribute.String("offlinelock.decision", decision)}, more...)
		span.AddEvent("offlinelock."+decision, trace.WithAttributes(append(attrs,
			attribute.String("resource", resource), attribute.Int("offlinelock.keys", keys))...))
	}
}

// Granted counts keys (sorted) granted to one statement or call, by resource.
func (t *Telemetry) Granted(ctx context.Context, db *gorm.DB, mode, access string, keys []lockstore.Key) {
	if t == nil {
		return
	}
	for i := 0; i < len(keys); { // each run of keys of one resource
		j := i + 1
		for j < len(keys) && keys[j].Resource == keys[i].Resource {
			j++
		}
		resource, n := keys[i].Resource, j-i
		note(ctx, "granted", resource, n)
		if t.Grants.Enabled(ctx) {
			t.Grants.Add(ctx, int64(n), metric.WithAttributes(system(db), attribute.String("resource", resource),
				attribute.String("mode", mode), attribute.String("access", access)))
		}
		i = j
	}
}

// Refused counts one refused request or write; err says why.
func (t *Telemetry) Refused(ctx context.Context, db *gorm.DB, mode, access, resource string, err error) {
	if t == nil {
		return
	}
	reason := ""
	for _, r := range t.reasons {
		if errors.Is(err, r.Err) {
			reason = r.Reason
			break
		}
	}
	if reason == "" {
		return
	}
	note(ctx, "refused", resource, 1, attribute.String("offlinelock.reason", reason))
	if t.refusals.Enabled(ctx) {
		t.refusals.Add(ctx, 1, metric.WithAttributes(system(db), attribute.String("resource", resource),
			attribute.String("mode", mode), attribute.String("access", access), attribute.String("reason", reason)))
	}
}

// FenceFailed counts a write (op) refused at the fence.
func (t *Telemetry) FenceFailed(ctx context.Context, db *gorm.DB, resource, op string) {
	if t == nil {
		return
	}
	note(ctx, "fence_failed", resource, 1)
	if t.fences.Enabled(ctx) {
		t.fences.Add(ctx, 1, metric.WithAttributes(system(db), attribute.String("resource", resource), attribute.String("op", op)))
	}
}

// Released counts n locks ended by kind; resource is "" for session-wide
// kinds (release_all, sweep), which do not learn the resources.
func (t *Telemetry) Released(ctx context.Context, db *gorm.DB, kind, resource string, n int64) {
	t.released(ctx, system(db), kind, resource, n)
}

// released is Released on a database named by its attribute.
func (t *Telemetry) released(ctx context.Context, sys attribute.KeyValue, kind, resource string, n int64) {
	if t == nil || n == 0 || !t.releases.Enabled(ctx) {
		return
	}
	attrs := []attribute.KeyValue{sys, attribute.String("kind", kind)}
	if resource != "" {
		attrs = append(attrs, attribute.String("resource", resource))
	}
	t.releases.Add(ctx, n, metric.WithAttributes(attrs...))
}

// HeldFor records how long a released lock was held, on the database
// clock (0 is possible: the clock's resolution is a millisecond on SQLite).
func (t *Telemetry) HeldFor(ctx context.Context, db *gorm.DB, resource string, held time.Duration) {
	if t != nil && held >= 0 && t.held.Enabled(ctx) {
		t.held.Record(ctx, held.Seconds(), metric.WithAttributes(system(db), attribute.String("resource", resource)))
	}
}

// Swept counts the rows one sweep deleted.
func (t *Telemetry) Swept(ctx context.Context, db *gorm.DB, n int64) {
	if t == nil || n == 0 {
		return
	}
	if t.swept.Enabled(ctx) {
		t.swept.Add(ctx, n, metric.WithAttributes(system(db)))
	}
	t.released(ctx, system(db), sweep, "", n)
}

// Observe registers the gauges' callbacks for db's database, for the
// MeterProvider's life: live counts the live locks by resource, unguarded
// the tables the last coverage found not covered (negative: nothing to say).
func (t *Telemetry) Observe(db *gorm.DB, live func(context.Context) (map[string]int64, error), unguarded func() int64) error {
	if t == nil {
		return nil
	}
	sys := system(db)
	_, err := t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		counts, err := live(ctx)
		if err != nil {
			return err
		}
		for resource, n := range counts {
			o.ObserveInt64(t.live, n, metric.WithAttributes(sys, attribute.String("resource", resource)))
		}
		return nil
	}, t.live)
	if err != nil {
		return fmt.Errorf("offlinelock: registering the live-locks gauge: %w", err)
	}
	_, err = t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if n := unguarded(); n >= 0 {
			o.ObserveInt64(t.unguard, n, metric.WithAttributes(sys))
		}
		return nil
	}, t.unguard)
	if err != nil {
		return fmt.Errorf("offlinelock: registering the unguarded-tables gauge: %w", err)
	}
	return nil
}
