package host

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/fx"
	"gorm.io/gorm"
	gormtracing "gorm.io/plugin/opentelemetry/tracing"

	"github.com/svcforum/svc/contracts/plugin"
)

// Tracing is the process's OpenTelemetry tracing. It is off (a provider that records nothing) unless
// the environment names an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); then the SDK configures the exporter, the sampler, the batching
// and the resource from the standard OTEL_* variables.
type Tracing struct {
	Provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
	on         bool
}

// tracingWanted reports whether the environment asks for traces.
func tracingWanted() bool {
	if off, _ := strconv.ParseBool(os.Getenv("OTEL_SDK_DISABLED")); off {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// newTracing builds the tracer provider; its OnStop hook exports the spans still buffered.
func newTracing(lc fx.Lifecycle, log *slog.Logger) (*Tracing, error) {
	t := &Tracing{
		Provider:   tracenoop.NewTracerProvider(),
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	if !tracingWanted() {
		return t, nil
	}
	ctx := context.Background()
	// OTEL_TRACES_EXPORTER (otlp, console, none) and OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL
	// (http/protobuf by default, or grpc) choose the exporter; the exporter reads its own variables.
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("trace exporter (OTEL_* variables): %w", err)
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return t, nil
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override these.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "svc"), attribute.String("service.version", Version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("trace resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	lc.Append(fx.StopHook(func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("export the last spans: %w", err)
		}
		return nil
	}))
	log.Info("tracing on", "exporter", fmt.Sprintf("%T", exp))
	t.Provider, t.on = tp, true
	return t, nil
}

// tracerProvider hands the provider to the modules (the guard's span).
func tracerProvider(t *Tracing) trace.TracerProvider { return t.Provider }

// untraced are the paths no trace is started for: probes, scrapes and profiles, asked for all the time
// and by machines.
func untraced(c *gin.Context) bool {
	p := c.FullPath()
	return probe(p) || p == "/metrics" || strings.HasPrefix(c.Request.URL.Path, pprofPrefix)
}

// middleware is the server span of each request on listener: it continues the caller's trace (W3C
// traceparent) and carries the span in the request's context, where the guard and the database find
// it. With tracing off there is none (nil), so requests do not pass through a handler for nothing.
func (t *Tracing) middleware(listener string) []gin.HandlerFunc {
	if !t.on {
		return nil
	}
	return []gin.HandlerFunc{otelgin.Middleware("",
		otelgin.WithTracerProvider(t.Provider),
		otelgin.WithPropagators(t.propagator),
		otelgin.WithMeterProvider(metricnoop.NewMeterProvider()), // metrics are Prometheus's (/metrics)
		otelgin.WithGinFilter(func(c *gin.Context) bool { return !untraced(c) }),
		otelgin.WithSpanStartOptions(trace.WithAttributes(attribute.String("svc.listener", listener))),
	), hideSecretsInSpan}
}

// hideSecretsInSpan writes the server span's url.path as the access log writes the path (loggedPath):
// otelgin records the path as sent, which for a status, confirmation, sign-in or link address is its
// secret token. A span's attribute set again replaces the first value, so no exporter sees it.
func hideSecretsInSpan(c *gin.Context) {
	if span := trace.SpanFromContext(c.Request.Context()); span.IsRecording() {
		span.SetAttributes(attribute.String("url.path", loggedPath(c)))
	}
	c.Next()
}

// traceDB adds a span to each statement of db that runs inside a trace. Statements are recorded
// without their values (a post's text, a key, a token never leaves in a span).
func (t *Tracing) traceDB(db *gorm.DB) (*gorm.DB, error) {
	if !t.on {
		return db, nil
	}
	err := db.Use(gormtracing.NewPlugin(
		gormtracing.WithTracerProvider(withinTrace{tp: t.Provider}),
		gormtracing.WithoutQueryVariables(),
		gormtracing.WithoutMetrics(),
	))
	if err != nil {
		return nil, fmt.Errorf("trace the database: %w", err)
	}
	return db, nil
}

func (t *Tracing) traceReadDB(db plugin.ReadDB) (plugin.ReadDB, error) {
	_, err := t.traceDB(db.DB)
	return db, err
}

// withinTrace is a tracer provider whose tracers start spans only inside a trace: the statements of
// the background loops (the guard's memory, the read cache, the sweeps) start no trace of their own,
// which would bury the requests' traces under one trace per poll.
type withinTrace struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (w withinTrace) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return withinTraceTracer{t: w.tp.Tracer(name, opts...)}
}

type withinTraceTracer struct {
	embedded.Tracer
	t trace.Tracer
}

func (w withinTraceTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(ctx) // records nothing
	}
	return w.t.Start(ctx, name, opts...)
}

var (
	_ trace.TracerProvider = withinTrace{}
	_ trace.Tracer         = withinTraceTracer{}
)
