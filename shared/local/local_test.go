package local

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// fakeClock records the waits the engine asks for instead of sleeping. A
// wait of a minute or more is a task's timeout in these tests (retry
// delays are seconds): it blocks until the task ends and cancels it.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d >= time.Minute {
		<-ctx.Done()
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

// runScenario compiles and runs a pipeline with scripted replies and
// returns the outcome and the step records.
func runScenario(t *testing.T, pipelineYAML, responsesYAML, trigger string) (Outcome, []store.StepRecord, *fakeClock) {
	t.Helper()
	return runScenarioIn(t, nil, pipelineYAML, responsesYAML, trigger)
}

// runScenarioIn is runScenario with the pipeline compiled in proj (nil:
// none) and an artifact directory, as the CLI runs examples.
func runScenarioIn(t *testing.T, proj *project.Project, pipelineYAML, responsesYAML, trigger string) (Outcome, []store.StepRecord, *fakeClock) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte(pipelineYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	responses, err := executor.ParseResponses("responses.yaml", []byte(responsesYAML))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	ctx := context.Background()
	r, err := Open(ctx, Config{
		Dir:     filepath.Join(dir, "state"),
		Clock:   clock,
		Project: proj,
		Handler: func(st *sqlite.Store) StepHandler {
			h := &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses}),
				Notifications: &notify.Dispatcher{HTTP: http.DefaultClient}, CheckReplies: responses}
			if proj != nil {
				h.Artifacts = steprun.Dir{Root: filepath.Join(dir, "state", "artifacts")}
			}
			return h
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if trigger == "" {
		trigger = `{"source": "test", "severity": "critical", "labels": {"service": "api"}}`
	}
	o, err := r.Run(ctx, path, json.RawMessage(trigger), "")
	if err != nil {
		t.Fatal(err)
	}
	for o.Status == store.RunWaiting && len(o.Waiting) > 0 {
		a := o.Waiting[0]
		d, err := responses.Decision(a.Step)
		if err != nil {
			t.Fatalf("run waits for %q: %v", a.Step, err)
		}
		decision := "reject"
		if d.Approved {
			decision = "approve"
		}
		if o, err = r.Decide(ctx, o.RunID, a.Step, decision, d.By); err != nil {
			t.Fatal(err)
		}
	}
	steps, err := r.Store.ListSteps(ctx, o.RunID)
	if err != nil {
		t.Fatal(err)
	}
	run, err := r.Store.GetRun(ctx, o.RunID)
	if err != nil {
		h, _ := r.History(ctx, o.RunID)
		for _, e := range h {
			t.Logf("%s %s %s", e.Type, e.State, e.Detail)
		}
		t.Fatalf("outcome %+v: %v", o, err)
	}
	if run.Status != o.Status {
		t.Errorf("stored run status %q, outcome %q", run.Status, o.Status)
	}
	return o, steps, clock
}

