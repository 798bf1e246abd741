package offlinelock

// Instrumentation is a plugin's OpenTelemetry instruments. The benchmarks
// of bench_otel_test.go swap them in and out of one plugin, call by call,
// so that the instrumented and uninstrumented paths run on the same
// connection pool and lock table; nil is the uninstrumented plugin (only
// the nil checks remain).
type Instrumentation = *telemetry

// InstrumentationOf returns p's instruments.
func InstrumentationOf(p *Plugin) Instrumentation { return p.tel }

// SetInstrumentation gives p the instruments t; nil removes them. Not safe
// while p is in use by another goroutine.
func SetInstrumentation(p *Plugin, t Instrumentation) { p.tel = t }
