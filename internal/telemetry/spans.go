package telemetry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

// The plugin's spans under GORM's statement span, which otelgorm may start
// after the plugin's first statement: they are kept aside until it shows,
// then started under it with their own times (docs/observability.md).

const (
	// OtelGORM is the name go-gorm/opentelemetry registers under.
	OtelGORM = "otelgorm"
	// SpanLogKey is where a statement keeps its spanLog, in Statement.Settings.
	SpanLogKey = "offlinelock:spans"
)

// spanLog is the lock-table spans of one GORM statement that began before
// GORM's statement span did.
type spanLog struct {
	mu      sync.Mutex        // a context that carries it may reach another goroutine
	stmt    *gorm.Statement   // the statement it belongs to (Settings are copied to clones)
	start   trace.SpanContext // the span of the statement's context when the plugin began
	first   trace.Span        // that span
	live    bool              // it was recording then
	ctx     context.Context   // that context: the parent when no other span shows
	pending []pendingSpan     // statements that ran under start
	adopted bool              // GORM's span was seen: spans are started at once
	parent  context.Context   // under that span
	tel     *Telemetry        // starts them
}

// pendingSpan is a lock-table statement's span, not started yet.
type pendingSpan struct {
	name       string
	begin, end time.Time
	attrs      []attribute.KeyValue
	err        error
}

// spanLogCtx is the context key of a statement's spanLog: the plugin's
// connections carry it to the store's Observer.
type spanLogCtx struct{}

// TraceStatement begins db's spanLog when spans are recorded and otelgorm
// is registered.
func (t *Telemetry) TraceStatement(db *gorm.DB) {
	if !t.Tracing() || db.Config == nil {
		return
	}
	if _, ok := db.Config.Plugins[OtelGORM]; !ok {
		return
	}
	ctx := ctxOf(db)
	first := trace.SpanFromContext(ctx)
	db.Statement.Settings.Store(SpanLogKey, &spanLog{stmt: db.Statement, start: first.SpanContext(), first: first, live: first.IsRecording(), ctx: ctx, tel: t})
}

// ctxOf is db's statement context, never nil.
func ctxOf(db *gorm.DB) context.Context {
	if ctx := db.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}

// Logged says whether db's statement keeps its spans aside.
func Logged(db *gorm.DB) bool { return spanLogOf(db) != nil }

// spanLogOf is db's statement's spanLog, or nil.
func spanLogOf(db *gorm.DB) *spanLog {
	if db.Statement == nil {
		return nil
	}
	if v, ok := db.Statement.Settings.Load(SpanLogKey); ok {
		if l, _ := v.(*spanLog); l != nil && l.stmt == db.Statement {
			return l
		}
	}
	return nil
}

// WithSpanLog is ctx carrying db's statement's spanLog, if it has one:
// the context of the plugin's statements for db's.
func WithSpanLog(ctx context.Context, db *gorm.DB) context.Context {
	if l := spanLogOf(db); l != nil {
		return context.WithValue(ctx, spanLogCtx{}, l)
	}
	return ctx
}

// deferred is the spanLog that keeps ctx's statement spans aside while ctx
// is the statement's first context; else the kept ones are started under it.
func deferred(ctx context.Context) *spanLog {
	l, _ := ctx.Value(spanLogCtx{}).(*spanLog)
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.adopted {
		return nil
	}
	if !l.under(ctx) {
		return l
	}
	l.adopt(ctx)
	return nil
}

// under says whether ctx's span began inside the statement: live, not the
// first, and the first has not ended (else it is the caller's, after GORM's).
func (l *spanLog) under(ctx context.Context) bool {
	span := trace.SpanFromContext(ctx)
	return span.IsRecording() && !span.SpanContext().Equal(l.start) && (!l.live || l.first.IsRecording())
}

// keep keeps s aside, or starts it at once if GORM's span showed meanwhile.
func (l *spanLog) keep(s pendingSpan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, s)
	if l.adopted {
		l.adopt(l.parent)
	}
}

// AdoptSpan starts the spans db's statement kept aside under its context's
// span if the statement did not begin with it (GORM's statement span).
func AdoptSpan(db *gorm.DB) {
	if l := spanLogOf(db); l != nil && l.under(ctxOf(db)) {
		l.adoptOnce(ctxOf(db))
	}
}

// EndSpans starts what is still kept aside under the statement's first
// context and forgets the log: the last callback calls it.
func EndSpans(db *gorm.DB) {
	if l := spanLogOf(db); l != nil {
		db.Statement.Settings.Delete(SpanLogKey)
		l.adoptOnce(l.ctx)
	}
}

// adoptOnce is adopt, unless the spans were adopted already.
func (l *spanLog) adoptOnce(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.adopted {
		l.adopt(ctx)
	}
}

// adopt starts the kept spans as children of ctx's span, each with its own
// start and end times; l.mu is held.
func (l *spanLog) adopt(ctx context.Context) {
	l.adopted, l.parent = true, ctx
	for _, s := range l.pending {
		_, span := l.tel.tracer.Start(ctx, s.name, append(l.tel.client[:len(l.tel.client):len(l.tel.client)], trace.WithTimestamp(s.begin))...)
		span.SetAttributes(s.attrs...)
		if s.err != nil {
			span.RecordError(s.err, trace.WithTimestamp(s.end))
			span.SetStatus(codes.Error, "statement failed")
		}
		span.End(trace.WithTimestamp(s.end))
	}
	l.pending = nil
}
