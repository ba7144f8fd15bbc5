package otlpjson

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The JSON of OTLP's messages (opentelemetry/proto/trace/v1/trace.proto
// and common/v1/common.proto) in the protobuf JSON mapping as OTLP/HTTP
// amends it: lowerCamelCase names, trace and span IDs in hex, enums as
// integers, 64-bit integers as decimal strings. Fields at their zero
// value are left out, as protobuf's own encoder leaves them.

type span struct {
	TraceID                string     `json:"traceId"`
	SpanID                 string     `json:"spanId"`
	TraceState             string     `json:"traceState,omitempty"`
	ParentSpanID           string     `json:"parentSpanId,omitempty"`
	Flags                  uint32     `json:"flags,omitempty"`
	Name                   string     `json:"name"`
	Kind                   int        `json:"kind,omitempty"`
	StartTimeUnixNano      string     `json:"startTimeUnixNano,omitempty"`
	EndTimeUnixNano        string     `json:"endTimeUnixNano,omitempty"`
	Attributes             []keyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32     `json:"droppedAttributesCount,omitempty"`
	Events                 []event    `json:"events,omitempty"`
	DroppedEventsCount     uint32     `json:"droppedEventsCount,omitempty"`
	Links                  []link     `json:"links,omitempty"`
	DroppedLinksCount      uint32     `json:"droppedLinksCount,omitempty"`
	Status                 *status    `json:"status,omitempty"`
}

type event struct {
	TimeUnixNano           string     `json:"timeUnixNano,omitempty"`
	Name                   string     `json:"name"`
	Attributes             []keyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32     `json:"droppedAttributesCount,omitempty"`
}

type link struct {
	TraceID                string     `json:"traceId"`
	SpanID                 string     `json:"spanId"`
	TraceState             string     `json:"traceState,omitempty"`
	Attributes             []keyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32     `json:"droppedAttributesCount,omitempty"`
	Flags                  uint32     `json:"flags,omitempty"`
}

// status codes of OTLP's Status (not the same numbers as codes.Code).
const (
	statusUnset = 0
	statusOK    = 1
	statusError = 2
)

type status struct {
	Message string `json:"message,omitempty"`
	Code    int    `json:"code,omitempty"`
}

type resourceJSON struct {
	Attributes []keyValue `json:"attributes,omitempty"`
}

type scopeJSON struct {
	Name       string     `json:"name,omitempty"`
	Version    string     `json:"version,omitempty"`
	Attributes []keyValue `json:"attributes,omitempty"`
}

type keyValue struct {
	Key   string   `json:"key"`
	Value anyValue `json:"value"`
}

// anyValue is AnyValue: one field set, none for an empty value.
type anyValue struct {
	StringValue *string     `json:"stringValue,omitempty"`
	BoolValue   *bool       `json:"boolValue,omitempty"`
	IntValue    string      `json:"intValue,omitempty"`
	DoubleValue *double     `json:"doubleValue,omitempty"`
	ArrayValue  *arrayValue `json:"arrayValue,omitempty"`
	KvlistValue *kvlist     `json:"kvlistValue,omitempty"`
	BytesValue  *[]byte     `json:"bytesValue,omitempty"` // base64, as protobuf maps bytes
}

type arrayValue struct {
	Values []anyValue `json:"values"`
}

type kvlist struct {
	Values []keyValue `json:"values"`
}

// double is a float64 in the protobuf JSON mapping: a number, or "NaN",
// "Infinity" and "-Infinity" as strings.
type double float64

func (d double) MarshalJSON() ([]byte, error) {
	f := float64(d)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// maxValueDepth bounds how deep nested attribute values (slices and maps
// of values) are written; deeper ones are written empty.
const maxValueDepth = 16

func attributes(kvs []attribute.KeyValue) []keyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]keyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = keyValue{Key: string(kv.Key), Value: value(kv.Value, 0)}
	}
	return out
}