// finals maps each step to its last record's status and effective
// confidence.
func finals(steps []store.StepRecord) map[string]string {
	out := map[string]string{}
	for _, s := range steps {
		v := string(s.Status)
		if s.EffectiveConfidence != nil {
			v += " " + strconv.FormatFloat(math.Round(*s.EffectiveConfidence*1e6)/1e6, 'f', -1, 64)
		}
		out[s.Name] = v
	}
	return out
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	s := string(b)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func reply(conf float64, summary string, extra string) string {
	b, _ := json.Marshal(summary)
	return `'{"confidence": ` + jsonNumber(conf) + `, "summary": ` + string(b) + `, "next_step_context": ""` + extra + `}'`
}

func TestScenarios(t *testing.T) {
	cases := []struct {
		name      string
		pipeline  string
		responses string
		status    store.RunStatus
		reason    string            // substring of the run's reason
		steps     map[string]string // step → "status confidence"
		slept     []time.Duration
	}{
		{
			name:      "completed",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted, prompt_template: '{{ steps.a.summary }}'}\n",
			responses: "a: [" + reply(0.9, "first", "") + "]\nb: [" + reply(0.8, "second", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"a": "completed 0.9", "b": "completed 0.8"},
		},
		{
			name:      "stopped by proceed false",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "not needed", `, "proceed": false, "proceed_reason": "already fixed"`) + "]\n",
			status:    store.RunStopped,
			reason:    "already fixed",
			steps:     map[string]string{"a": "stopped 0.9"},
		},
		{
			name:      "escalated on low confidence",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, confidence_threshold: 0.8}\n  - {name: b, executor: scripted}\n",
			responses: "a: [" + reply(0.5, "unsure", "") + "]\n",
			status:    store.RunEscalated,
			reason:    `step "a"`,
			steps:     map[string]string{"a": "escalated 0.5"},
		},
		{
			name:      "aborted on low confidence",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, on_low_confidence: abort}\n",
			responses: "a: [" + reply(0.2, "no", "") + "]\n",
			status:    store.RunAborted,
			steps:     map[string]string{"a": "aborted 0.2"},
		},
		{
			name:      "proceed on low confidence",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, on_low_confidence: proceed}\n  - {name: b, executor: scripted}\n",
			responses: "a: [" + reply(0.2, "weak", "") + "]\nb: [" + reply(0.9, "fine", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"a": "completed 0.2", "b": "completed 0.9"},
		},
		{
			name:      "failed after retries",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, retry: {attempts: 3, delay_seconds: 2}}\n  - {name: b, executor: scripted}\n",
			responses: "a: [{error: timeout}, {error: http 500}, {error: timeout}]\n",
			status:    store.RunFailed,
			reason:    "timeout",
			steps:     map[string]string{"a": "failed 0"},
			slept:     []time.Duration{2 * time.Second, 4 * time.Second},
		},
		{
			name:      "retries then success",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, retry: {attempts: 3, backoff: fixed, delay_seconds: 3}}\n",
			responses: "a: [{error: http 503}, " + reply(0.9, "ok", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"a": "completed 0.9"},
			slept:     []time.Duration{3 * time.Second},
		},
		{
			name:      "on_failure continue",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, on_failure: continue}\n  - {name: b, executor: scripted, prompt_template: 'prior {{ steps.a.confidence }}'}\n",
			responses: "a: [{error: http 500}]\nb: [" + reply(0.9, "went on", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"a": "failed 0", "b": "completed 0.9"},
		},
		{
			name:      "skipped when",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted, when: 'steps.a.action == \"restart\"'}\n  - {name: c, executor: scripted, when: 'steps.b is not defined'}\n",
			responses: "a: [" + reply(0.9, "nothing to do", `, "action": "none"`) + "]\nc: [" + reply(0.8, "ran because b was skipped", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"a": "completed 0.9", "c": "completed 0.8"},
		},
		{
			name:      "verifier minimum",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, verifier: {executor: scripted}}\n",
			responses: "a: [" + reply(0.8, "primary", "") + "]\na:verifier: [" + reply(0.5, "doubtful", "") + "]\n",
			status:    store.RunEscalated,
			steps:     map[string]string{"a": "escalated 0.5"},
		},
		{
			name:      "verifier veto above the floor keeps the primary",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, verifier: {executor: scripted, combination_strategy: veto, veto_floor: 0.6}}\n",
			responses: "a: [" + reply(0.9, "primary", "") + "]\na:verifier: [" + reply(0.7, "fine", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"a": "completed 0.9"},
		},
		{
			name:      "verifier veto below the floor",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, verifier: {executor: scripted, combination_strategy: veto, veto_floor: 0.6}}\n",
			responses: "a: [" + reply(0.9, "primary", "") + "]\na:verifier: [" + reply(0.55, "no", "") + "]\n",
			status:    store.RunEscalated,
			steps:     map[string]string{"a": "escalated 0.55"},
		},
		{
			name: "parallel weighted average",
			pipeline: "name: p\nsteps:\n  - parallel:\n      name: g\n      join: weighted_average\n      steps:\n" +
				"        - {name: x, executor: scripted, weight: 2}\n        - {name: y, executor: scripted}\n",
			responses: "x: [" + reply(0.9, "x", "") + "]\ny: [" + reply(0.6, "y", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"g/x": "completed 0.9", "g/y": "completed 0.6", "g": "completed 0.8"},
		},
		{
			name: "parallel all_must_pass with a failed branch",
			pipeline: "name: p\nsteps:\n  - parallel:\n      name: g\n      steps:\n" +
				"        - {name: x, executor: scripted}\n        - {name: y, executor: scripted}\n",
			responses: "x: [" + reply(0.9, "x", "") + "]\ny: [{error: http 500}]\n",
			status:    store.RunEscalated,
			steps:     map[string]string{"g/x": "completed 0.9", "g/y": "failed", "g": "escalated 0"},
		},
		{
			name: "parallel any_must_pass",
			pipeline: "name: p\nsteps:\n  - parallel:\n      name: g\n      join: any_must_pass\n      steps:\n" +
				"        - {name: x, executor: scripted}\n        - {name: y, executor: scripted}\n",
			responses: "x: [" + reply(0.3, "x", "") + "]\ny: [" + reply(0.8, "y", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"g": "completed 0.8"},
		},
		{
			name:      "fan-out over a list",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - fan_out: {name: f, over: steps.a.items, executor: scripted, prompt_template: '{{ item }} {{ fan_out_index }}/{{ fan_out_total }}'}\n",
			responses: "a: [" + reply(0.9, "list", `, "items": ["p", "q"]`) + "]\nf/0: [" + reply(0.8, "p", "") + "]\nf/1: [" + reply(0.9, "q", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"f/0": "completed 0.8", "f/1": "completed 0.9", "f": "completed 0.8"},
		},
		{
			name:      "fan-out over too many items",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - fan_out: {name: f, over: steps.a.items, max_items: 2, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "list", `, "items": [1, 2, 3]`) + "]\n",
			status:    store.RunFailed,
			reason:    "max_items 2",
			steps:     map[string]string{"f": "failed 0"},
		},
		{
			// max_items is the most a fan-out takes: exactly that many run.
			name:      "fan-out over exactly max_items items",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - fan_out: {name: f, over: steps.a.items, max_items: 2, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "list", `, "items": [1, 2]`) + "]\nf/0: [" + reply(0.8, "1", "") + "]\nf/1: [" + reply(0.9, "2", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"f/0": "completed 0.8", "f/1": "completed 0.9", "f": "completed 0.8"},
		},
		{
			name:      "fan-out over an empty list with on_empty abort",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - fan_out: {name: f, over: steps.a.items, on_empty: abort, executor: scripted}\n  - {name: b, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "none", `, "items": []`) + "]\n",
			status:    store.RunFailed,
			reason:    "on_empty: abort",
			steps:     map[string]string{"f": "failed 0"},
		},
		{
			name:      "fan-out over an empty list completes by default",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - fan_out: {name: f, over: steps.a.items, executor: scripted}\n  - {name: b, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "none", `, "items": []`) + "]\nb: [" + reply(0.9, "after", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"f": "completed 1", "b": "completed 0.9"},
		},
		{
			name:      "fan-out over an empty list with on_empty skip",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - fan_out: {name: f, over: steps.a.items, on_empty: skip, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "none", `, "items": []`) + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"f": "completed 1"},
		},
		{
			name:      "loop_until converges",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, loop_until: {confidence: 0.85, max_iterations: 3}}\n",
			responses: "a: [" + reply(0.6, "draft 1", "") + ", " + reply(0.9, "draft 2", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"a": "completed 0.9"},
		},
		{
			name:      "loop_until exhausts then the gate escalates",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, loop_until: {confidence: 0.9, max_iterations: 2}}\n",
			responses: "a: [" + reply(0.6, "draft 1", "") + ", " + reply(0.7, "draft 2", "") + "]\n",
			status:    store.RunEscalated,
			steps:     map[string]string{"a": "escalated 0.7"},
		},
		{
			name:      "human approve",
			pipeline:  "name: p\nsteps:\n  - {name: ok, executor: human, prompt_template: 'go?'}\n  - {name: b, executor: scripted}\n",
			responses: "ok: [{decision: approve, by: oncall}]\nb: [" + reply(0.9, "done", "") + "]\n",
			status:    store.RunCompleted,
			steps:     map[string]string{"ok": "completed 1", "b": "completed 0.9"},
		},
		{
			name:      "human reject",
			pipeline:  "name: p\nsteps:\n  - {name: ok, executor: human, prompt_template: 'go?'}\n  - {name: b, executor: scripted}\n",
			responses: "ok: [reject]\n",
			status:    store.RunEscalated,
			steps:     map[string]string{"ok": "escalated 0"},
		},
		{
			name:      "missing reply fails the step",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n",
			responses: "other: [" + reply(0.9, "x", "") + "]\n",
			status:    store.RunFailed,
			reason:    `"a"`,
			steps:     map[string]string{"a": "failed 0"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, steps, clock := runScenario(t, c.pipeline, c.responses, "")
			if o.Status != c.status {
				t.Errorf("status %q (reason %q), want %q", o.Status, o.Reason, c.status)
			}
			if !strings.Contains(o.Reason, c.reason) {
				t.Errorf("reason %q does not contain %q", o.Reason, c.reason)
			}
			got := finals(steps)
			for name, want := range c.steps {
				if got[name] != want {
					t.Errorf("step %q: %q, want %q (all: %v)", name, got[name], want, got)
				}
			}
			if c.slept != nil {
				var retries []time.Duration
				for _, d := range clock.slept {
					if d >= time.Second {
						retries = append(retries, d)
					}
				}
				if len(retries) != len(c.slept) {
					t.Fatalf("waits %v, want %v", clock.slept, c.slept)
				}
				for i := range retries {
					if retries[i] != c.slept[i] {
						t.Errorf("waits %v, want %v", retries, c.slept)
					}
				}
			}
		})
	}
}

