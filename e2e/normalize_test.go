package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/store"
)

func TestNormalizeText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`ExecutorTimeout: step "x": scripted timeout (r.yaml:2:5)`, "ExecutorTimeout: …"},
		{`step "x" failed: ExecutorUnavailable: webhook: HTTP 503 from http://h/x`, `step "x" failed: ExecutorUnavailable: …`},
		{"States.Timeout", "States.Timeout"},
		{"ExecutorTimeout", "ExecutorTimeout"},             // a name alone: no wording to drop
		{"ExecutorTimeout:x", "ExecutorTimeout:x"},         // not an error's text
		{"NotExecutorTimeout: x", "NotExecutorTimeout: x"}, // another word
		{"ConfigError: a\nsecond line", "ConfigError: …\nsecond line"},
	} {
		if got := NormalizeText(c.in); got != c.want {
			t.Errorf("NormalizeText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNormError(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "",
		"ExecutorTimeout: no answer":          "ExecutorTimeout: …",
		`step "x": scripted error "http 500"`: "<error message>",
		"gateway: HTTP 503 from http://h":     "<error message>",
		"Approval.Cancelled: withdrawn":       "<error message>",
	} {
		if got := normError(in); got != want {
			t.Errorf("normError(%q) = %q, want %q", in, got, want)
		}
	}
}

func f(v float64) *float64 { return &v }

func TestNormalize(t *testing.T) {
	side := Side{
		RunID: "run-1",
		Run:   store.Run{ID: "run-1", Pipeline: "p", Status: store.RunCompleted, Reason: "ExecutorRejected: HTTP 400", Usage: store.Usage{InputTokens: 3, CostUSD: f(0.5)}},
		Steps: []store.StepRecord{
			{Name: "b", Index: 900, Attempt: 1, Status: store.StepCompleted, EffectiveConfidence: f(0.8), Model: "gpt", Provider: "openai", RawResponse: "raw",
				Output: json.RawMessage(`{"confidence": 0.8, "model": "gpt", "provider": "openai", "sub_run_id": "child-9", "nested": {"raw_response": "x", "e": "InvalidOutput: bad"}}`)},
			{Name: "grp/y", Index: 5, Attempt: 1, Status: store.StepCompleted},
			{Name: "grp/x", Index: 6, Attempt: 1, Status: store.StepCompleted},
			{Name: "grp", Index: 7, Attempt: 1, Status: store.StepCompleted},
			{Name: "a", Index: 1, Attempt: 2, Status: store.StepCompleted},
			{Name: "a", Index: 0, Attempt: 1, Status: store.StepFailed, Error: "gateway: HTTP 503"},
		},
		Children: []Side{{RunID: "child-9", Run: store.Run{ID: "child-9", ParentRunID: "run-1", Pipeline: "c", Status: store.RunCompleted}}},
	}
	n := Normalize(side)
	if got := marshal(n.first); got != `{"a":0,"b":900,"grp":7}` {
		t.Errorf("first records %s, want each step's first index without branches", got)
	}
	var names []string
	for _, s := range n.Steps {
		names = append(names, s["name"].(string)+"#"+jsonText(s["attempt"]))
	}
	if got := strings.Join(names, ","); got != "a#1,a#2,b#1,grp#1,grp/x#1,grp/y#1" {
		t.Errorf("records sorted %s", got)
	}
	b := n.Steps[2]
	if got := jsonText(b["output"]); got != `{"confidence":0.8,"nested":{"e":"InvalidOutput: …"},"sub_run_id":"<child run 1>"}` {
		t.Errorf("output %s", got)
	}
	for _, k := range []string{"model", "provider", "raw_response", "index", "cost_usd"} {
		if _, ok := b[k]; ok {
			t.Errorf("record keeps %s", k)
		}
	}
	if n.Run["reason"] != "ExecutorRejected: …" || n.Run["input_tokens"] != int64(3) || n.Run["cost_usd"] != nil {
		t.Errorf("run %v", n.Run)
	}
	if n.Steps[0]["error"] != "<error message>" || len(n.Children) != 1 || n.Children[0].Run["has_parent"] != true {
		t.Errorf("steps[0] %v, children %v", n.Steps[0], n.Children)
	}
}

func TestDiff(t *testing.T) {
	base := Side{RunID: "r", Run: store.Run{Pipeline: "p", Status: store.RunCompleted},
		Steps: []store.StepRecord{{Name: "a", Attempt: 1, Status: store.StepCompleted, EffectiveConfidence: f(0.8)}}}
	if d := Diff("local", Normalize(base), "box", Normalize(base)); d != "" {
		t.Errorf("the same run differs:\n%s", d)
	}
	other := base
	other.Steps = []store.StepRecord{{Name: "a", Attempt: 1, Status: store.StepEscalated, EffectiveConfidence: f(0.7)}}
	d := Diff("local", Normalize(base), "box", Normalize(other))
	for _, want := range []string{"steps[0].status", `"completed"`, `"escalated"`, "steps[0].effective_confidence", "0.8", "0.7", "[0]  a #1 completed 0.8"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	fewer := base
	fewer.Steps = nil
	if d := Diff("local", Normalize(base), "box", Normalize(fewer)); !strings.Contains(d, "(absent)") || !strings.Contains(d, "(none)") {
		t.Errorf("a missing record is not shown:\n%s", d)
	}
}

func TestOrderDiff(t *testing.T) {
	for _, c := range []struct {
		name        string
		left, right map[string]int
		want        string
	}{
		{"same order", map[string]int{"a": 1, "b": 2}, map[string]int{"a": 10, "b": 20}, ""},
		{"opposite", map[string]int{"a": 1, "b": 2}, map[string]int{"a": 20, "b": 10}, "a before b|b before a"},
		{"tied on one side", map[string]int{"a": 3, "b": 3}, map[string]int{"a": 20, "b": 10}, ""},
		{"one apart", map[string]int{"a": 3, "b": 4}, map[string]int{"a": 5, "b": 4}, "a before b|b before a"},
		{"a step on one side only", map[string]int{"a": 1, "b": 2}, map[string]int{"b": 1}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, o := range orderDiff(c.left, c.right) {
				got = append(got, o[0]+"|"+o[1])
			}
			if strings.Join(got, ";") != c.want {
				t.Errorf("orderDiff = %v, want %q", got, c.want)
			}
		})
	}
	l := Normalize(Side{Steps: []store.StepRecord{{Name: "a", Index: 1, Attempt: 1}, {Name: "b", Index: 2, Attempt: 1}}})
	r := Normalize(Side{Steps: []store.StepRecord{{Name: "a", Index: 9, Attempt: 1}, {Name: "b", Index: 2, Attempt: 1}}})
	if d := Diff("local", l, "box", r); !strings.Contains(d, "order: a before b (local) but b before a (box)") {
		t.Errorf("the order difference is not shown:\n%s", d)
	}
}

func jsonText(v any) string { return marshal(v) }

// TestNormalizeAgent: an agent step's record is compared with its agent,
// version, iterations and trace; only the tool calls' IDs (named by
// order, pairs kept) and where a long trace is kept are normalised.
func TestNormalizeAgent(t *testing.T) {
	record := func(trace, ref string) store.StepRecord {
		return store.StepRecord{Name: "investigate", Attempt: 1, Status: store.StepCompleted, Agent: "sre", AgentVersion: "f777c0ef4d15",
			Iterations: 3, Trace: json.RawMessage(trace), TraceRef: ref}
	}
	local := `[{"type": "text", "iteration": 1, "content": "look"},
		{"type": "tool_call", "iteration": 1, "id": "call_1_1", "name": "g.q", "arguments": {"e": 1}},
		{"type": "tool_call", "iteration": 1, "id": "call_1_2", "name": "g.q", "arguments": {"e": 2}},
		{"type": "tool_result", "iteration": 1, "id": "call_1_1", "name": "g.q", "content": "1"},
		{"type": "tool_denied", "iteration": 1, "id": "call_1_2", "name": "g.q", "reason": "no"}]`
	box := strings.NewReplacer("call_1_1", "tooluse_box1_1", "call_1_2", "tooluse_box1_2").Replace(local)
	base := Normalize(Side{Steps: []store.StepRecord{record(local, "")}})
	step := base.Steps[0]
	if step["agent"] != "sre" || step["agent_version"] != "f777c0ef4d15" || step["iterations"] != 3 || step["has_trace_ref"] != false {
		t.Errorf("agent fields %v", step)
	}
	if got := jsonText(step["trace"]); !strings.Contains(got, `"id":"<call 1>"`) || strings.Count(got, `"<call 2>"`) != 2 || strings.Contains(got, "call_1") {
		t.Errorf("trace %s", got)
	}
	for _, c := range []struct {
		name  string
		other store.StepRecord
		diff  string // a path that differs; "" for none
	}{
		{"provider's IDs", record(box, ""), ""},
		{"where a long trace is kept", record(`[]`, "s3://b/run/investigate.trace/trace.json"), "steps[0].has_trace_ref"},
		{"a result paired with the other call", record(strings.Replace(box, `"tool_result", "iteration": 1, "id": "tooluse_box1_1"`, `"tool_result", "iteration": 1, "id": "tooluse_box1_2"`, 1), ""), "steps[0].trace[3].id"},
		{"a tool's answer", record(strings.Replace(box, `"content": "1"`, `"content": "2"`, 1), ""), "steps[0].trace[3].content"},
		{"an iteration", record(strings.Replace(box, `"iteration": 1, "content": "look"`, `"iteration": 2, "content": "look"`, 1), ""), "steps[0].trace[0].iteration"},
		{"the version", func() store.StepRecord { r := record(box, ""); r.AgentVersion = "000000000000"; return r }(), "steps[0].agent_version"},
		{"iterations", func() store.StepRecord { r := record(box, ""); r.Iterations = 4; return r }(), "steps[0].iterations"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Diff("local", base, "box", Normalize(Side{Steps: []store.StepRecord{c.other}}))
			switch {
			case c.diff == "" && d != "":
				t.Errorf("differs:\n%s", d)
			case c.diff != "" && !strings.Contains(d, c.diff):
				t.Errorf("the diff lacks %s:\n%s", c.diff, d)
			}
		})
	}
}
