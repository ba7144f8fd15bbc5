package otlpjson

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// decode reads an OTLP/HTTP JSON body with the official OTLP types. The
// body's trace and span IDs are hex, as OTLP/HTTP JSON writes them, where
// protojson expects base64: decode turns them into base64 first (and
// fails on any that is not hex of the right length). protojson refuses
// unknown field names, so a misspelt field fails too.
func decode(t *testing.T, body []byte) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				size := map[string]int{"traceId": 16, "spanId": 8, "parentSpanId": 8}[k]
				if size == 0 {
					walk(e)
					continue
				}
				s, _ := e.(string)
				b, err := hex.DecodeString(s)
				if err != nil || len(b) != size {
					t.Fatalf("%s %q is not %d bytes in hex", k, s, size)
				}
				v[k] = base64.StdEncoding.EncodeToString(b)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	b, _ := json.Marshal(doc)
	var req coltracepb.ExportTraceServiceRequest
	if err := protojson.Unmarshal(b, &req); err != nil {
		t.Fatalf("protojson: %v\n%s", err, body)
	}
	return &req
}

var (
	tid    = trace.TraceID{0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c}
	sid    = trace.SpanID{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74}
	pid    = trace.SpanID{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x73}
	linked = trace.SpanID{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}
	t0     = time.Date(2026, 12, 2, 16, 0, 0, 123456789, time.UTC)
)

// fullSpan has every field OTLP carries set.
func fullSpan(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "stepline-step"))
	stub := tracetest.SpanStub{
		Name: "step triage",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts,
		}),
		Parent: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: pid, TraceFlags: trace.FlagsSampled, Remote: true,
		}),
		SpanKind:  trace.SpanKindClient,
		StartTime: t0,
		EndTime:   t0.Add(1500 * time.Millisecond),
		Attributes: []attribute.KeyValue{
			attribute.String("stepline.step", "triage <b>&"),
			attribute.String("empty", ""),
			attribute.Bool("flag", false),
			attribute.Int64("gen_ai.usage.input_tokens", math.MaxInt64),
			attribute.Float64("stepline.confidence", 0.82),
			attribute.Float64("nan", math.NaN()),
			attribute.Float64("inf", math.Inf(-1)),
			attribute.StringSlice("tags", []string{"a", "b"}),
			attribute.Int64Slice("ints", []int64{-1, 2}),
			attribute.BoolSlice("bools", []bool{true}),
			attribute.Float64Slice("floats", []float64{1.5}),
			attribute.ByteSlice("bytes", []byte{0, 1, 0xff}),
			attribute.Slice("mixed", attribute.StringValue("x"), attribute.Int64Value(7)),
			attribute.Map("map", attribute.String("k", "v"), attribute.Bool("b", true)),
		},
		DroppedAttributes: 3,
		Events: []sdktrace.Event{{
			Name: "exception", Time: t0.Add(time.Second),
			Attributes:            []attribute.KeyValue{attribute.String("exception.type", "ExecutorUnavailable")},
			DroppedAttributeCount: 1,
		}},
		DroppedEvents: 4,
		Links: []sdktrace.Link{{
			SpanContext:           trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: linked, Remote: true}),
			Attributes:            []attribute.KeyValue{attribute.String("stepline.run.id", "run-1")},
			DroppedAttributeCount: 2,
		}},
		DroppedLinks: 5,
		Status:       sdktrace.Status{Code: codes.Error, Description: "step failed: HTTP 503"},
		Resource:     res,
		InstrumentationScope: instrumentation.Scope{
			Name: "github.com/stepline/stepline", Version: "1.2.3", SchemaURL: "https://opentelemetry.io/schemas/1.26.0",
			Attributes: attribute.NewSet(attribute.String("scope.attr", "s")),
		},
	}
	return stub.Snapshot()
}

func encodeAll(t *testing.T, spans []sdktrace.ReadOnlySpan, limit int) ([][]byte, int) {
	t.Helper()
	groups, err := group(spans)
	if err != nil {
		t.Fatal(err)
	}
	return pack(groups, limit)
}

