package plugin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
	"gorm.io/plugin/opentelemetry/tracing"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// gormScope is the instrumentation scope of go-gorm/opentelemetry's spans.
const gormScope = "gorm.io/plugin/opentelemetry"

// TestSpansNestUnderGORMStatementSpan registers go-gorm/opentelemetry
// before and after the plugin and runs a statement of every callback
// chain (query, row, raw, create, update, delete, and a refused write):
// each lock-table span of the plugin is a child of GORM's span of the
// statement it served, with db.system.name as that plugin spells it, and
// never of the request's span beside it.
func TestSpansNestUnderGORMStatementSpan(t *testing.T) {
	for _, d := range testkit.Databases() {
		for _, order := range []string{"plugin first", "otelgorm first"} {
			t.Run(d.Name+"/"+order, func(t *testing.T) {
				rec := tracetest.NewSpanRecorder()
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
				t.Cleanup(func() { tp.Shutdown(context.Background()) })
				cfg := offlinelock.Config{TracerProvider: tp}
				db := d.Open(t)
				otelgorm := tracing.NewPlugin(tracing.WithTracerProvider(tp), tracing.WithoutMetrics())
				if order == "otelgorm first" {
					require.NoError(t, db.Use(otelgorm))
				}
				db, p := testkit.SetupOn(t, db, cfg)
				if order == "plugin first" {
					require.NoError(t, db.Use(otelgorm))
				}
				nestFixture(t, db)
				for _, op := range nestOps(p) {
					t.Run(op.name, func(t *testing.T) {
						ctx, req := tp.Tracer("test").Start(offlinelock.WithOwner(context.Background(), op.owner), "request")
						before := len(rec.Ended())
						err := op.run(db.WithContext(ctx))
						req.End()
						if op.refused {
							require.ErrorIs(t, err, offlinelock.ErrLocked)
						} else {
							require.NoError(t, err)
						}
						if op.name != "lock held by martin" { // a call, not a statement: its spans are the request's
							// a raw write sends a statement of the plugin's only on PostgreSQL (its identity)
							assertNested(t, rec.Ended()[before:], req.SpanContext(), d.Name, op.name != "raw" || d.Name == "postgres")
						}
					})
				}
			})
		}
	}
}

// nestFixture: customer 129 (exclusive_write) with an address, policy 129
// (read_write); martin holds customers 129 and 131 for Write.
func nestFixture(t *testing.T, db *gorm.DB) {
	models := []any{&testkit.OtCustomer{}, &testkit.OtAddress{}, &testkit.OtPolicy{}}
	require.NoError(t, db.Migrator().DropTable(models...))
	require.NoError(t, db.AutoMigrate(models...))
	t.Cleanup(func() { db.Migrator().DropTable(models...) })
	require.NoError(t, testkit.Admin(db).Create(&testkit.OtCustomer{ID: 129, Name: "Acme Ltd", Addresses: []testkit.OtAddress{{ID: 301, City: "Portland"}}}).Error)
	require.NoError(t, testkit.Admin(db).Create(&testkit.OtCustomer{ID: 131, Name: "Gamma"}).Error)
	require.NoError(t, testkit.Admin(db).Create(&testkit.OtPolicy{ID: 129, Holder: "Acme Ltd"}).Error)
}

type nestOp struct {
	name    string
	owner   offlinelock.Owner
	refused bool
	run     func(db *gorm.DB) error
}

func nestOps(p *offlinelock.Plugin) []nestOp {
	return []nestOp{
		{"lock held by martin", testkit.Martin, false, func(db *gorm.DB) error {
			if _, err := p.Acquire(db, &testkit.OtCustomer{ID: 129}, offlinelock.Write); err != nil {
				return err
			}
			_, err := p.Acquire(db, &testkit.OtCustomer{ID: 131}, offlinelock.Write)
			return err
		}},
		{"query: a load that locks", testkit.Martin, false, func(db *gorm.DB) error { return db.First(&testkit.OtPolicy{}, 129).Error }},
		{"row", testkit.Martin, false, func(db *gorm.DB) error {
			var holder string
			return db.Model(&testkit.OtPolicy{}).Where("id = ?", 129).Select("holder").Row().Scan(&holder)
		}},
		{"update: the holder's save", testkit.Martin, false, func(db *gorm.DB) error {
			return db.Save(&testkit.OtCustomer{ID: 129, Name: "Acme Ltd", Credit: 10}).Error
		}},
		{"update: refused", testkit.David, true, func(db *gorm.DB) error {
			return db.Model(&testkit.OtCustomer{ID: 129}).Update("credit", 0).Error
		}},
		{"create", testkit.Martin, false, func(db *gorm.DB) error {
			return db.Create(&testkit.OtAddress{ID: 302, CustomerID: 129, City: "Salem"}).Error
		}},
		{"raw", testkit.Martin, false, func(db *gorm.DB) error {
			return db.Exec("UPDATE ot_customers SET credit = 11 WHERE id = ?", 129).Error
		}},
		{"delete", testkit.Martin, false, func(db *gorm.DB) error { return db.Delete(&testkit.OtCustomer{ID: 131}).Error }},
	}
}

// assertNested checks spans, all ended within one request: every span of
// the plugin has GORM's statement span as its parent, and there is one.
func assertNested(t *testing.T, spans []sdktrace.ReadOnlySpan, req trace.SpanContext, db string, want bool) {
	var mine []sdktrace.ReadOnlySpan // a guard installed in the background may end meanwhile, in a trace of its own
	for _, s := range spans {
		if s.SpanContext().TraceID() == req.TraceID() {
			mine = append(mine, s)
		}
	}
	spans = mine
	gormSpans := map[trace.SpanID]bool{}
	for _, s := range spans {
		if s.InstrumentationScope().Name == gormScope {
			gormSpans[s.SpanContext().SpanID()] = true
			assert.Equal(t, req.SpanID(), s.Parent().SpanID(), "GORM's span %s is the request's child", s.Name())
		}
	}
	var ours int
	for _, s := range spans {
		if s.InstrumentationScope().Name != "github.com/offlinelock/offlinelock" {
			continue
		}
		ours++
		assert.True(t, gormSpans[s.Parent().SpanID()], "%s is a child of GORM's statement span, not of %v", s.Name(), s.Parent().SpanID())
		assert.Contains(t, s.Attributes(), attribute.String("db.system.name", map[string]string{"postgres": "postgresql"}[db]+map[bool]string{true: db}[db != "postgres"]))
		assert.False(t, s.StartTime().After(s.EndTime()), "%s keeps its own times", s.Name())
	}
	assert.NotEmpty(t, gormSpans, "GORM's statement span")
	if want {
		assert.NotZero(t, ours, "the plugin's statements have spans")
	}
}
