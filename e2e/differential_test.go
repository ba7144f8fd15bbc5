package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/internal/testenv"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/store"
)

// examples maps every example pipeline in pipelines/ to the replies and
// event it runs with (the ones its README run uses) and the outcome they
// give. TestExamplesCovered fails when an example has no entry.
var examples = []struct {
	file, responses, event string
	want                   store.RunStatus
}{
	{"multi-service-fanout.yaml", "multi-service-health.yaml", "deploy-finished.trigger.json", store.RunCompleted},
	{"order-intake.yaml", "order-intake.yaml", "order-created.trigger.json", store.RunCompleted},
	{"research-brief.yaml", "research-brief.yaml", "research-question.trigger.json", store.RunCompleted},
	{"sre-alert-triage.yaml", "sre-alert-triage.yaml", "checkout-latency.trigger.json", store.RunCompleted},
	{"sre-investigation.yaml", "sre-investigation.yaml", "incident-declared.trigger.json", store.RunCompleted},
}

// scenarioWants names the outcome of each scenario in
// e2e/testdata/scenarios: one per decision path a run can take.
// TestScenariosCovered fails when a directory has no entry.
var scenarioWants = map[string]store.RunStatus{
	"five-steps":       store.RunCompleted,
	"stopped":          store.RunStopped,
	"escalated":        store.RunEscalated,
	"aborted":          store.RunAborted,
	"low-proceed":      store.RunCompleted,
	"failed-retries":   store.RunFailed,
	"failure-continue": store.RunCompleted,
	"when-skipped":     store.RunCompleted,
	"verifier":         store.RunEscalated,
	"parallel-joins":   store.RunCompleted,
	"fan-out":          store.RunCompleted,
	"fan-out-empty":    store.RunCompleted,
	"fan-out-too-many": store.RunFailed,
	"loop-until":       store.RunCompleted,
	"budget":           store.RunAborted,
	"human-approve":    store.RunCompleted,
	"human-reject":     store.RunEscalated,
	"human-timeout":    store.RunFailed,
	"sub-pipeline":     store.RunCompleted,
	"agent-turns":      store.RunCompleted,
	"express":          store.RunCompleted,
}

// agentTasks names, per scenario, the agent steps longer than one
// invocation and how many Tasks the box runs each in: with AgentBudget
// every Task makes one model call and hands back, so a step whose loop
// makes n model calls runs in n Tasks (one more when a verifier is left
// to the Task after the answer). A step's retried Task is no new Task.
var agentTasks = map[string]map[string]int{
	// five model calls (four tool-calling turns and the answer), then the
	// grounding judge and the webhook check in a Task of their own
	"example-sre-investigation": {"investigate": 6},
	// four model calls (and one failed call, retried), then the verifier
	"agent-turns": {"investigate": 5},
}

func scenarioDir() string { return filepath.Join(testenv.RepoRoot(), "e2e", "testdata", "scenarios") }

// allScenarios lists the examples and the scenarios.
func allScenarios(t *testing.T) []Scenario {
	t.Helper()
	root := testenv.RepoRoot()
	var out []Scenario
	for _, ex := range examples {
		out = append(out, Scenario{
			Name:      "example-" + strings.TrimSuffix(ex.file, ".yaml"),
			Dir:       filepath.Join(root, "pipelines"),
			Pipeline:  ex.file,
			Responses: filepath.Join(root, "pipelines", "responses", ex.responses),
			Event:     filepath.Join(root, "events", ex.event),
			Want:      ex.want,
		})
	}
	names := make([]string, 0, len(scenarioWants))
	for n := range scenarioWants {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		dir := filepath.Join(scenarioDir(), n)
		sc := Scenario{Name: n, Dir: dir, Pipeline: "pipeline.yaml", Responses: filepath.Join(dir, "responses.yaml"),
			Event: filepath.Join(scenarioDir(), "event.json"), Want: scenarioWants[n]}
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			if b := filepath.Base(f); b != "pipeline.yaml" && b != "responses.yaml" && b != project.FileName {
				sc.Children = append(sc.Children, b)
			}
		}
		out = append(out, sc)
	}
	return out
}

// TestExamplesCovered is part of the tier (it runs with make e2e): an
// example the box does not run fails the tier, not make test.
func TestExamplesCovered(t *testing.T) {
	if os.Getenv(EnvRun) == "" {
		t.Skip("part of the offline AWS tier (make e2e, " + EnvRun + "=1)")
	}
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "pipelines", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example pipelines: %v", err)
	}
	listed := map[string]bool{}
	for _, ex := range examples {
		listed[ex.file] = true
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("example %s has no entry in examples: give it replies and an event", filepath.Base(f))
		}
	}
}