func TestBudgetExceeded(t *testing.T) {
	withUsage := func(conf float64, in, out int) string {
		return "{reply: " + reply(conf, "drafted", "") + ", input_tokens: " + strconv.Itoa(in) + ", output_tokens: " + strconv.Itoa(out) + "}"
	}
	cases := []struct {
		name, budget, reason string
		status               store.RunStatus
	}{
		{"over the token limit", "{max_tokens: 1000}", "Token budget exceeded: 1,500 tokens used (limit: 1,000)", store.RunAborted},
		{"within the limit", "{max_tokens: 5000}", "", store.RunCompleted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := "name: p\nbudget: " + c.budget + "\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n"
			o, steps, _ := runScenario(t, p, "a: ["+withUsage(0.9, 1200, 300)+"]\nb: ["+reply(0.9, "b", "")+"]\n", "")
			if o.Status != c.status || o.Reason != c.reason {
				t.Errorf("status %q reason %q, want %q %q", o.Status, o.Reason, c.status, c.reason)
			}
			if c.status == store.RunAborted {
				if got := finals(steps); got["b"] != "" {
					t.Errorf("step b ran after the budget was exceeded: %v", got)
				}
			}
		})
	}
}

// TestExamplePipelines runs every example in pipelines/ through the
// engine with its scripted replies and sample event.
func TestExamplePipelines(t *testing.T) {
	cases := []struct {
		file, responses, event string
		status                 store.RunStatus
		steps                  map[string]string
		tools                  []string // tool calls in an agent step's trace, in order
	}{
		{"sre-alert-triage.yaml", "sre-alert-triage.yaml", "checkout-latency.trigger.json", store.RunCompleted,
			map[string]string{"triage": "completed 0.82", "approve-remediation": "completed 1", "remediate": "completed 1"}, nil},
		{"multi-service-fanout.yaml", "multi-service-health.yaml", "deploy-finished.trigger.json", store.RunCompleted,
			map[string]string{"discover": "completed 0.92", "check-service/0": "completed 0.81", "check-service/1": "completed 0.74", "check-service": "completed 0.74", "report": "completed 0.9"}, nil},
		{"order-intake.yaml", "order-intake.yaml", "order-created.trigger.json", store.RunCompleted,
			map[string]string{"validate-order": "completed 0.93", "reserve-stock": "failed 0", "acknowledge": "completed 1"}, nil},
		{"research-brief.yaml", "research-brief.yaml", "research-question.trigger.json", store.RunCompleted,
			map[string]string{"analysis/literature": "completed 0.8", "analysis": "completed 0.722222", "draft": "completed 0.9"}, nil},
		{"sre-investigation.yaml", "sre-investigation.yaml", "incident-declared.trigger.json", store.RunCompleted,
			map[string]string{"investigate": "completed 0.8", "approve-remediation": "completed 1", "remediate": "completed 1"},
			[]string{"grafana.query_prometheus", "grafana.query_prometheus", "grafana.query_loki_logs", "grafana.query_prometheus", "runbooks.search", "runbooks.get_runbook"}},
	}
	// The examples compile in the repository's project, as the CLI
	// compiles them: their agent steps run its agents.
	proj, err := project.Load("../../stepline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../pipelines/*.yaml")
	if len(files) != len(cases) {
		t.Fatalf("%d example pipelines, %d cases: give every example a case", len(files), len(cases))
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("../../pipelines", c.file))
			if err != nil {
				t.Fatal(err)
			}
			responses, err := os.ReadFile(filepath.Join("../../pipelines/responses", c.responses))
			if err != nil {
				t.Fatal(err)
			}
			event, err := os.ReadFile(filepath.Join("../../events", c.event))
			if err != nil {
				t.Fatal(err)
			}
			var ev struct{ Trigger json.RawMessage }
			if err := json.Unmarshal(event, &ev); err != nil {
				t.Fatal(err)
			}
			o, steps, _ := runScenarioIn(t, proj, string(src), string(responses), string(ev.Trigger))
			if o.Status != c.status {
				t.Errorf("status %q (%s), want %q", o.Status, o.Reason, c.status)
			}
			got := finals(steps)
			for name, want := range c.steps {
				if got[name] != want {
					t.Errorf("step %q: %q, want %q (all %v)", name, got[name], want, got)
				}
			}
			var calls []string
			for _, s := range steps {
				var trace []struct{ Type, Name string }
				_ = json.Unmarshal(s.Trace, &trace)
				for _, ev := range trace {
					if ev.Type == "tool_call" {
						calls = append(calls, ev.Name)
					}
				}
			}
			if strings.Join(calls, " ") != strings.Join(c.tools, " ") {
				t.Errorf("tool calls %v, want %v", calls, c.tools)
			}
		})
	}
}

