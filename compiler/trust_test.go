package compiler

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
)

// trustHead is a pipeline whose first step runs the triage agent.
const trustHead = "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: triage}\n"

// TestTrustDiagnostics: what validate says of grounding and deterministic
// checks, each problem positioned.
func TestTrustDiagnostics(t *testing.T) {
	p := agentProject(t, agentConfig, map[string]string{
		"agents/grounding-judge/agent.yaml": "name: grounding-judge\nmodel: anthropic/claude-haiku-4-5\n",
		"agents/grounding-judge/soul.md":    "judge",
	})
	tests := []struct {
		name, src string
		want      []string
	}{
		{"defaults", trustHead + "    grounding: {}\n", nil},
		{"a full block", trustHead + `    grounding: {agent: judge, executor: anthropic, executor_config: {model: anthropic/claude-sonnet-4-6}, timeout_seconds: 60, enforce: true, max_trace_chars: 500}
    deterministic_checks:
      - {name: health, type: webhook, url: "https://s/{{ labels.service }}", headers: {X: "${TOKEN}"}, payload: {claim: "{{ output.summary }}"}, expect: "response.status_code == 200"}
      - {name: ok, type: human, message: "Right? {{ output.summary }}", timeout_seconds: 3600}
`, nil},
		{"unknown judge", trustHead + "    grounding: {agent: grounding-jugde}\n", []string{
			`p.yaml:6:24: step "a" grounding: grounding.agent: unknown agent "grounding-jugde" (did you mean "grounding-judge"?) (agents in ` + p.Agents + `: grounding-judge, judge, local, triage)`}},
		{"judge model override checked", trustHead + "    grounding: {executor_config: {model: 'nope/x'}}\n", []string{
			`p.yaml:6:42: step "a" grounding: grounding.executor_config.model: model "nope/x": unknown provider "nope" (known: anthropic, bedrock, ollama, openai, openrouter)`}},
		{"judge named in executor_config", trustHead + "    grounding: {executor_config: {agent: judge}}\n", []string{
			`p.yaml:6:34: step "a" grounding: executor_config.agent: the judge is grounding.agent`}},
		{"judge executor", trustHead + "    grounding: {executor: webhook}\n", []string{
			`p.yaml:6:27: step "a": grounding.executor "webhook" is not one of gateway, anthropic, bedrock`}},
		{"grounding without an agent warns", "name: p\nsteps:\n  - name: a\n    executor: scripted\n    grounding: {enforce: true}\n", []string{
			`p.yaml:5:16: warning: step "a" grounding: the step runs no agent, so it leaves no tool trace to check its answer against: G is always null (nothing to check)`}},
		{"grounding on a human step", "name: p\nsteps:\n  - name: a\n    executor: human\n    grounding: {}\n", []string{
			`p.yaml:5:16: step "a": grounding judges an answer a model or a webhook gave; a human step's outcome is decided by its approver`}},
		{"checks on a sub-pipeline step", "name: p\nsteps:\n  - name: a\n    executor: pipeline\n    executor_config: {pipeline: c}\n    deterministic_checks: [{name: x, type: human}]\n", []string{
			`p.yaml:6:27: step "a": deterministic_checks judges an answer a model or a webhook gave; a pipeline step's outcome is decided by its sub-pipeline`}},
		{"unknown kind", trustHead + "    deterministic_checks: [{name: x, type: sql}]\n", []string{
			`p.yaml:6:44: step "a": deterministic_checks.0.type "sql" is not one of webhook, shell, human`}},
		{"unknown field in a check", trustHead + "    deterministic_checks: [{name: x, type: human, mesage: hi}]\n", []string{
			`p.yaml:6:51: step "a": unknown field "mesage" in deterministic_checks.0 (did you mean "message"?)`}},
		{"missing name", trustHead + "    deterministic_checks: [{type: human}]\n", []string{
			`p.yaml:6:28: step "a": deterministic_checks.0: missing required field "name"`}},
		{"webhook without url", trustHead + "    deterministic_checks: [{name: x, type: webhook}]\n", []string{
			`p.yaml:6:28: step "a" check "x": a webhook check needs url`}},
		{"shell without run", trustHead + "    deterministic_checks: [{name: x, type: shell}]\n", []string{
			`p.yaml:6:28: step "a" check "x": a shell check needs run`,
			`p.yaml:6:44: warning: step "a" check "x": a shell check runs its command only in local runs (stepline run, serve); cdk synth refuses a pipeline that has one`}},
		{"a field of another kind", trustHead + "    deterministic_checks: [{name: x, type: webhook, url: 'http://h', run: ls}]\n", []string{
			`p.yaml:6:75: step "a" check "x": run is a field of shell checks, not of webhook checks`}},
		{"expect on a human check", trustHead + "    deterministic_checks: [{name: x, type: human, expect: 'true'}]\n", []string{
			`p.yaml:6:59: step "a" check "x": a human check has no expect: the approver's decision is its outcome`}},
		{"expect names the wrong result", trustHead + "    deterministic_checks: [{name: x, type: webhook, url: 'http://h', expect: 'respone.status_code < 400'}]\n", []string{
			`p.yaml:6:79: step "a" check "x": expect: unknown name "respone": a webhook check's expect sees response (did you mean "response"?)`}},
		{"shell expect sees result and exit_code", trustHead + "    deterministic_checks: [{name: x, type: shell, run: ls, expect: 'response.status_code == 0'}]\n", []string{
			`p.yaml:6:44: warning: step "a" check "x": a shell check runs its command only in local runs (stepline run, serve); cdk synth refuses a pipeline that has one`,
			`p.yaml:6:69: step "a" check "x": expect: unknown name "response": a shell check's expect sees result and exit_code`}},
		{"expect syntax, positioned inside it", trustHead + "    deterministic_checks: [{name: x, type: webhook, url: 'http://h', expect: 'response.status_code <'}]\n", []string{
			`p.yaml:6:101: step "a" check "x": expect: unexpected end of condition, expected a value`}},
		{"expect in {{ }}", trustHead + "    deterministic_checks: [{name: x, type: webhook, url: 'http://h', expect: '{{ response.ok }}'}]\n", []string{
			`p.yaml:6:79: step "a" check "x": expect: write the bare expression "response.ok", without {{ }}`}},
		{"duplicate names", trustHead + "    deterministic_checks: [{name: x, type: human}, {name: x, type: human}]\n", []string{
			`p.yaml:6:59: step "a" check "x": duplicate check name (first at 6:35): a check's name is its record and its approval's name`}},
		{"GET with a payload", trustHead + "    deterministic_checks: [{name: x, type: webhook, url: 'http://h', method: GET, payload: {a: b}}]\n", []string{
			`p.yaml:6:92: step "a" check "x": a GET request has no body: use POST, PUT, PATCH or DELETE, or drop payload`}},
		{"the step's own name in a check", trustHead + "    deterministic_checks: [{name: x, type: webhook, url: 'http://h/{{ steps.a.summary }}'}]\n", []string{
			`p.yaml:6:71: step "a" check "x": url refers to the step itself; a step sees only earlier steps (loop_until steps see loop.prior_output)`}},
		{"judge and checks past 800 s", trustHead + "    grounding: {timeout_seconds: 700}\n    deterministic_checks: [{name: x, type: webhook, url: 'http://h', timeout_seconds: 100}, {name: y, type: human, timeout_seconds: 5000}]\n", nil},
		{"judge and checks past 800 s", trustHead + "    grounding: {timeout_seconds: 700}\n    deterministic_checks: [{name: x, type: webhook, url: 'http://h', timeout_seconds: 101}]\n", []string{
			`p.yaml:7:27: step "a": the grounding judge and the webhook and shell checks may take 801 s together, over 800: they run one after the other in the step's Task after its answer, within one Lambda invocation; lower their timeout_seconds`}},
		{"a critic verifier on an enforced gate", trustHead + "    verifier: {executor: scripted}\n    grounding: {enforce: true}\n", []string{
			`p.yaml:6:15: warning: step "a": a critic verifier on a gate that enforces grounding or deterministic checks: a critic grades the answer it is shown and tends to agree with it, so its score adds little to the enforced signals; use mode: independent for a second opinion of its own`}},
		{"an independent verifier on an enforced gate", trustHead + "    verifier: {executor: scripted, mode: independent}\n    deterministic_checks: [{name: x, type: human}]\n", nil},
		{"a critic verifier on a shadow judge", trustHead + "    verifier: {executor: scripted}\n    grounding: {}\n", nil},
		{"grounding in a branch", "name: p\nsteps:\n  - parallel: {name: g, steps: [{name: b, executor: scripted, grounding: {}}]}\n", []string{
			`p.yaml:3:63: branch "b" of parallel "g": unknown field "grounding"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, ds := BuildIn("p.yaml", []byte(tt.src), Env{Project: p})
			var got []string
			if len(ds) > 0 {
				got = strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n")
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestTrustModel: the parser's defaults and the resolved judge reach the
// step's compiled configuration.
func TestTrustModel(t *testing.T) {
	p := agentProject(t, agentConfig, map[string]string{
		"agents/grounding-judge/agent.yaml": "name: grounding-judge\nmodel: anthropic/claude-haiku-4-5\n",
		"agents/grounding-judge/soul.md":    "judge",
	})
	src := trustHead + `    grounding: {}
    deterministic_checks:
      - {name: w, type: webhook, url: "http://h"}
      - {name: s, type: shell, run: "true"}
      - {name: h, type: human}
`
	f, sm, ds := BuildIn("p.yaml", []byte(src), Env{Project: p})
	if sm == nil {
		t.Fatalf("does not compile:\n%s", ds)
	}
	st := f.Pipeline.Steps[0].(*pipeline.Step)
	g := st.Grounding
	if g.Agent != "grounding-judge" || g.Executor != "gateway" || g.TimeoutSeconds != 120 || g.MaxTraceChars != 1500 || g.Enforce || g.Judge == nil || g.Judge.Profile.Name != "grounding-judge" {
		t.Errorf("grounding %+v", g)
	}
	want := []struct {
		expect, method string
		timeout        int
	}{{"response.status_code < 400", "POST", 30}, {"exit_code == 0", "", 30}, {"", "", 300}}
	for i, w := range want {
		c := st.Checks[i]
		if c.Expect != w.expect || c.Method != w.method || c.TimeoutSeconds != w.timeout {
			t.Errorf("check %s: expect %q method %q timeout %d", c.Name, c.Expect, c.Method, c.TimeoutSeconds)
		}
	}
	def, _ := Marshal(sm)
	var v struct {
		States map[string]struct {
			TimeoutSeconds int             `json:"TimeoutSeconds"`
			Arguments      json.RawMessage `json:"Arguments"`
		} `json:"States"`
	}
	if err := json.Unmarshal(def, &v); err != nil {
		t.Fatal(err)
	}
	args := string(v.States["a"].Arguments)
	for _, want := range []string{"grounding", "grounding-judge", "deterministic_checks", "response.status_code < 400"} {
		if !strings.Contains(args, want) {
			t.Errorf("the step's Task does not carry %q", want)
		}
	}
	if _, ok := v.States["a: check h"]; !ok {
		t.Errorf("no approval state for the human check: %v", keysOf(v.States))
	}
	if got := v.States["a: checked"].TimeoutSeconds; got != 60+30+30 {
		t.Errorf("the check Task's timeout %d, want the bookkeeping 60 and the webhook and shell checks' 60", got)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