// TestWireFormat: every field of a span, read back with the official
// OTLP types, is what the SDK recorded.
func TestWireFormat(t *testing.T) {
	bodies, tooLarge := encodeAll(t, []sdktrace.ReadOnlySpan{fullSpan(t)}, DefaultMaxRequestBytes)
	if len(bodies) != 1 || tooLarge != 0 {
		t.Fatalf("%d bodies, %d too large", len(bodies), tooLarge)
	}
	req := decode(t, bodies[0])
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != 1 {
		t.Fatalf("nesting: %v", req)
	}
	rs := req.ResourceSpans[0]
	if rs.SchemaUrl != "https://opentelemetry.io/schemas/1.26.0" || !hasAttr(rs.Resource.Attributes, "service.name", str("stepline-step")) {
		t.Errorf("resource %v schema %q", rs.Resource, rs.SchemaUrl)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "github.com/stepline/stepline" || ss.Scope.Version != "1.2.3" || ss.SchemaUrl == "" ||
		!hasAttr(ss.Scope.Attributes, "scope.attr", str("s")) {
		t.Errorf("scope %v schema %q", ss.Scope, ss.SchemaUrl)
	}
	s := ss.Spans[0]
	checks := []struct {
		what string
		ok   bool
	}{
		{"traceId", bytes.Equal(s.TraceId, tid[:])},
		{"spanId", bytes.Equal(s.SpanId, sid[:])},
		{"parentSpanId", bytes.Equal(s.ParentSpanId, pid[:])},
		{"traceState", s.TraceState == "vendor=abc"},
		{"flags: sampled, parent known remote", s.Flags == 0x01|0x100|0x200},
		{"name", s.Name == "step triage"},
		{"kind", s.Kind == tracepb.Span_SPAN_KIND_CLIENT},
		{"start", s.StartTimeUnixNano == uint64(t0.UnixNano())},
		{"end", s.EndTimeUnixNano == uint64(t0.Add(1500*time.Millisecond).UnixNano())},
		{"dropped attributes", s.DroppedAttributesCount == 3},
		{"dropped events", s.DroppedEventsCount == 4},
		{"dropped links", s.DroppedLinksCount == 5},
		{"status", s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR && s.Status.GetMessage() == "step failed: HTTP 503"},
		{"event", len(s.Events) == 1 && s.Events[0].Name == "exception" && s.Events[0].TimeUnixNano == uint64(t0.Add(time.Second).UnixNano()) &&
			s.Events[0].DroppedAttributesCount == 1 && hasAttr(s.Events[0].Attributes, "exception.type", str("ExecutorUnavailable"))},
		{"link", len(s.Links) == 1 && bytes.Equal(s.Links[0].SpanId, linked[:]) && bytes.Equal(s.Links[0].TraceId, tid[:]) &&
			s.Links[0].Flags == 0x100|0x200 && s.Links[0].DroppedAttributesCount == 2 && hasAttr(s.Links[0].Attributes, "stepline.run.id", str("run-1"))},
		{"string", hasAttr(s.Attributes, "stepline.step", str("triage <b>&"))},
		{"empty string", hasAttr(s.Attributes, "empty", str(""))},
		{"false", hasAttr(s.Attributes, "flag", &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: false}})},
		{"int64", hasAttr(s.Attributes, "gen_ai.usage.input_tokens", &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: math.MaxInt64}})},
		{"double", hasAttr(s.Attributes, "stepline.confidence", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.82}})},
		{"-Inf", hasAttr(s.Attributes, "inf", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.Inf(-1)}})},
		{"bytes", hasAttr(s.Attributes, "bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 0xff}}})},
		{"string slice", hasAttr(s.Attributes, "tags", pbArray(str("a"), str("b")))},
		{"int slice", hasAttr(s.Attributes, "ints", pbArray(integer(-1), integer(2)))},
		{"mixed slice", hasAttr(s.Attributes, "mixed", pbArray(str("x"), integer(7)))},
		{"map", hasAttr(s.Attributes, "map", &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
			{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}}, {Key: "k", Value: str("v")},
		}}}})},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s is not what was recorded", c.what)
		}
	}
	for _, kv := range s.Attributes {
		if kv.Key == "nan" && !math.IsNaN(kv.Value.GetDoubleValue()) {
			t.Errorf("nan read back as %v", kv.Value)
		}
	}

	// What protojson would also accept but OTLP/HTTP JSON requires: hex
	// IDs, integer enums, 64-bit integers as strings.
	raw := string(bodies[0])
	for _, want := range []string{
		`"traceId":"5b8efff798038103d269b633813fc60c"`, `"spanId":"eee19b7ec3c1b174"`, `"parentSpanId":"eee19b7ec3c1b173"`,
		`"kind":3`, `"code":2`, `"startTimeUnixNano":"` + strconv.FormatInt(t0.UnixNano(), 10) + `"`, `"intValue":"9223372036854775807"`,
		`"doubleValue":"NaN"`,
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("body lacks %s:\n%s", want, raw)
		}
	}
}

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}
func integer(n int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
}
func pbArray(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

func hasAttr(kvs []*commonpb.KeyValue, key string, want *commonpb.AnyValue) bool {
	for _, kv := range kvs {
		if kv.Key == key {
			return proto.Equal(kv.Value, want)
		}
	}
	return false
}

// TestStatusAndKinds: OTLP's status codes are not codes.Code's numbers;
// an unset status is left out.
func TestStatusAndKinds(t *testing.T) {
	cases := []struct {
		status sdktrace.Status
		kind   trace.SpanKind
		want   tracepb.Status_StatusCode
		wantK  tracepb.Span_SpanKind
	}{
		{sdktrace.Status{Code: codes.Ok}, trace.SpanKindServer, tracepb.Status_STATUS_CODE_OK, tracepb.Span_SPAN_KIND_SERVER},
		{sdktrace.Status{Code: codes.Unset}, trace.SpanKindInternal, tracepb.Status_STATUS_CODE_UNSET, tracepb.Span_SPAN_KIND_INTERNAL},
		{sdktrace.Status{Code: codes.Error, Description: "x"}, trace.SpanKindConsumer, tracepb.Status_STATUS_CODE_ERROR, tracepb.Span_SPAN_KIND_CONSUMER},
		{sdktrace.Status{}, trace.SpanKindProducer, tracepb.Status_STATUS_CODE_UNSET, tracepb.Span_SPAN_KIND_PRODUCER},
	}
	for _, c := range cases {
		stub := tracetest.SpanStub{Name: "s", SpanKind: c.kind, Status: c.status,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})}
		bodies, _ := encodeAll(t, []sdktrace.ReadOnlySpan{stub.Snapshot()}, DefaultMaxRequestBytes)
		s := decode(t, bodies[0]).ResourceSpans[0].ScopeSpans[0].Spans[0]
		if s.Status.GetCode() != c.want || s.Kind != c.wantK || s.ParentSpanId != nil || s.Flags != 0x100 {
			t.Errorf("%v %v: status %v kind %v parent %x flags %x", c.status, c.kind, s.Status, s.Kind, s.ParentSpanId, s.Flags)
		}
	}
}

