package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/stepline/stepline/shared/store"
)

// Normalized is what the differential tier compares of a run: everything
// both engines record the same way when they run the same machine on the
// same data. Left out, because they legitimately differ:
//
//   - identities and times: run IDs (a child's becomes "<child run N>"),
//     timestamps, durations;
//   - what the executor itself reports: model, provider, raw_response (in
//     records and in outputs), cost (scripted replies have no price);
//   - the IDs of an agent's tool calls, which a real provider names (a
//     scripted turn leaves them to the loop): in a trace each becomes
//     "<call N>", N counting the distinct IDs in order, so that a call
//     and its result or denial still pair up;
//   - where a trace too long for its record is kept (trace_ref: a file
//     locally, an S3 object in the box): only whether there is one;
//   - the wording of executor errors after their name: the local run's
//     scripted "ExecutorTimeout: step \"x\": scripted timeout (file:line)"
//     and the box's "ExecutorTimeout: webhook: no answer from … within 2s"
//     both read "ExecutorTimeout: …".
//
// Everything else is compared: run status, reason, stage, source, team,
// trigger, usage tokens and final output; the order steps were first
// recorded in (where both engines order them strictly); per step record
// its name, attempt, executor, status, error name, the three confidences,
// output, verifier output, rendered prompt, token counts and flags, and
// an agent step's agent, agent version, iterations and trace (every
// event's type, iteration, name, arguments, content, error and cut
// marks); and the same for every sub-pipeline run.
type Normalized struct {
	Run map[string]any `json:"run"`
	// Steps are the records sorted by name and attempt. Index, the
	// milliseconds since the run started when the record was made, is
	// left out: the order of the steps is compared by Diff, from first.
	Steps    []map[string]any `json:"steps"`
	Children []Normalized     `json:"children,omitempty"`

	// first is the Index of each step's first record, for steps that are
	// not parallel branches or fan-out items (whose order among
	// themselves is a race in either engine).
	first map[string]int
}

// errorNames are the typed errors a step reports (package shared/fault)
// and the errors of the state machine the reasons quote.
var errorText = regexp.MustCompile(`\b(ExecutorTimeout|ExecutorUnavailable|RateLimited|ExecutorRejected|InvalidOutput|ModelRefused|ConfigError|TemplateError): [^\n]*`)

// NormalizeText replaces the wording after an executor error's name.
func NormalizeText(s string) string {
	return errorText.ReplaceAllString(s, "$1: …")
}

// normError is a record's error: its name when it starts with one, else
// only that there was one (the message is the executor's own wording).
func normError(s string) string {
	if s == "" {
		return ""
	}
	if m := errorText.FindStringSubmatch(s); m != nil && strings.HasPrefix(s, m[0]) {
		return m[1] + ": …"
	}
	return "<error message>"
}

// dropped output fields: set by the executor, not by the runner.
var executorFields = map[string]bool{"model": true, "provider": true, "raw_response": true}

// Normalize returns the comparable form of a side.
func Normalize(s Side) Normalized {
	children := map[string]string{}
	for i, c := range s.Children {
		children[c.RunID] = fmt.Sprintf("<child run %d>", i+1)
	}
	n := Normalized{Run: normRun(s.Run, children), first: map[string]int{}}
	for _, r := range s.Steps {
		if i, seen := n.first[r.Name]; !strings.Contains(r.Name, "/") && (!seen || r.Index < i) {
			n.first[r.Name] = r.Index
		}
	}
	records := append([]store.StepRecord(nil), s.Steps...)
	sort.SliceStable(records, func(i, j int) bool {
		if records[i].Name != records[j].Name {
			return records[i].Name < records[j].Name
		}
		return records[i].Attempt < records[j].Attempt
	})
	for _, r := range records {
		n.Steps = append(n.Steps, normStep(r, children))
	}
	for _, c := range s.Children {
		n.Children = append(n.Children, Normalize(c))
	}
	return n
}

func normRun(r store.Run, children map[string]string) map[string]any {
	m := map[string]any{
		"pipeline": r.Pipeline, "status": string(r.Status), "reason": NormalizeText(r.Reason),
		"stage": r.Stage, "source": r.Source, "team": r.Team, "fingerprint": r.Fingerprint,
		"input_tokens": r.Usage.InputTokens, "output_tokens": r.Usage.OutputTokens,
		"trigger": normJSON(r.Trigger, children), "final_output": normJSON(r.FinalOutput, children),
		"has_parent": r.ParentRunID != "",
	}
	return m
}

