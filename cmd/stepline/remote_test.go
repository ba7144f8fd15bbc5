package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor/remotetest"
)

// remoteToken is the remote gateway's operator token in these tests; no
// output, record or database may hold it.
const remoteToken = "tok-remote-5be1c0ffee42d00d"

// whenExample is the design document's when: example, a verbatim copy.
func whenExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../compiler/testdata/seed/when-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// showRecords reads a run's step records through show --json.
func showRecords(t *testing.T, state, runID string) []map[string]any {
	t.Helper()
	code, out, errOut := run(t, "", "show", "--json", "--dir", state, runID)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	var doc struct {
		Steps []map[string]any `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return doc.Steps
}

func record(t *testing.T, recs []map[string]any, name string) map[string]any {
	t.Helper()
	for _, r := range recs {
		if r["name"] == name {
			return r
		}
	}
	t.Fatalf("no record of %q in %v", name, recs)
	return nil
}

// TestWhenExampleOnOpenClaw runs the design document's when: example,
// unchanged, against the fake OpenClaw gateway: the device identity read
// from ~/.openclaw/identity (the default), each openclaw step one signed
// session of its own, triage's answer deciding which step runs next.
func TestWhenExampleOnOpenClaw(t *testing.T) {
	home := t.TempDir()
	id := remotetest.NewIdentity("tok-openclaw-0a1b2c3d4e5f")
	if err := id.WriteDir(filepath.Join(home, ".openclaw", "identity")); err != nil {
		t.Fatal(err)
	}
	gw := remotetest.NewOpenClaw(t, id, []string{"sre-triage", "sre-remediator"}, func(r remotetest.Run) remotetest.Answer {
		a := remotetest.Answer{Model: "claude-sonnet-4-5", Provider: "anthropic", InputTokens: 1200, OutTokens: 300, Events: 2}
		if r.AgentID == "sre-triage" {
			a.Texts = []string{"Looking at the alert now.", `{"confidence": 0.86, "summary": "checkout-api is saturated", "next_step_context": "", "action": "remediate"}`}
		} else {
			a.Texts = []string{`{"confidence": 0.95, "summary": "restarted checkout-api", "next_step_context": ""}`}
		}
		return a
	})
	root := writeTree(t, map[string]string{
		"stepline.yaml":               "executors:\n  openclaw:\n    url: " + gw.URL + "\n",
		"pipelines/when-example.yaml": whenExample(t),
	})
	p := filepath.Join(root, "pipelines", "when-example.yaml")
	if code, out, errOut := run(t, "", "validate", p); code != 0 || errOut != "" {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errOut)
	}
	state := filepath.Join(root, "state")
	code, out, errOut := cliWithEnv(t, map[string]string{"HOME": home}, "run", "--json", "--dir", state, p)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s (refusals %v)", code, out, errOut, gw.Refusals())
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Status != "completed" {
		t.Fatalf("report %+v", rep)
	}
	runs := gw.Runs()
	if len(runs) != 2 {
		t.Fatalf("%d runs on the gateway", len(runs))
	}
	if runs[0].SessionKey != "agent:sre-triage:pipeline:"+rep.RunID+":triage" || runs[1].SessionKey != "agent:sre-remediator:pipeline:"+rep.RunID+":auto-remediation" {
		t.Errorf("session keys %q, %q", runs[0].SessionKey, runs[1].SessionKey)
	}
	if !strings.Contains(runs[1].Message, "Triage says: checkout-api is saturated") {
		t.Errorf("remediation message %q", runs[1].Message)
	}
	recs := showRecords(t, state, rep.RunID)
	tr := record(t, recs, "triage")
	if tr["agent"] != "sre-triage" || tr["model"] != "claude-sonnet-4-5" || tr["provider"] != "anthropic" ||
		tr["input_tokens"] != float64(1200) || tr["output_tokens"] != float64(300) || tr["cost_usd"] == nil {
		t.Errorf("triage record %v", tr)
	}
	for _, r := range recs {
		if r["name"] == "page-oncall" && r["status"] != "skipped" {
			t.Errorf("page-oncall ran: %v", r)
		}
	}
}

// TestWhenExampleOffline runs the same example offline, its openclaw
// steps answered from scripted replies: nothing is dialled.
func TestWhenExampleOffline(t *testing.T) {
	root := writeTree(t, map[string]string{
		"stepline.yaml":               "executors:\n  openclaw:\n    url: ws://127.0.0.1:9\n",
		"pipelines/when-example.yaml": whenExample(t),
		"responses.yaml": `triage:
  - '{"confidence": 0.8, "summary": "needs a human", "next_step_context": "", "action": "escalate_human"}'
page-oncall:
  - {decision: approve, by: oncall}
`,
	})
	code, out, errOut := run(t, "", "run", "--json", "--dir", filepath.Join(root, "state"), "--responses", filepath.Join(root, "responses.yaml"),
		filepath.Join(root, "pipelines", "when-example.yaml"))
	if code != 0 || !strings.Contains(out, `"status": "completed"`) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}

// TestOpenClawNotConfigured: without executors.openclaw the example
// validates with one warning, and its first step fails with a
// ConfigError naming the setting.
func TestOpenClawNotConfigured(t *testing.T) {
	root := writeTree(t, map[string]string{"stepline.yaml": "", "pipelines/when-example.yaml": whenExample(t)})
	p := filepath.Join(root, "pipelines", "when-example.yaml")
	code, _, errOut := run(t, "", "validate", p)
	if code != 0 || strings.Count(errOut, "warning:") != 1 || !strings.Contains(errOut, "executor openclaw is not configured: set executors.openclaw.url") {
		t.Fatalf("validate: exit %d\n%s", code, errOut)
	}
	code, out, errOut := run(t, "", "run", "--json", "--dir", filepath.Join(root, "state"), p)
	if code != 0 || !strings.Contains(out, `"status": "failed"`) || !strings.Contains(out, "ConfigError") || !strings.Contains(out, "executors.openclaw.url") {
		t.Errorf("run: exit %d\n%s%s", code, out, errOut)
	}
}

// remoteGatewayProject is a project with a local profile (triage) and a
// remote agent gateway serving the rest.
func remoteGatewayProject(t *testing.T, gatewayURL, pipeline string) string {
	t.Helper()
	return writeTree(t, map[string]string{
		"stepline.yaml":            "executors:\n  gateway:\n    url: " + gatewayURL + "\n    token: ${AGENT_GATEWAY_TOKEN}\n",
		"agents/triage/agent.yaml": "name: triage\nmodel: anthropic/claude-sonnet-4-6\n",
		"agents/triage/soul.md":    "You triage.",
		"pipelines/p.yaml":         pipeline,
	})
}

const investigation = `name: investigation
steps:
  - name: investigate
    executor: gateway
    executor_config: {agent: sre-investigator, trace_max_chars: 500}
    timeout_seconds: %d
    prompt_template: Investigate checkout-api
`

// TestRemoteGatewayThroughRun runs a gateway step whose agent the
// project's remote gateway serves: its trace, model, provider, tokens and
// cost land in the step's record; the token stays out of every output.
func TestRemoteGatewayThroughRun(t *testing.T) {
	gw := remotetest.NewGateway(t, remoteToken, []string{"sre-investigator"}, func(remotetest.Run) remotetest.Answer {
		return remotetest.Answer{
			Texts: []string{`{"confidence": 0.9, "summary": "error rate 0.31 after the deploy", "next_step_context": ""}`},
			Model: "claude-sonnet-4-5", Provider: "anthropic", AgentVersion: "9f8e7d6c5b4a", InputTokens: 2000, OutTokens: 100,
			Trace: []map[string]any{
				{"type": "llm_call", "iteration": 1},
				{"type": "tool_call", "name": "grafana__query", "input": map[string]any{"expr": "rate(errors[5m])"}},
				{"type": "tool_result", "name": "grafana__query", "content": "0.31", "is_error": false},
				{"type": "tool_call", "name": "jira__delete_issue", "input": map[string]any{"key": "OPS-1"}},
				{"type": "tool_denied", "name": "jira__delete_issue", "reason": "read only"},
				{"type": "llm_call", "iteration": 2},
				{"type": "text", "content": "done"},
			},
		}
	})
	root := remoteGatewayProject(t, gw.URL, strings.Replace(investigation, "%d", "60", 1))
	p := filepath.Join(root, "pipelines", "p.yaml")
	state := filepath.Join(root, "state")
	envVars := map[string]string{"AGENT_GATEWAY_TOKEN": remoteToken}
	code, out, errOut := cliWithEnv(t, envVars, "run", "--json", "--dir", state, p)
	if code != 0 || !strings.Contains(out, `"status": "completed"`) {
		t.Fatalf("run: exit %d\n%s%s (refusals %v)", code, out, errOut, gw.Refusals())
	}
	var rep runReport
	_ = json.Unmarshal([]byte(out), &rep)
	rec := record(t, showRecords(t, state, rep.RunID), "investigate")
	if rec["agent"] != "sre-investigator" || rec["agent_version"] != "9f8e7d6c5b4a" || rec["model"] != "claude-sonnet-4-5" || rec["provider"] != "anthropic" ||
		rec["input_tokens"] != float64(2000) || rec["output_tokens"] != float64(100) || rec["cost_usd"] == nil {
		t.Errorf("record %v", rec)
	}
	b, _ := json.Marshal(rec["trace"])
	var trace []struct{ Type, ID, Name, Reason string }
	_ = json.Unmarshal(b, &trace)
	var types []string
	for _, ev := range trace {
		types = append(types, ev.Type+":"+ev.Name)
	}
	if got := strings.Join(types, ","); got != "tool_call:grafana.query,tool_result:grafana.query,tool_call:jira.delete_issue,tool_denied:jira.delete_issue,text:" ||
		trace[0].ID == "" || trace[0].ID != trace[1].ID || trace[3].Reason != "read only" {
		t.Errorf("trace %s", b)
	}
	if flags, _ := json.Marshal(rec["flags"]); !strings.Contains(string(flags), "tool_denied") {
		t.Errorf("flags %s", flags)
	}
	params := gw.Runs()[0].Params
	if params["traceToolResultMax"] != float64(500) || params["sessionKey"] != "agent:sre-investigator:pipeline:"+rep.RunID+":investigate" {
		t.Errorf("params %v", params)
	}
	_, show, _ := run(t, "", "show", "--dir", state, rep.RunID)
	for what, text := range map[string]string{"stdout": out, "stderr": errOut, "show": show} {
		if strings.Contains(text, remoteToken) {
			t.Errorf("the token appears in %s", what)
		}
	}
	assertNoCLIKeyIn(t, state, remoteToken)
}

// assertNoCLIKeyIn checks that no file under dir holds secret.
func assertNoCLIKeyIn(t *testing.T, dir, secret string) {
	t.Helper()
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
}

// TestRemoteGatewayStepTimeout: a step's timeout ends a slow remote run:
// the step fails, and the gateway sees the client go and cancels the run.
func TestRemoteGatewayStepTimeout(t *testing.T) {
	gw := remotetest.NewGateway(t, remoteToken, []string{"sre-investigator"}, func(remotetest.Run) remotetest.Answer {
		return remotetest.Answer{Delay: time.Minute}
	})
	root := remoteGatewayProject(t, gw.URL, strings.Replace(investigation, "%d", "3", 1))
	start := time.Now()
	code, out, errOut := cliWithEnv(t, map[string]string{"AGENT_GATEWAY_TOKEN": remoteToken}, "run", "--json", "--dir", filepath.Join(root, "state"), filepath.Join(root, "pipelines", "p.yaml"))
	if code != 0 || !strings.Contains(out, `"status": "failed"`) || time.Since(start) > 20*time.Second {
		t.Fatalf("exit %d after %s\n%s%s", code, time.Since(start), out, errOut)
	}
	if !strings.Contains(out, "AgentDeadlineExceeded") {
		t.Errorf("output lacks the deadline fault:\n%s%s", out, errOut)
	}
	for deadline := time.Now().Add(5 * time.Second); gw.Cancelled() == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	if gw.Cancelled() != 1 {
		t.Errorf("the gateway cancelled %d runs, want 1", gw.Cancelled())
	}
}

// TestWhereAgentsRun: agents and validate -v say which runtime serves an
// agent name: a profile of the project wins over the remote gateway.
func TestWhereAgentsRun(t *testing.T) {
	pipeline := `name: both
steps:
  - {name: investigate, executor: gateway, executor_config: {agent: sre-investigator}}
  - {name: triage, executor: gateway, executor_config: {agent: triage}}
  - {name: page, executor: openclaw, executor_config: {agent: pager}}
`
	root := writeTree(t, map[string]string{
		"stepline.yaml":            "executors:\n  gateway: {url: \"wss://agents.example/rpc\", token: \"${T}\"}\n  openclaw: {url: \"ws://oc.internal:18789\"}\n",
		"agents/triage/agent.yaml": "name: triage\nmodel: anthropic/claude-sonnet-4-6\n",
		"agents/triage/soul.md":    "You triage.",
		"pipelines/p.yaml":         pipeline,
	})
	code, out, errOut := run(t, "", "validate", "-v", filepath.Join(root, "pipelines", "p.yaml"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`step "investigate": agent "sre-investigator" runs on the remote agent gateway at wss://agents.example/rpc`,
		`step "triage": agent "triage" runs in-process (version `,
		`step "page": agent "pager" runs on the OpenClaw gateway at ws://oc.internal:18789`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate -v lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "", "agents", "--config", filepath.Join(root, "stepline.yaml"))
	for _, want := range []string{
		"TOOLS  RUNS", "in-process",
		"gateway steps naming any agent not listed above (a profile of the project wins) run on the remote agent gateway at wss://agents.example/rpc",
		"openclaw steps run their agent on the OpenClaw gateway at ws://oc.internal:18789, as device ~/.openclaw/identity",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("agents: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
	_, out, _ = run(t, "", "agents", "--json", "--config", filepath.Join(root, "stepline.yaml"))
	if !strings.Contains(out, `"runs": "in-process"`) {
		t.Errorf("agents --json: %s", out)
	}
}

// TestFailureWebhookExampleOnRemoteGateway: the design document's other
// example, whose gateway step names sre-triage, validates unchanged in a
// project that has no such profile but names a remote agent gateway, and
// validate -v says its agent runs there.
func TestFailureWebhookExampleOnRemoteGateway(t *testing.T) {
	b, err := os.ReadFile("../../compiler/testdata/seed/failure-webhook-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := writeTree(t, map[string]string{
		"stepline.yaml":    "executors:\n  gateway: {url: \"wss://agents.example/rpc\", token: \"${AGENT_GATEWAY_TOKEN}\"}\n",
		"pipelines/f.yaml": string(b),
	})
	code, out, errOut := run(t, "", "validate", "-v", filepath.Join(root, "pipelines", "f.yaml"))
	if code != 0 || !strings.Contains(out, `step "triage": agent "sre-triage" runs on the remote agent gateway at wss://agents.example/rpc`) {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}