// TestGroupingAndSplitting: spans are grouped by resource and scope, each
// group once per request, in order; a batch over the bound is split
// into requests within it, and a span too large for any request is left
// out and counted.
func TestGroupingAndSplitting(t *testing.T) {
	resA := resource.NewSchemaless(attribute.String("service.name", "a"))
	resA2 := resource.NewSchemaless(attribute.String("service.name", "a")) // equal, another pointer
	resB := resource.NewSchemaless(attribute.String("service.name", "b"))
	mk := func(i int, res *resource.Resource, scope string, pad int) sdktrace.ReadOnlySpan {
		stub := tracetest.SpanStub{
			Name:                 "span-" + string(rune('a'+i%26)) + strings.Repeat("x", pad),
			SpanContext:          trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{byte(i + 1)}}),
			Resource:             res,
			InstrumentationScope: instrumentation.Scope{Name: scope},
		}
		return stub.Snapshot()
	}
	var spans []sdktrace.ReadOnlySpan
	for i := range 40 {
		res := []*resource.Resource{resA, resA2, resB}[i%3]
		spans = append(spans, mk(i, res, []string{"s1", "s2"}[i%2], 100))
	}
	spans = append(spans, mk(40, resB, "s1", 5000)) // alone over the bound

	all, _ := encodeAll(t, spans, DefaultMaxRequestBytes)
	if len(all) != 1 {
		t.Fatalf("%d bodies without a tight bound", len(all))
	}
	req := decode(t, all[0])
	if len(req.ResourceSpans) != 2 || len(req.ResourceSpans[0].ScopeSpans) != 2 || len(req.ResourceSpans[1].ScopeSpans) != 2 {
		t.Fatalf("grouping: %d resources", len(req.ResourceSpans))
	}
	if n := countSpans(req); n != 41 {
		t.Fatalf("%d spans in one body, want 41", n)
	}

	const limit = 1500
	bodies, tooLarge := encodeAll(t, spans, limit)
	if tooLarge != 1 || len(bodies) < 4 {
		t.Fatalf("%d bodies, %d too large", len(bodies), tooLarge)
	}
	seen := map[string]bool{}
	total := 0
	for i, b := range bodies {
		if len(b) > limit {
			t.Errorf("body %d is %d bytes, over %d", i, len(b), limit)
		}
		req := decode(t, b)
		total += countSpans(req)
		resources := map[string]bool{}
		for _, rs := range req.ResourceSpans {
			name := rs.Resource.Attributes[0].Value.GetStringValue()
			if resources[name] {
				t.Errorf("body %d repeats resource %s", i, name)
			}
			resources[name] = true
			scopes := map[string]bool{}
			for _, ss := range rs.ScopeSpans {
				if scopes[ss.Scope.Name] {
					t.Errorf("body %d repeats scope %s under %s", i, ss.Scope.Name, name)
				}
				scopes[ss.Scope.Name] = true
				for _, s := range ss.Spans {
					seen[string(s.SpanId)] = true
				}
			}
		}
	}
	if total != 40 || len(seen) != 40 {
		t.Errorf("%d spans (%d distinct) over the bodies, want 40", total, len(seen))
	}

	// The bound holds at every limit, to the byte.
	for limit := 300; limit < 2000; limit++ {
		bodies, _ := encodeAll(t, spans[:40], limit)
		for i, b := range bodies {
			if len(b) > limit {
				t.Fatalf("limit %d: body %d is %d bytes", limit, i, len(b))
			}
		}
	}
}