func TestScenariosCovered(t *testing.T) {
	dirs, err := os.ReadDir(scenarioDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() {
			if _, ok := scenarioWants[d.Name()]; !ok {
				t.Errorf("scenario %s has no expected outcome in scenarioWants", d.Name())
			}
		}
	}
	for n := range scenarioWants {
		if _, err := os.Stat(filepath.Join(scenarioDir(), n, "pipeline.yaml")); err != nil {
			t.Errorf("scenario %s: %v", n, err)
		}
	}
}

// TestDifferential runs every example pipeline and every scenario through
// stepline run (the local engine, scripted replies) and through the box
// (moto's interpreter, the real bootstraps, the fake answering with the
// same replies), and requires the same run status, step statuses,
// effective confidences and normalised records (see Normalize) on both.
func TestDifferential(t *testing.T) {
	h := box(t)
	for _, sc := range allScenarios(t) {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			runDifferential(t, h, sc)
		})
	}
}

func runDifferential(t *testing.T, h *Harness, sc Scenario) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := h.Prepare(sc)
	if err != nil {
		t.Fatal(err)
	}
	local, err := h.RunLocal(ctx, p)
	if err != nil {
		t.Fatalf("local: %v", err)
	}
	boxSide, err := h.RunBox(ctx, p)
	if err != nil {
		t.Fatalf("box: %v (logs in %s)", err, h.Box.Logs)
	}
	t.Logf("local %s, box %s (%d step records)", local.Duration.Round(time.Millisecond), boxSide.Duration.Round(time.Millisecond), len(boxSide.Steps))
	ln, bn := Normalize(local), Normalize(boxSide)
	write := func(name string, v any) {
		b, _ := json.MarshalIndent(v, "", "  ")
		os.WriteFile(filepath.Join(p.Dir, name), b, 0o644)
	}
	write("local.json", ln)
	write("box.json", bn)
	if local.Run.Status != sc.Want || boxSide.Run.Status != sc.Want {
		t.Errorf("run status: local %s, box %s; the scenario is there for %s", local.Run.Status, boxSide.Run.Status, sc.Want)
	}
	if d := Diff("local (stepline run)", ln, "box (moto)", bn); d != "" {
		os.WriteFile(filepath.Join(p.Dir, "diff.txt"), []byte(d), 0o644)
		t.Errorf("the engines differ:\n%s\n(files in %s; box logs in %s)", d, p.Dir, h.Box.Logs)
	}
	if unused := p.Script.Unused(); len(unused) > 0 {
		t.Logf("replies the box did not ask for: %v", unused)
	}
	checkAgentTasks(t, h, sc.Name, boxSide)
	checkMCPHeaders(t, p)
}

// checkAgentTasks checks that each agent step of agentTasks ran in the
// box in the Tasks it names, and that every Task but the last handed the
// conversation back through the artifact bucket: turn-<n>.json of the
// step's kept conversation for n = 1 … Tasks-1 (one model call each; a
// last Task that verifies, grounds or checks makes none), no
// turn-<Tasks>.json, and latest.json.
func checkAgentTasks(t *testing.T, h *Harness, scenario string, side Side) {
	t.Helper()
	ctx := context.Background()
	for step, want := range agentTasks[scenario] {
		if got := side.Tasks[step]; got != want {
			t.Errorf("box: agent step %q ran in %d Tasks, want %d (Tasks entered: %v)", step, got, want, side.Tasks)
		}
		prefix := side.RunID + "/" + step + ".agent/"
		for n := 1; n <= want; n++ {
			key := fmt.Sprintf("%sturn-%d.json", prefix, n)
			ok, err := h.AWS.ObjectExists(ctx, ArtifactBucket, key)
			switch {
			case err != nil:
				t.Error(err)
			case n < want && !ok:
				t.Errorf("box: Task %d of %q did not hand back its conversation: no s3://%s/%s", n, step, ArtifactBucket, key)
			case n == want && ok:
				t.Errorf("box: the last Task of %q handed back (s3://%s/%s)", step, ArtifactBucket, key)
			}
		}
		if ok, err := h.AWS.ObjectExists(ctx, ArtifactBucket, prefix+"latest.json"); err != nil || !ok {
			t.Errorf("box: %q kept no latest.json (%v)", step, err)
		}
	}
}

// checkMCPHeaders checks that every request to a fake MCP server carried
// the headers its project declares, with their ${NAME} secrets resolved
// by the step function (the box's secret NAME is "box-secret-NAME").
func checkMCPHeaders(t *testing.T, p *Prepared) {
	t.Helper()
	if p.Project == nil {
		return
	}
	seen := 0
	for _, c := range p.Script.Calls() {
		if c.Kind != "mcp" {
			continue
		}
		seen++
		for k, v := range p.Project.Servers[c.Key].Headers {
			want := secretRef.ReplaceAllString(v, "box-secret-$1")
			if got := c.Header.Get(k); got != want {
				t.Errorf("box: MCP server %q got %s %q, want %q", c.Key, k, got, want)
			}
		}
	}
	if seen > 0 {
		t.Logf("%d requests to the fake MCP servers", seen)
	}
}