// TestNotifications: a run that escalates sends the pipeline's escalate
// notifications with the template context; the same pipeline in stage
// testing sends nothing.
func TestNotifications(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	for _, stage := range []string{"production", "testing"} {
		mu.Lock()
		bodies = nil
		mu.Unlock()
		p := "name: p\nstage: " + stage + "\nnotifications:\n  escalate:\n    - channel: webhook\n      config: {url: \"" + srv.URL + "\"}\n" +
			"      template: \"{{ pipeline_name }} {{ current_step }} {{ escalation_reason }} {{ confidence }} < {{ confidence_threshold }}: {{ step_summary }}\"\n" +
			"steps:\n  - {name: a, executor: scripted}\n"
		o, _, _ := runScenario(t, p, "a: ["+reply(0.4, "unsure", "")+"]\n", "")
		if o.Status != store.RunEscalated {
			t.Fatalf("%s: status %q", stage, o.Status)
		}
		mu.Lock()
		got := append([]string(nil), bodies...)
		mu.Unlock()
		switch stage {
		case "production":
			if len(got) != 1 || got[0] != "p a low_confidence 0.4 < 0.75: unsure" {
				t.Errorf("production: notifications %q", got)
			}
		case "testing":
			if len(got) != 0 {
				t.Errorf("testing: sent %q", got)
			}
		}
	}
}