func value(v attribute.Value, depth int) anyValue {
	if depth >= maxValueDepth {
		return anyValue{}
	}
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return anyValue{BoolValue: &b}
	case attribute.INT64:
		return anyValue{IntValue: strconv.FormatInt(v.AsInt64(), 10)}
	case attribute.FLOAT64:
		d := double(v.AsFloat64())
		return anyValue{DoubleValue: &d}
	case attribute.STRING:
		s := v.AsString()
		return anyValue{StringValue: &s}
	case attribute.BYTESLICE:
		b := v.AsByteSlice()
		if b == nil {
			b = []byte{}
		}
		return anyValue{BytesValue: &b}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), func(b bool) anyValue { return anyValue{BoolValue: &b} })
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), func(n int64) anyValue { return anyValue{IntValue: strconv.FormatInt(n, 10)} })
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), func(f float64) anyValue { d := double(f); return anyValue{DoubleValue: &d} })
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), func(s string) anyValue { return anyValue{StringValue: &s} })
	case attribute.SLICE:
		return array(v.AsSlice(), func(e attribute.Value) anyValue { return value(e, depth+1) })
	case attribute.MAP:
		kvs := v.AsMap()
		out := make([]keyValue, len(kvs))
		for i, kv := range kvs {
			out[i] = keyValue{Key: string(kv.Key), Value: value(kv.Value, depth+1)}
		}
		return anyValue{KvlistValue: &kvlist{Values: out}}
	}
	return anyValue{} // EMPTY, and any type added later
}

func array[T any](s []T, f func(T) anyValue) anyValue {
	out := make([]anyValue, len(s))
	for i, e := range s {
		out[i] = f(e)
	}
	return anyValue{ArrayValue: &arrayValue{Values: out}}
}

func unixNano(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatUint(uint64(t.UnixNano()), 10)
}

// count is a dropped count as OTLP's uint32.
func count(n int) uint32 {
	return uint32(min(max(n, 0), math.MaxUint32))
}

// Span flags beyond the W3C trace flags (SpanFlags in trace.proto): the
// exporter knows whether the parent (or linked) span is remote.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func flags(tf trace.TraceFlags, other trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if other.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

