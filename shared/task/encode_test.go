package task

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// checkMarshal compares MarshalResponse with json.Marshal on r: the same
// bytes, or the same error.
func checkMarshal(t *testing.T, r Response) {
	t.Helper()
	want, werr := json.Marshal(r)
	got, err := MarshalResponse(r)
	if (err == nil) != (werr == nil) || (err != nil && (err.Error() != werr.Error() || reflect.TypeOf(err) != reflect.TypeOf(werr))) {
		t.Fatalf("%+v: error %v, json.Marshal %v", r, err, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%+v:\n got %s\nwant %s", r, got, want)
	}
}

func TestMarshalResponseAsJSON(t *testing.T) {
	g, c, no, yes := 0.25, 1e-7, false, true
	out := json.RawMessage(`{"confidence":0.9,"summary":"done","next_step_context":"go on"}`)
	for _, r := range []Response{
		{},
		{Status: StatusCompleted, Step: "s1", Output: out, Steps: map[string]json.RawMessage{"s1": out}, Usage: Usage{1, 2, 0.5}},
		{Status: StatusEscalated, Step: "<s&>", Reason: "confidence \u2028 below <0.5> & more\x01\xff",
			Output: json.RawMessage(" {\n \"a\" : [1, 2.5e3, \"<b>\u2029\"] } "),
			Steps:  map[string]json.RawMessage{"b": nil, "a": json.RawMessage(`"x"`), "c/d": json.RawMessage(`null`), "<": json.RawMessage(`[]`)}},
		{Status: StatusContinue, AgentLoop: &AgentLoop{Turn: 3, Tasks: 1, Retries: 2, StartedAt: "2026-12-03T14:40:21Z", Deadline: "x"},
			Agent: &AgentSummary{Agent: "a", Iterations: 4, ToolCalls: 5}},
		{Agent: &AgentSummary{Tasks: 1}, Check: &CheckAt{Index: 2, Name: "human", Attempt: 1}},
		{Trust: &TrustSummary{Policy: "min", Combined: 0.5}},
		{Trust: &TrustSummary{Policy: "min", Combined: 1e21, G: &g, C: &c, D: &no}},
		{Trust: &TrustSummary{D: &yes}, Usage: Usage{-1, math.MaxInt64, math.Copysign(0, -1)}},
		{Output: json.RawMessage{}, Steps: map[string]json.RawMessage{}},  // empty: left out
		{Steps: map[string]json.RawMessage{"s": json.RawMessage{}}},       // empty value: json.Marshal fails
		{Output: json.RawMessage(`{"a":}`)},                               // invalid
		{Steps: map[string]json.RawMessage{"s": json.RawMessage(`[1,]`)}}, // invalid
		{Usage: Usage{CostUSD: math.NaN()}},
		{Usage: Usage{CostUSD: math.Inf(1)}},
		{Trust: &TrustSummary{Combined: math.Inf(-1)}},
		{Trust: &TrustSummary{G: &[]float64{math.NaN()}[0]}},
	} {
		checkMarshal(t, r)
	}
	// More entries than the keys' stack array holds.
	many := map[string]json.RawMessage{}
	for _, k := range []string{"j", "i", "h", "g", "f", "e", "d", "c", "b", "a"} {
		many[k] = json.RawMessage(`{"k":"` + k + `"}`)
	}
	checkMarshal(t, Response{Steps: many})
}

// FuzzMarshalResponse checks MarshalResponse against json.Marshal for
// any strings, JSON texts and numbers in a Response.
//
//	go test ./shared/task -run '^$' -fuzz FuzzMarshalResponse -fuzztime 60s
func FuzzMarshalResponse(f *testing.F) {
	f.Add("completed", "s1", "done", `{"confidence":0.9}`, "s0", `"x"`, int64(1), 0.5, 3, true)
	f.Add("<&>", "\u2028", "\xff", " [ 1 , 2 ] ", "", `nul`, int64(-1), math.Inf(1), 0, false)
	f.Fuzz(func(t *testing.T, status, step, reason, output, key, value string, n int64, f float64, turn int, flag bool) {
		r := Response{Status: status, Step: step, Reason: reason, Output: json.RawMessage(output),
			Steps: map[string]json.RawMessage{key: json.RawMessage(value), step: json.RawMessage(output)},
			Usage: Usage{n, -n, f}}
		if flag {
			r.AgentLoop = &AgentLoop{Turn: turn, StartedAt: reason}
			r.Agent = &AgentSummary{Agent: key, Tasks: turn}
			r.Check = &CheckAt{Index: turn, Name: value}
			r.Trust = &TrustSummary{Policy: status, Combined: f, G: &f, D: &flag}
		}
		checkMarshal(t, r)
	})
}

func BenchmarkMarshalResponse(b *testing.B) {
	out := json.RawMessage(`{"confidence":0.9,"next_step_context":"go on","summary":"done"}`)
	r := Response{Status: StatusCompleted, Step: "s1", Output: out, Steps: map[string]json.RawMessage{"s1": out}, Usage: Usage{100, 20, 0.0012}}
	b.Run("MarshalResponse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = MarshalResponse(r)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(r)
		}
	})
}
