package telemetry

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/oa-dev/oa/blocking"
)

// Scope is the instrumentation scope of every span and instrument.
const Scope = "github.com/oa-dev/oa/coordinator"

// Span and attribute names.
const (
	SpanSession   = "oa.session"
	SpanRun       = "oa.run"
	SpanPlanCheck = "oa.plan_check"
	SpanSeal      = "oa.receipt.seal"
	// A step's span is SpanStepPrefix followed by its kind (read, guard,
	// effect, check); a downstream call's is "tools/call TOOL", as MCP's
	// semantic conventions name it.
	SpanStepPrefix = "oa.step."
)

func tracer() trace.Tracer { return otel.Tracer(Scope) }

type instruments struct {
	runs, refusals, dropped metric.Int64Counter
	inFlight                metric.Int64UpDownCounter
	stepTime, callTime      metric.Float64Histogram
}

var current atomic.Pointer[instruments]

// resetInstruments makes the next hook build its instruments from the
// meter provider installed now.
func resetInstruments() { current.Store(nil) }

func meters() *instruments {
	if in := current.Load(); in != nil {
		return in
	}
	m := otel.Meter(Scope)
	in := &instruments{}
	in.runs, _ = m.Int64Counter("oa.runs", metric.WithDescription("Run attempts that stopped, by outcome and closed reason."), metric.WithUnit("{run}"))
	in.refusals, _ = m.Int64Counter("oa.refusals", metric.WithDescription("Refusals, by blocking code."), metric.WithUnit("{refusal}"))
	in.dropped, _ = m.Int64Counter("oa.telemetry.spans.dropped", metric.WithDescription("Spans dropped because the export queue was full."), metric.WithUnit("{span}"))
	in.inFlight, _ = m.Int64UpDownCounter("oa.runs.in_flight", metric.WithDescription("Runs this coordinator is executing."), metric.WithUnit("{run}"))
	in.stepTime, _ = m.Float64Histogram("oa.step.duration", metric.WithDescription("Time each step took, by kind and closed reason."), metric.WithUnit("s"))
	in.callTime, _ = m.Float64Histogram("oa.downstream.duration", metric.WithDescription("Time each downstream tools/call took, by tool and closed code."), metric.WithUnit("s"))
	current.Store(in)
	return in
}

func dropped() metric.Int64Counter { return meters().dropped }

// Span is a span a hook started; its End takes a closed code only.
type Span struct {
	span  trace.Span
	start time.Time
	hist  metric.Float64Histogram
	attrs []attribute.KeyValue
}

func start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, *Span) {
	ctx, s := tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, &Span{span: s, start: time.Now()}
}

// End ends the span. code is "" for success, else a closed code (a
// blocking code or a contract reason), set as the span's status and the
// oa.code attribute.
func (s *Span) End(code string) {
	if code != "" {
		s.span.SetAttributes(attribute.String("oa.code", code))
		s.span.SetStatus(codes.Error, code)
	}
	if s.hist != nil {
		result := code
		if result == "" {
			result = "ok"
		}
		s.hist.Record(context.Background(), time.Since(s.start).Seconds(), metric.WithAttributes(append(s.attrs, attribute.String("oa.code", result))...))
	}
	s.span.End()
}

// StartSession starts the span of one coordinator session (one client).
func StartSession(ctx context.Context, deployment, planDigest string) (context.Context, *Span) {
	return start(ctx, SpanSession, trace.SpanKindServer, attribute.String("oa.deployment", deployment), attribute.String("oa.plan.digest", planDigest))
}

// Run is the span of one run attempt.
type Run struct{ *Span }

// StartRun starts the span of one attempt of a run, under ctx's span (the
// calling client's, from FromMeta, when it sent one).
func StartRun(ctx context.Context, deployment, runID string) (context.Context, *Run) {
	ctx, s := start(ctx, SpanRun, trace.SpanKindInternal, attribute.String("oa.deployment", deployment), attribute.String("oa.run.id", runID))
	meters().inFlight.Add(ctx, 1)
	return ctx, &Run{s}
}

// Describe adds the run's workflow (a job of the package, "" when the
// caller named none) and attempt.
func (r *Run) Describe(workflow string, attempt int) {
	if workflow != "" {
		r.span.SetAttributes(attribute.String("oa.workflow", workflow))
	}
	r.span.SetAttributes(attribute.Int("oa.run.attempt", attempt))
}