func normStep(r store.StepRecord, children map[string]string) map[string]any {
	flags := append([]string(nil), r.Flags...)
	sort.Strings(flags)
	return map[string]any{
		"name": r.Name, "attempt": r.Attempt, "executor": r.Executor, "status": string(r.Status),
		"error":                normError(r.Error),
		"primary_confidence":   deref(r.PrimaryConfidence),
		"verifier_confidence":  deref(r.VerifierConfidence),
		"effective_confidence": deref(r.EffectiveConfidence),
		"output":               normJSON(r.Output, children),
		"verifier_output":      normJSON(r.VerifierOutput, children),
		"prompt":               NormalizeText(r.Prompt),
		"input_tokens":         r.InputTokens, "output_tokens": r.OutputTokens,
		"flags":         flags,
		"agent":         r.Agent,
		"agent_version": r.AgentVersion,
		"iterations":    r.Iterations,
		"trace":         normTrace(r.Trace),
		"has_trace_ref": r.TraceRef != "",
	}
}

// normTrace decodes an agent step's trace and names each tool call's ID
// by its order of first appearance ("<call 1>", …).
func normTrace(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var events []map[string]any
	if err := json.Unmarshal(raw, &events); err != nil {
		return "<not a trace: " + string(raw) + ">"
	}
	ids := map[string]string{}
	out := make([]any, len(events))
	for i, ev := range events {
		if id, ok := ev["id"].(string); ok {
			if _, seen := ids[id]; !seen {
				ids[id] = fmt.Sprintf("<call %d>", len(ids)+1)
			}
			ev["id"] = ids[id]
		}
		out[i] = ev
	}
	return out
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// normJSON decodes a JSON field, drops the executor's fields, replaces
// child run IDs and normalises error wording in every string.
func normJSON(raw json.RawMessage, children map[string]string) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "<not JSON: " + string(raw) + ">"
	}
	return normValue(v, children)
}

func normValue(v any, children map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if executorFields[k] {
				continue
			}
			out[k] = normValue(e, children)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normValue(e, children)
		}
		return out
	case string:
		if c, ok := children[x]; ok {
			return c
		}
		return NormalizeText(x)
	}
	return v
}

// Flatten lists every leaf of a normalised run as path → JSON value.
func Flatten(n Normalized) map[string]string {
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				out[path] = "{}"
			}
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			if len(x) == 0 {
				out[path] = "[]"
			}
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		default:
			out[path] = marshal(x)
		}
	}
	b, _ := json.Marshal(n)
	var v any
	json.Unmarshal(b, &v)
	walk("", v)
	return out
}

// marshal is JSON without HTML escapes (the diff is read by people).
func marshal(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// Diff compares two normalised runs and returns their differences side by
// side, one line per path ("" when they are the same), with a legend
// naming each step record by position so that a missing or extra
// record is easy to place.
func Diff(leftName string, left Normalized, rightName string, right Normalized) string {
	l, r := Flatten(left), Flatten(right)
	paths := map[string]bool{}
	for p := range l {
		paths[p] = true
	}
	for p := range r {
		paths[p] = true
	}
	var diff []string
	for p := range paths {
		if l[p] != r[p] {
			diff = append(diff, p)
		}
	}
	order := orderDiff(left.first, right.first)
	if len(diff) == 0 && len(order) == 0 {
		return ""
	}
	sort.Strings(diff)
	var b strings.Builder
	w := 0
	for _, p := range diff {
		w = max(w, len(p))
	}
	w = min(w, 60)
	fmt.Fprintf(&b, "%-*s  %-50s  %s\n", w, "field", leftName, rightName)
	for _, p := range diff {
		fmt.Fprintf(&b, "%-*s  %-50s  %s\n", w, strings.TrimPrefix(p, "."), show(l[p]), show(r[p]))
	}
	for _, o := range order {
		fmt.Fprintf(&b, "order: %s (%s) but %s (%s)\n", o[0], leftName, o[1], rightName)
	}
	b.WriteString("\nstep records (name attempt status effective confidence):\n")
	rows := max(len(left.Steps), len(right.Steps))
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&b, "  [%d]  %-48s  %s\n", i, stepLine(left.Steps, i), stepLine(right.Steps, i))
	}
	return b.String()
}

// orderDiff lists the pairs of steps the two runs recorded in opposite
// orders. Steps recorded in the same millisecond have no order (the
// local engine often records several in one), so only strict orders are
// compared.
func orderDiff(left, right map[string]int) [][2]string {
	var out [][2]string
	names := make([]string, 0, len(left))
	for n := range left {
		if _, ok := right[n]; ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for i, a := range names {
		for _, b := range names[i+1:] {
			l, r := left[a]-left[b], right[a]-right[b]
			if l < 0 && r > 0 || l > 0 && r < 0 {
				before := func(x int) string {
					if x < 0 {
						return a + " before " + b
					}
					return b + " before " + a
				}
				out = append(out, [2]string{before(l), before(r)})
			}
		}
	}
	return out
}

func show(s string) string {
	if s == "" {
		return "(absent)"
	}
	if len(s) > 200 {
		return s[:199] + "…"
	}
	return s
}

func stepLine(steps []map[string]any, i int) string {
	if i >= len(steps) {
		return "(none)"
	}
	s := steps[i]
	return fmt.Sprintf("%v #%v %v %v", s["name"], s["attempt"], s["status"], s["effective_confidence"])
}
