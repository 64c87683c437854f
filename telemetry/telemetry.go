// Package telemetry exports the coordinator's traces and metrics through
// the OpenTelemetry Go SDK, over OTLP, when the standard variables ask for
// it (OTEL_EXPORTER_OTLP_ENDPOINT or the per-signal endpoints,
// OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf by default, or grpc;
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and the exporters' own
// variables). When they are unset nothing is set up and every hook below
// is the OpenTelemetry API's no-op.
//
// It is plumbing: the coordinator and the connector call its small hooks
// (StartRun, StartStep, StartPlanCheck, StartCall, StartSeal, Refused,
// FromMeta, ToMeta), which carry names, closed codes, digests and counts
// only — never an input value, an argument, a downstream answer, a path,
// an error's text or a secret. A span's status description is a closed
// code, never an error's text.
//
// Nothing here ever blocks a run: spans go through the SDK's batch
// processor behind a bounded queue that drops (and counts, in
// oa.telemetry.spans.dropped) what does not fit; metric instruments
// aggregate in memory and are read by a periodic reader. Shutdown
// flushes both, bounded by its context.
package telemetry

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/oa-dev/oa/blocking"
)

// Options configure Setup.
type Options struct {
	// Getenv reads the OTEL_* variables; nil means os.Getenv. The
	// exporters themselves always read the process environment.
	Getenv func(string) string
	// ServiceVersion is oa's version, exported as service.version.
	ServiceVersion string
	// MaxQueue bounds the spans waiting for export; 0 means 2048.
	MaxQueue int
}

// Telemetry is what Setup installed. A nil *Telemetry is telemetry
// switched off; its Shutdown does nothing.
type Telemetry struct {
	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
}

// errProtocol is an OTEL_EXPORTER_OTLP_PROTOCOL Setup does not speak.
var errProtocol = errors.New("telemetry: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or grpc")

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is unset.
const DefaultServiceName = "oa-coordinator"

// Enabled reports whether the variables ask for export: an OTLP endpoint
// is set (for all signals, or for traces or metrics) and OTEL_SDK_DISABLED
// is not true.
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if getenv(k) != "" {
			return true
		}
	}
	return false
}

// protocol is the OTLP protocol for signal ("TRACES" or "METRICS").
func protocol(getenv func(string) string, signal string) (string, error) {
	p := getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", errProtocol
}

// Setup installs the OpenTelemetry SDK as the process's tracer and meter
// providers and W3C trace context as its propagator, when Enabled; else it
// installs nothing and returns nil.
func Setup(ctx context.Context, o Options) (*Telemetry, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if !Enabled(getenv) {
		return nil, nil
	}
	tproto, err := protocol(getenv, "TRACES")
	if err != nil {
		return nil, blocking.New(blocking.TelemetryConfigInvalid, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL is not http/protobuf or grpc")
	}
	mproto, err := protocol(getenv, "METRICS")
	if err != nil {
		return nil, blocking.New(blocking.TelemetryConfigInvalid, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL is not http/protobuf or grpc")
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName), attribute.String("service.version", o.ServiceVersion)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: the operator's own
	)
	if err != nil {
		return nil, blocking.New(blocking.TelemetryConfigInvalid, "OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME does not parse")
	}
	var spans sdktrace.SpanExporter
	if tproto == "grpc" {
		spans, err = otlptracegrpc.New(ctx)
	} else {
		spans, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, blocking.New(blocking.TelemetryConfigInvalid, "the OTLP span exporter cannot be set up from the OTEL_EXPORTER_OTLP_* variables")
	}
	var metrics sdkmetric.Exporter
	if mproto == "grpc" {
		metrics, err = otlpmetricgrpc.New(ctx)
	} else {
		metrics, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, blocking.New(blocking.TelemetryConfigInvalid, "the OTLP metric exporter cannot be set up from the OTEL_EXPORTER_OTLP_* variables")
	}
	max := o.MaxQueue
	if max <= 0 {
		max = 2048
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))
	counted := &countingExporter{SpanExporter: spans}
	bsp := sdktrace.NewBatchSpanProcessor(counted, sdktrace.WithMaxQueueSize(max))
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(&boundedProcessor{SpanProcessor: bsp, out: counted, max: int64(max)}))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	resetInstruments()
	active.Store(true)
	return &Telemetry{tp: tp, mp: mp}, nil
}

// Shutdown flushes every span and metric still held and stops export,
// within ctx; then it puts the no-op providers back.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	err := errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
	active.Store(false)
	otel.SetTracerProvider(tracenoop.NewTracerProvider())
	otel.SetMeterProvider(metricnoop.NewMeterProvider())
	resetInstruments()
	return err
}

var active atomic.Bool

// Active reports whether Setup installed export (and Shutdown has not
// ended it): hooks that cost something beyond the API's no-op ask first.
func Active() bool { return active.Load() }

// countingExporter counts the spans handed to the exporter, so that
// boundedProcessor knows how many are still queued.
type countingExporter struct {
	sdktrace.SpanExporter
	taken atomic.Int64
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.taken.Add(int64(len(spans)))
	return e.SpanExporter.ExportSpans(ctx, spans)
}

// boundedProcessor drops, and counts, a span that would overflow the
// export queue, instead of letting anything wait for it: a slow or absent
// collector never slows a run.
type boundedProcessor struct {
	sdktrace.SpanProcessor
	out      *countingExporter
	max      int64
	admitted atomic.Int64
}

func (p *boundedProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if p.admitted.Load()-p.out.taken.Load() >= p.max {
		dropped().Add(context.Background(), 1)
		return
	}
	p.admitted.Add(1)
	p.SpanProcessor.OnEnd(s)
}
