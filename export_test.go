package offlinelock

// WithoutTelemetry makes p the uninstrumented plugin: no instruments, no
// spans, only the nil checks. The benchmarks of bench_otel_test.go measure
// the instrumented paths against it.
func WithoutTelemetry(p *Plugin) { p.tel = nil }
