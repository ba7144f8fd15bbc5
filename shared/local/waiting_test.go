package local

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/store"
)

// decideAll answers the approvals a run waits for from the scripted
// decisions, one at a time, as `stepline run` does, and returns the
// approvals it decided in order.
func decideAll(t *testing.T, r *Runner, o Outcome, responses *executor.Responses) (Outcome, []store.Approval) {
	t.Helper()
	var decided []store.Approval
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
		decided = append(decided, a)
		if o, err = r.Decide(context.Background(), o.RunID, a.Step, decision, d.By); err != nil {
			t.Fatal(err)
		}
	}
	return o, decided
}

// TestHumanBranch runs a parallel group with a model branch and a human
// branch: the run waits for the branch's approval, named after the
// branch; the decision is the branch's confidence in the join. The run
// also waits across processes: a second runner over the same state
// decides it.
func TestHumanBranch(t *testing.T) {
	cases := []struct {
		name     string
		join     string
		decision string
		restart  bool // decide from another runner after the first stops
		status   store.RunStatus
		steps    map[string]string
	}{
		{"approved", "all_must_pass", "approve", false, store.RunCompleted,
			map[string]string{"g/model": "completed 0.9", "g/signoff": "completed 1", "g": "completed 0.9", "after": "completed 0.8"}},
		{"rejected", "all_must_pass", "reject", false, store.RunEscalated,
			map[string]string{"g/model": "completed 0.9", "g/signoff": "completed 0", "g": "escalated 0"}},
		{"rejected under any_must_pass", "any_must_pass", "reject", false, store.RunCompleted,
			map[string]string{"g/signoff": "completed 0", "g": "completed 0.9", "after": "completed 0.8"}},
		{"approved after a restart", "all_must_pass", "approve", true, store.RunCompleted,
			map[string]string{"g/signoff": "completed 1", "g": "completed 0.9", "after": "completed 0.8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := "name: p\nsteps:\n  - parallel:\n      name: g\n      join: " + c.join + "\n      steps:\n" +
				"        - {name: model, executor: scripted}\n" +
				"        - {name: signoff, executor: human, prompt_template: 'sign off {{ labels.service }}?'}\n" +
				"  - {name: after, executor: scripted, prompt_template: '{{ steps.signoff.summary }}'}\n"
			responses := "model: [" + reply(0.9, "model", "") + "]\nsignoff: [{decision: " + c.decision + ", by: lead}]\nafter: [" + reply(0.8, "after", "") + "]\n"
			r, dir, resp := openScenario(t, map[string]string{"p.yaml": p}, responses)
			ctx := context.Background()
			o, err := r.Run(ctx, filepath.Join(dir, "p.yaml"), json.RawMessage(`{"source": "test", "labels": {"service": "api"}}`), "")
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != store.RunWaiting || len(o.Waiting) != 1 {
				t.Fatalf("outcome %+v, want waiting for one approval", o)
			}
			a := o.Waiting[0]
			if a.Step != "signoff" || a.Message != "sign off api?" {
				t.Errorf("approval step %q message %q, want signoff, %q", a.Step, a.Message, "sign off api?")
			}
			if c.restart {
				r.Close()
				r = reopen(t, dir, resp)
			}
			o, _ = decideAll(t, r, o, resp)
			if o.Status != c.status {
				t.Fatalf("status %q (%s), want %q", o.Status, o.Reason, c.status)
			}
			steps, err := r.Store.ListSteps(ctx, o.RunID)
			if err != nil {
				t.Fatal(err)
			}
			got := finals(steps)
			for name, want := range c.steps {
				if got[name] != want {
					t.Errorf("step %q: %q, want %q (all %v)", name, got[name], want, got)
				}
			}
			if c.status == store.RunCompleted {
				for _, s := range steps {
					if s.Name == "after" && !strings.HasSuffix(s.Prompt, "by lead") {
						t.Errorf("a later step reads the branch as %q", s.Prompt)
					}
				}
			}
		})
	}
}