func countSpans(req *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n
}

// TestRealProvider: spans a real tracer provider records go out whole.
func TestRealProvider(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "svc"))))
	ctx, root := tp.Tracer("stepline").Start(t.Context(), "run sre-alert-triage", trace.WithSpanKind(trace.SpanKindServer))
	_, child := tp.Tracer("stepline").Start(ctx, "chat gpt-4o", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int("gen_ai.usage.output_tokens", 40)))
	child.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
	child.SetStatus(codes.Error, "HTTP 503")
	child.End()
	root.End()
	bodies, _ := encodeAll(t, exp.GetSpans().Snapshots(), DefaultMaxRequestBytes) // before Shutdown, which empties exp
	_ = tp.Shutdown(t.Context())
	req := decode(t, bodies[0])
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	c, r := spans[0], spans[1]
	if c.Name != "chat gpt-4o" || !bytes.Equal(c.ParentSpanId, r.SpanId) || !bytes.Equal(c.TraceId, r.TraceId) ||
		c.Flags != 0x101 || r.ParentSpanId != nil || c.Events[0].Name != "retry" || c.EndTimeUnixNano < c.StartTimeUnixNano ||
		!hasAttr(c.Attributes, "gen_ai.usage.output_tokens", integer(40)) {
		t.Errorf("child %v\nroot %v", c, r)
	}
}