func encodeSpan(s sdktrace.ReadOnlySpan) ([]byte, error) {
	sc, parent := s.SpanContext(), s.Parent()
	out := span{
		TraceID:                hex.EncodeToString(traceID(sc)),
		SpanID:                 hex.EncodeToString(spanID(sc)),
		TraceState:             sc.TraceState().String(),
		Flags:                  flags(sc.TraceFlags(), parent),
		Name:                   s.Name(),
		Kind:                   int(s.SpanKind()), // trace.SpanKind has OTLP's numbers
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             attributes(s.Attributes()),
		DroppedAttributesCount: count(s.DroppedAttributes()),
		DroppedEventsCount:     count(s.DroppedEvents()),
		DroppedLinksCount:      count(s.DroppedLinks()),
	}
	if parent.HasSpanID() {
		out.ParentSpanID = hex.EncodeToString(spanID(parent))
	}
	for _, e := range s.Events() {
		out.Events = append(out.Events, event{
			TimeUnixNano:           unixNano(e.Time),
			Name:                   e.Name,
			Attributes:             attributes(e.Attributes),
			DroppedAttributesCount: count(e.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		out.Links = append(out.Links, link{
			TraceID:                hex.EncodeToString(traceID(l.SpanContext)),
			SpanID:                 hex.EncodeToString(spanID(l.SpanContext)),
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             attributes(l.Attributes),
			DroppedAttributesCount: count(l.DroppedAttributeCount),
			Flags:                  flags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		out.Status = &status{Code: statusError, Message: st.Description}
	case codes.Ok:
		out.Status = &status{Code: statusOK}
	}
	return json.Marshal(out)
}

func traceID(sc trace.SpanContext) []byte { id := sc.TraceID(); return id[:] }
func spanID(sc trace.SpanContext) []byte  { id := sc.SpanID(); return id[:] }

// A batch is grouped as OTLP nests it: spans by instrumentation scope,
// scopes by resource, each group once, in the order first met.
type resourceGroup struct {
	head   []byte // `{"resource":{…},"schemaUrl":"…","scopeSpans":[`
	scopes []*scopeGroup
}

type scopeGroup struct {
	head  []byte // `{"scope":{…},"schemaUrl":"…","spans":[`
	spans [][]byte
}

// groupFoot closes a resource's or a scope's group: `]}`.
const groupFoot = len(`]}`)

var (
	envelopeHead = []byte(`{"resourceSpans":[`)
	envelopeFoot = []byte(`]}`)
)

type resourceKey struct {
	attrs     attribute.Distinct
	schemaURL string
}

type scopeKey struct {
	resource                 resourceKey
	name, version, schemaURL string
	attrs                    attribute.Distinct
}

func group(spans []sdktrace.ReadOnlySpan) ([]*resourceGroup, error) {
	var (
		groups    []*resourceGroup
		resources = map[resourceKey]*resourceGroup{}
		scopes    = map[scopeKey]*scopeGroup{}
	)
	for _, s := range spans {
		res := s.Resource()
		if res == nil {
			res = resource.Empty()
		}
		rk := resourceKey{res.Equivalent(), res.SchemaURL()}
		rg := resources[rk]
		if rg == nil {
			head, err := groupHead("resource", resourceJSON{Attributes: attributes(res.Attributes())}, res.SchemaURL(), "scopeSpans")
			if err != nil {
				return nil, err
			}
			rg = &resourceGroup{head: head}
			resources[rk] = rg
			groups = append(groups, rg)
		}
		sc := s.InstrumentationScope()
		sk := scopeKey{rk, sc.Name, sc.Version, sc.SchemaURL, sc.Attributes.Equivalent()}
		sg := scopes[sk]
		if sg == nil {
			head, err := groupHead("scope", scopeOf(sc), sc.SchemaURL, "spans")
			if err != nil {
				return nil, err
			}
			sg = &scopeGroup{head: head}
			scopes[sk] = sg
			rg.scopes = append(rg.scopes, sg)
		}
		b, err := encodeSpan(s)
		if err != nil {
			return nil, err
		}
		sg.spans = append(sg.spans, b)
	}
	return groups, nil
}

func scopeOf(sc instrumentation.Scope) scopeJSON {
	return scopeJSON{Name: sc.Name, Version: sc.Version, Attributes: attributes(sc.Attributes.ToSlice())}
}

// groupHead is `{"<name>":<v>,"schemaUrl":"<schemaURL>","<list>":[`.
func groupHead(name string, v any, schemaURL, list string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(`{"` + name + `":`)
	buf.Write(b)
	if schemaURL != "" {
		u, err := json.Marshal(schemaURL)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`,"schemaUrl":`)
		buf.Write(u)
	}
	buf.WriteString(`,"` + list + `":[`)
	return buf.Bytes(), nil
}

// pack writes the groups' spans as ExportTraceServiceRequest bodies of at
// most limit bytes each, in order, and counts the spans that do not fit
// in a request of their own (left out).
func pack(groups []*resourceGroup, limit int) (bodies [][]byte, tooLarge int) {
	type open struct {
		res   *resourceGroup
		scope *scopeGroup
	}
	var (
		buf  bytes.Buffer
		cur  open // the groups the body being written has open
		size int  // buf's length once its open groups and envelope are closed
	)
	reset := func() {
		buf.Reset()
		buf.Write(envelopeHead)
		cur = open{}
		size = len(envelopeHead) + len(envelopeFoot)
	}
	flush := func() {
		if cur.res == nil {
			return
		}
		buf.WriteString(`]}]}`) // the scope and the resource
		buf.Write(envelopeFoot)
		bodies = append(bodies, bytes.Clone(buf.Bytes()))
		reset()
	}
	// cost is what adding s under (rg, sg) adds to the body.
	cost := func(rg *resourceGroup, sg *scopeGroup, s []byte) int {
		switch {
		case cur.res != rg:
			n := len(rg.head) + groupFoot + len(sg.head) + groupFoot + len(s)
			if cur.res != nil {
				n++ // comma between resources
			}
			return n
		case cur.scope != sg:
			return 1 + len(sg.head) + groupFoot + len(s)
		}
		return 1 + len(s)
	}
	reset()
	for _, rg := range groups {
		for _, sg := range rg.scopes {
			for _, s := range sg.spans {
				n := cost(rg, sg, s)
				if size+n > limit && cur.res != nil {
					flush()
					n = cost(rg, sg, s)
				}
				if size+n > limit {
					tooLarge++
					continue
				}
				switch {
				case cur.res != rg:
					if cur.res != nil {
						buf.WriteString(`]}]},`)
					}
					buf.Write(rg.head)
					buf.Write(sg.head)
				case cur.scope != sg:
					buf.WriteString(`]},`)
					buf.Write(sg.head)
				default:
					buf.WriteByte(',')
				}
				buf.Write(s)
				cur = open{rg, sg}
				size += n
			}
		}
	}
	flush()
	return bodies, tooLarge
}