// TestFanOutHumanItems: a fan-out whose executor is human asks for one
// approval per item, named "<fan_out>/<i>" (as the item's entry in steps),
// with the item in its message; the decisions join like confidences.
func TestFanOutHumanItems(t *testing.T) {
	cases := []struct {
		name      string
		join      string
		decisions string
		status    store.RunStatus
		group     string
	}{
		{"all approved", "all_must_pass", "f/0: [approve]\nf/1: [approve]\n", store.RunCompleted, "completed 1"},
		{"one rejected", "all_must_pass", "f/0: [approve]\nf/1: [reject]\n", store.RunEscalated, "escalated 0"},
		{"one rejected under any_must_pass", "any_must_pass", "f/0: [reject]\nf/1: [approve]\n", store.RunCompleted, "completed 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := "name: p\nsteps:\n  - fan_out: {name: f, over: '[\"x\", \"y\"]', as: thing, join: " + c.join +
				", executor: human, prompt_template: 'approve {{ thing }} ({{ fan_out_index }}/{{ fan_out_total }})?'}\n"
			r, dir, resp := openScenario(t, map[string]string{"p.yaml": p}, c.decisions)
			o, err := r.Run(context.Background(), filepath.Join(dir, "p.yaml"), json.RawMessage(`{}`), "")
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != store.RunWaiting || len(o.Waiting) != 2 {
				t.Fatalf("outcome %+v, want waiting for two approvals", o)
			}
			var asked []string
			for _, a := range o.Waiting {
				asked = append(asked, a.Step+": "+a.Message)
			}
			slices.Sort(asked)
			if want := []string{"f/0: approve x (0/2)?", "f/1: approve y (1/2)?"}; !slices.Equal(asked, want) {
				t.Errorf("approvals %q, want %q", asked, want)
			}
			o, _ = decideAll(t, r, o, resp)
			if o.Status != c.status {
				t.Fatalf("status %q (%s), want %q", o.Status, o.Reason, c.status)
			}
			steps, _ := r.Store.ListSteps(context.Background(), o.RunID)
			if got := finals(steps)["f"]; got != c.group {
				t.Errorf("group %q, want %q (all %v)", got, c.group, finals(steps))
			}
		})
	}
}