// Finish ends the run's span with its outcome and closed reason, and
// counts it in oa.runs. A run that did not run or may not have saved is
// an error span.
func (r *Run) Finish(outcome, reason string) {
	attrs := []attribute.KeyValue{attribute.String("oa.outcome", outcome), attribute.String("oa.reason", reason)}
	r.span.SetAttributes(attrs...)
	meters().runs.Add(context.Background(), 1, metric.WithAttributes(attrs...))
	meters().inFlight.Add(context.Background(), -1)
	if outcome == "did_not_run" || outcome == "not_sure_if_saved" {
		r.span.SetStatus(codes.Error, reason)
	}
	r.span.End()
}

// StartStep starts the span of one step: kind is read, guard, effect or
// check; id the step's id and capability its capability (both the
// package's names). Its End records oa.step.duration.
func StartStep(ctx context.Context, kind, id, capability string) (context.Context, *Span) {
	attrs := []attribute.KeyValue{attribute.String("oa.step.id", id), attribute.String("oa.step.kind", kind)}
	if capability != "" {
		attrs = append(attrs, attribute.String("oa.capability", capability))
	}
	ctx, s := start(ctx, SpanStepPrefix+kind, trace.SpanKindInternal, attrs...)
	s.hist, s.attrs = meters().stepTime, []attribute.KeyValue{attribute.String("oa.step.kind", kind)}
	return ctx, s
}

// StartPlanCheck starts the span of one plan check.
func StartPlanCheck(ctx context.Context, planDigest string) (context.Context, *Span) {
	return start(ctx, SpanPlanCheck, trace.SpanKindInternal, attribute.String("oa.plan.digest", planDigest))
}

// StartCall starts the span of one downstream tools/call of tool (the
// plan's runtime tool name). Its End records oa.downstream.duration.
func StartCall(ctx context.Context, tool string) (context.Context, *Span) {
	ctx, s := start(ctx, "tools/call "+tool, trace.SpanKindClient, attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", tool))
	s.hist, s.attrs = meters().callTime, []attribute.KeyValue{attribute.String("gen_ai.tool.name", tool)}
	return ctx, s
}

// StartSeal starts the span of one receipt seal.
func StartSeal(ctx context.Context, runID string) (context.Context, *Span) {
	return start(ctx, SpanSeal, trace.SpanKindInternal, attribute.String("oa.run.id", runID))
}

// Sealed records the digest of the receipt sealed.
func (s *Span) Sealed(receiptDigest string) {
	if receiptDigest != "" {
		s.span.SetAttributes(attribute.String("oa.receipt.digest", receiptDigest))
	}
}

// Refused counts one refusal with its blocking code.
func Refused(ctx context.Context, code string) {
	meters().refusals.Add(ctx, 1, metric.WithAttributes(attribute.String("oa.code", code)))
}

// Detach returns life carrying parent's span: the span context of a
// request outlives the request, its cancellation does not.
func Detach(life, parent context.Context) context.Context {
	return trace.ContextWithSpanContext(life, trace.SpanContextFromContext(parent))
}

// metaCarrier is an MCP _meta object as a propagation carrier: only
// string values are read.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// FromMeta returns ctx with the calling client's trace context from the
// request's _meta (traceparent, W3C trace context) as the remote parent.
// Its tracestate is dropped: it is the caller's text, and would be
// exported with every span.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), metaCarrier(meta)))
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc.WithTraceState(trace.TraceState{}))
}

// ToMeta adds ctx's trace context (traceparent) to a downstream request's
// _meta, returning it (a new map when meta is nil). Without a span
// context it returns meta as it is.
func ToMeta(ctx context.Context, meta map[string]any) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	propagation.TraceContext{}.Inject(ctx, metaCarrier(meta))
	return meta
}

// Code is err's closed code: "" for nil, the first refusal's blocking
// code, "cancelled" for a cancelled or timed-out context, else "fault".
// Never the error's text.
func Code(err error) string {
	switch {
	case err == nil:
		return ""
	case blocking.Refusals(err) != nil:
		return string(blocking.Refusals(err)[0].Code)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "fault"
}

// CallCode is a downstream call's closed code: Code(err), or
// "tool_error" when the tool answered with an error.
func CallCode(err error, toolError bool) string {
	if err == nil && toolError {
		return "tool_error"
	}
	return Code(err)
}