// TestSubPipeline runs a pipeline whose step runs another pipeline from
// the same directory as a run of its own, linked to its parent.
func TestSubPipeline(t *testing.T) {
	for _, c := range []struct {
		name       string
		childReply string
		status     store.RunStatus
		parentStep string
	}{
		{"child completes", reply(0.9, "child done", ""), store.RunCompleted, "completed 0.9"},
		{"child escalates", reply(0.2, "child unsure", ""), store.RunEscalated, "escalated 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, content string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("parent.yaml", "name: parent\nsteps:\n  - {name: first, executor: scripted}\n  - {name: delegate, executor: pipeline, executor_config: {pipeline: child-work}}\n  - {name: last, executor: scripted, prompt_template: '{{ steps.delegate.summary }}'}\n")
			write("child.yaml", "name: child-work\nsteps:\n  - {name: inner, executor: scripted}\n")
			responses, err := executor.ParseResponses("r.yaml", []byte("first: ["+reply(0.9, "first", "")+"]\ninner: ["+c.childReply+"]\nlast: ["+reply(0.9, "last", "")+"]\n"))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			r, err := Open(ctx, Config{Dir: filepath.Join(dir, "state"), Handler: func(st *sqlite.Store) StepHandler {
				return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses})}
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			o, err := r.Run(ctx, filepath.Join(dir, "parent.yaml"), json.RawMessage(`{"source": "test"}`), "")
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != c.status {
				t.Fatalf("parent %q (%s), want %q", o.Status, o.Reason, c.status)
			}
			steps, _ := r.Store.ListSteps(ctx, o.RunID)
			if got := finals(steps)["delegate"]; got != c.parentStep {
				t.Errorf("delegate step %q, want %q", got, c.parentStep)
			}
			runs, _ := r.Store.ListRuns(ctx, store.RunFilter{Pipeline: "child-work", Limit: 10})
			if len(runs) != 1 || runs[0].ParentRunID != o.RunID {
				t.Fatalf("child runs %+v", runs)
			}
		})
	}
}