// childRuns returns the runs of pipeline name, by the summary of their
// trigger.
func childRuns(t *testing.T, r *Runner, name string) map[string]store.Run {
	t.Helper()
	runs, err := r.Store.ListRuns(context.Background(), store.RunFilter{Pipeline: name, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Run{}
	for _, listed := range runs {
		run, err := r.Store.GetRun(context.Background(), listed.ID) // with its trigger
		if err != nil {
			t.Fatal(err)
		}
		var trig struct{ Summary string }
		_ = json.Unmarshal(run.Trigger, &trig)
		out[trig.Summary] = run
	}
	return out
}

const childWork = "name: child-work\ncontext_template: {include: [summary, labels.service, metadata.n]}\n" +
	"steps:\n  - {name: inner, executor: scripted, prompt_template: '{{ summary }}|{{ service }}|{{ n }}|{{ labels.team }}'}\n"

// TestFanOutChildren: a fan-out whose executor is pipeline starts one
// child run per item, linked to the parent, each with its trigger made
// from executor_config.context rendered with the item (or the parent's
// trigger without one); each child's outcome is its item's result.
func TestFanOutChildren(t *testing.T) {
	cases := []struct {
		name    string
		config  string
		prompts []string // the child steps' rendered prompts, sorted
	}{
		{"with context", "{pipeline: child-work, context: {summary: 'check {{ item }}', labels: {service: '{{ item }}-svc'}}}",
			[]string{"check a|a-svc||ops", "check b|b-svc||ops"}},
		{"without context", "{pipeline: child-work}",
			[]string{"parent|api||ops", "parent|api||ops"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := "name: parent\nsteps:\n  - fan_out: {name: f, over: '[\"a\", \"b\"]', executor: pipeline, executor_config: " + c.config + "}\n" +
				"  - {name: last, executor: scripted, prompt_template: \"{{ steps['f/0'].sub_pipeline_status }}\"}\n"
			responses := "inner: [" + reply(0.9, "inner done", "") + ", " + reply(0.9, "inner done", "") + "]\nlast: [" + reply(0.9, "last", "") + "]\n"
			r, dir, _ := openScenario(t, map[string]string{"parent.yaml": p, "child.yaml": childWork}, responses)
			ctx := context.Background()
			o, err := r.Run(ctx, filepath.Join(dir, "parent.yaml"), json.RawMessage(`{"source": "test", "summary": "parent", "labels": {"service": "api", "team": "ops"}, "fingerprint": "fp-1"}`), "")
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != store.RunCompleted {
				t.Fatalf("parent %q (%s), want completed", o.Status, o.Reason)
			}
			steps, _ := r.Store.ListSteps(ctx, o.RunID)
			got := finals(steps)
			for _, name := range []string{"f/0", "f/1"} {
				if got[name] != "completed 0.9" {
					t.Errorf("item %q: %q, want completed 0.9 (all %v)", name, got[name], got)
				}
			}
			if got["f"] != "completed 0.9" || got["last"] != "completed 0.9" {
				t.Errorf("steps %v", got)
			}
			for _, s := range steps {
				if s.Name == "last" && s.Prompt != "completed" {
					t.Errorf("last step read the item's sub_pipeline_status as %q", s.Prompt)
				}
			}
			runs, err := r.Store.ListRuns(ctx, store.RunFilter{Pipeline: "child-work", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 2 {
				t.Fatalf("%d child runs, want 2", len(runs))
			}
			var prompts []string
			for _, run := range runs {
				if run.ParentRunID != o.RunID || run.Status != store.RunCompleted || run.Source != "sub-pipeline" || run.Fingerprint != "" {
					t.Errorf("child run %+v", run)
				}
				recs, _ := r.Store.ListSteps(ctx, run.ID)
				for _, rec := range recs {
					prompts = append(prompts, rec.Prompt)
				}
			}
			slices.Sort(prompts)
			if !slices.Equal(prompts, c.prompts) {
				t.Errorf("child prompts %q, want %q", prompts, c.prompts)
			}
		})
	}
}

// TestSubPipelineContext: a pipeline step's executor_config.context is
// rendered with the parent's step context and becomes the child's trigger
// over the parent's: summary and severity replaced, labels and metadata
// merged key by key; pipeline, source and fingerprint are the runner's,
// team the parent's.
func TestSubPipelineContext(t *testing.T) {
	cases := []struct {
		name    string
		context string
		prompt  string
	}{
		{"none: the parent's trigger", "", "parent|api||ops"},
		{"summary only", "context: {summary: '{{ steps.first.summary }} again'}", "first said hi again|api||ops"},
		{"labels merged over the parent's", "context: {labels: {service: '{{ labels.service }}-child'}}", "parent|api-child||ops"},
		{"metadata rendered", "context: {metadata: {n: '{{ steps.first.confidence }}'}}", "parent|api|0.9|ops"},
		{"every field", "context: {summary: s, severity: '{{ severity }}', labels: {service: x}, metadata: {n: '7'}}", "s|x|7|ops"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := "name: parent\nsteps:\n  - {name: first, executor: scripted}\n" +
				"  - {name: delegate, executor: pipeline, executor_config: {pipeline: child-work" + map[bool]string{true: "", false: ", " + c.context}[c.context == ""] + "}}\n"
			responses := "first: [" + reply(0.9, "first said hi", "") + "]\ninner: [" + reply(0.9, "inner", "") + "]\n"
			r, dir, _ := openScenario(t, map[string]string{"parent.yaml": p, "child.yaml": childWork}, responses)
			ctx := context.Background()
			o, err := r.Run(ctx, filepath.Join(dir, "parent.yaml"), json.RawMessage(`{"source": "test", "severity": "critical", "summary": "parent", "team": "ops-team", "labels": {"service": "api", "team": "ops"}, "fingerprint": "fp-1"}`), "")
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != store.RunCompleted {
				t.Fatalf("parent %q (%s), want completed", o.Status, o.Reason)
			}
			runs, _ := r.Store.ListRuns(ctx, store.RunFilter{Pipeline: "child-work", Limit: 10})
			if len(runs) != 1 {
				t.Fatalf("%d child runs", len(runs))
			}
			child, err := r.Store.GetRun(ctx, runs[0].ID) // with its trigger
			if err != nil {
				t.Fatal(err)
			}
			recs, _ := r.Store.ListSteps(ctx, child.ID)
			if len(recs) != 1 || recs[0].Prompt != c.prompt {
				t.Fatalf("child prompt %v, want %q", recs, c.prompt)
			}
			var trig map[string]any
			if err := json.Unmarshal(child.Trigger, &trig); err != nil {
				t.Fatal(err)
			}
			if trig["pipeline"] != "child-work" || trig["source"] != "sub-pipeline" || trig["fingerprint"] != nil || trig["team"] != "ops-team" {
				t.Errorf("child trigger %v: pipeline, source, fingerprint or team not the runner's", trig)
			}
			if child.Team != "ops-team" || child.ParentRunID != o.RunID {
				t.Errorf("child run %+v", child)
			}
		})
	}
}

// TestParallelChildBranch: a parallel branch whose executor is pipeline
// runs the child as a run of its own; the child's outcome is the branch's
// confidence (its answer when it completed, 0 when it did not).
func TestParallelChildBranch(t *testing.T) {
	cases := []struct {
		name   string
		inner  string
		status store.RunStatus
		steps  map[string]string
	}{
		{"child completes", reply(0.8, "child ok", ""), store.RunCompleted,
			map[string]string{"g/model": "completed 0.9", "g/delegate": "completed 0.8", "g": "completed 0.8"}},
		{"child escalates", reply(0.2, "child unsure", ""), store.RunEscalated,
			map[string]string{"g/model": "completed 0.9", "g/delegate": "completed 0", "g": "escalated 0"}},
		{"child fails", "{error: http 500}", store.RunEscalated,
			map[string]string{"g/delegate": "completed 0", "g": "escalated 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := "name: parent\nsteps:\n  - parallel:\n      name: g\n      steps:\n" +
				"        - {name: model, executor: scripted}\n" +
				"        - {name: delegate, executor: pipeline, executor_config: {pipeline: child-work, context: {summary: '{{ labels.service }} check'}}}\n"
			responses := "model: [" + reply(0.9, "model", "") + "]\ninner: [" + c.inner + "]\n"
			r, dir, _ := openScenario(t, map[string]string{"parent.yaml": p, "child.yaml": childWork}, responses)
			ctx := context.Background()
			o, err := r.Run(ctx, filepath.Join(dir, "parent.yaml"), json.RawMessage(`{"source": "test", "labels": {"service": "api"}}`), "")
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != c.status {
				t.Fatalf("parent %q (%s), want %q", o.Status, o.Reason, c.status)
			}
			steps, _ := r.Store.ListSteps(ctx, o.RunID)
			got := finals(steps)
			for name, want := range c.steps {
				if got[name] != want {
					t.Errorf("step %q: %q, want %q (all %v)", name, got[name], want, got)
				}
			}
			children := childRuns(t, r, "child-work")
			run, ok := children["api check"]
			if len(children) != 1 || !ok || run.ParentRunID != o.RunID {
				t.Errorf("child runs %+v, want one with summary %q", children, "api check")
			}
		})
	}
}
