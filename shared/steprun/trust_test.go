package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

func TestCombineTrust(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name     string
		s        Signals
		combined float64
		policy   string
	}{
		{"confidence alone", Signals{S: 0.9, SAfterV: 0.8}, 0.8, store.PolicyLegacyConfidence},
		{"G below, enforced: caps", Signals{SAfterV: 0.8, G: ptr(0.79), GEnforced: true}, 0.79, store.PolicyTrustVector},
		{"G at, enforced", Signals{SAfterV: 0.8, G: ptr(0.8), GEnforced: true}, 0.8, store.PolicyTrustVector},
		{"G above, enforced: never raises", Signals{SAfterV: 0.8, G: ptr(0.81), GEnforced: true}, 0.8, store.PolicyTrustVector},
		{"G below, not enforced: shadow", Signals{SAfterV: 0.8, G: ptr(0.1)}, 0.8, store.PolicyLegacyConfidence},
		{"G null, enforced: nothing to enforce", Signals{SAfterV: 0.8, GEnforced: true}, 0.8, store.PolicyLegacyConfidence},
		{"D passed", Signals{SAfterV: 0.8, D: &yes}, 0.8, store.PolicyTrustVector},
		{"D failed: 0", Signals{SAfterV: 0.8, D: &no, FailedCheck: "health"}, 0, store.PolicyTrustVector},
		{"D failed after G", Signals{SAfterV: 0.8, G: ptr(0.5), GEnforced: true, D: &no}, 0, store.PolicyTrustVector},
		{"G and D passed", Signals{SAfterV: 0.8, G: ptr(0.6), GEnforced: true, D: &yes}, 0.6, store.PolicyTrustVector},
		{"C enforced replaces, then G caps", Signals{SAfterV: 0.8, C: ptr(0.9), CEnforced: true, G: ptr(0.85), GEnforced: true}, 0.85, store.PolicyTrustVector},
		{"C enforced without a value", Signals{SAfterV: 0.8, CEnforced: true}, 0.8, store.PolicyTrustVector},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CombineTrust(tt.s)
			if got.Combined != tt.combined || got.Policy != tt.policy {
				t.Errorf("CombineTrust = %v %s, want %v %s", got.Combined, got.Policy, tt.combined, tt.policy)
			}
		})
	}
}

// TestGateTrustBoundaries: the gate compares the combined trust with the
// threshold below, at and above it; its reason names the signal.
func TestGateTrustBoundaries(t *testing.T) {
	g := pipeline.Gate{ConfidenceThreshold: 0.7, OnLowConfidence: pipeline.LowEscalate}
	out := okOutput()
	tests := []struct {
		name   string
		tr     Trust
		status string
		reason string
	}{
		{"below", Trust{Combined: math.Nextafter(0.7, 0), Policy: store.PolicyTrustVector, Cause: "grounding 0.6999999999999998 enforced"}, task.StatusEscalated,
			`step "s" escalated: combined trust 0.6999999999999998 is below the threshold 0.7 (grounding 0.6999999999999998 enforced): ok`},
		{"at", Trust{Combined: 0.7, Policy: store.PolicyTrustVector}, task.StatusCompleted, ""},
		{"above", Trust{Combined: 0.71, Policy: store.PolicyTrustVector}, task.StatusCompleted, ""},
		{"legacy below keeps its words", Trust{Combined: 0.5, Policy: store.PolicyLegacyConfidence}, task.StatusEscalated,
			`step "s" escalated: confidence 0.5 is below the threshold 0.7: ok`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, reason, _ := gateTrust("s", g, tt.tr, out, true)
			if status != tt.status || reason != tt.reason {
				t.Errorf("gate = %s %q, want %s %q", status, reason, tt.status, tt.reason)
			}
		})
	}
}

// The scripted answer of the primary step: an agent's loop with one
// tool call, answered at 0.85.
const trustLoop = `
investigate:
  - {tool_calls: [{name: grafana.query, arguments: {expr: pool}}]}
  - '{"confidence": 0.85, "summary": "the pool is exhausted", "next_step_context": "raise the pool", "pool": 10}'
tool_results:
  grafana.query: ['{"pool": "10/10 in use"}']
`

func judgeReply(g float64) string {
	return fmt.Sprintf(`  - '{"confidence": %v, "summary": "judged", "next_step_context": "", "reasoning": {"claims": [{"claim": "pool exhausted", "supported": true, "evidence": "10/10 in use"}, {"claim": "since the deploy", "supported": false}]}}'
`, g)
}

func judgeAgent() *agent.Resolved {
	return &agent.Resolved{Profile: agent.Profile{Name: "grounding-judge", Version: "v-judge", Soul: "You judge."}}
}

// checkServer answers webhook checks by path: /ok 200 {"status": "healthy", "pool": 50},
// /down 503, /small 200 {"pool": 10}.
func checkServer(t *testing.T) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"status": "healthy", "pool": 50, "echo": %s}`, body)
		case "/down":
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
		case "/small":
			fmt.Fprint(w, `{"pool": 10}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func webhookCheck(name, url, expect string) *pipeline.Check {
	if expect == "" {
		expect = pipeline.DefaultWebhookCheckExpect
	}
	return &pipeline.Check{Name: name, Type: pipeline.CheckWebhook, URL: url, Method: "POST", Expect: expect,
		Headers: map[string]string{"Authorization": "Bearer ${CHECK_TOKEN}"},
		Payload: map[string]any{"service": "{{ labels.service }}", "claim": "{{ output.summary }}"}}
}

// TestTrustScenarios runs an agent step with a grounding judge and
// deterministic checks through the handler and checks its status, its
// combined trust and its trust report: G enforced, in shadow, null and
// soft-failed; D passed, failed and errored; a veto with G and D.
func TestTrustScenarios(t *testing.T) {
	srv := checkServer(t)
	type want struct {
		status   string
		combined float64
		policy   string
		g        *float64
		d        *bool
		flags    []string
		reason   string
	}
	yes, no := true, false
	tests := []struct {
		name      string
		replies   string
		noAgent   bool
		threshold float64
		low       pipeline.LowConfidence
		grounding *pipeline.Grounding
		verifier  *pipeline.Verifier
		checks    []*pipeline.Check
		want      want
	}{
		{name: "G enforced below the answer caps it and escalates", replies: "investigate:grounding:\n" + judgeReply(0.5),
			grounding: &pipeline.Grounding{Enforce: true},
			want:      want{status: task.StatusEscalated, combined: 0.5, policy: store.PolicyTrustVector, g: ptr(0.5), reason: "combined trust 0.5 is below the threshold 0.7 (grounding 0.5 enforced)"}},
		{name: "G enforced at the threshold completes", replies: "investigate:grounding:\n" + judgeReply(0.7),
			grounding: &pipeline.Grounding{Enforce: true},
			want:      want{status: task.StatusCompleted, combined: 0.7, policy: store.PolicyTrustVector, g: ptr(0.7)}},
		{name: "G enforced above the answer does not raise it", replies: "investigate:grounding:\n" + judgeReply(0.95),
			grounding: &pipeline.Grounding{Enforce: true},
			want:      want{status: task.StatusCompleted, combined: 0.85, policy: store.PolicyTrustVector, g: ptr(0.95)}},
		{name: "G in shadow is recorded, not enforced", replies: "investigate:grounding:\n" + judgeReply(0.2),
			grounding: &pipeline.Grounding{},
			want:      want{status: task.StatusCompleted, combined: 0.85, policy: store.PolicyLegacyConfidence, g: ptr(0.2)}},
		{name: "G null without a trace: nothing to check", noAgent: true,
			grounding: &pipeline.Grounding{Enforce: true},
			want:      want{status: task.StatusCompleted, combined: 0.85, policy: store.PolicyLegacyConfidence}},
		{name: "G soft-failed: the judge errs", replies: "investigate:grounding: [{error: \"http 500\"}]\n",
			grounding: &pipeline.Grounding{Enforce: true},
			want:      want{status: task.StatusCompleted, combined: 0.85, policy: store.PolicyLegacyConfidence, flags: []string{FlagGroundingFailed}}},
		{name: "D passed", checks: []*pipeline.Check{webhookCheck("health", srv.URL+"/ok", `response.body.status == "healthy" and response.body.echo.claim == "the pool is exhausted"`)},
			want: want{status: task.StatusCompleted, combined: 0.85, policy: store.PolicyTrustVector, d: &yes}},
		{name: "D failed: the status is an answer, expect decides", checks: []*pipeline.Check{webhookCheck("health", srv.URL+"/down", "")},
			want: want{status: task.StatusEscalated, combined: 0, policy: store.PolicyTrustVector, d: &no, flags: []string{FlagCheckFailed},
				reason: `combined trust 0 is below the threshold 0.7 (deterministic check "health" failed)`}},
		{name: "D failed at a boundary: pool 10 is not >= 11", checks: []*pipeline.Check{webhookCheck("pool", srv.URL+"/small", "response.body.pool >= 11")},
			want: want{status: task.StatusEscalated, combined: 0, policy: store.PolicyTrustVector, d: &no, flags: []string{FlagCheckFailed}}},
		{name: "D passed at a boundary: pool 10 is >= 10", checks: []*pipeline.Check{webhookCheck("pool", srv.URL+"/small", "response.body.pool >= 10")},
			want: want{status: task.StatusCompleted, combined: 0.85, policy: store.PolicyTrustVector, d: &yes}},
		{name: "D errored: nothing answers, fails closed", checks: []*pipeline.Check{webhookCheck("health", "http://127.0.0.1:1/ok", "")},
			want: want{status: task.StatusEscalated, combined: 0, policy: store.PolicyTrustVector, d: &no, flags: []string{FlagCheckFailed}}},
		{name: "D failed, on_low_confidence proceed", low: pipeline.LowProceed, checks: []*pipeline.Check{webhookCheck("health", srv.URL+"/down", "")},
			want: want{status: task.StatusCompleted, combined: 0, policy: store.PolicyTrustVector, d: &no, flags: []string{FlagCheckFailed, FlagProceedOnLow}}},
		{name: "veto, G and D: the veto lowers, G caps below it, D passes", threshold: 0.5,
			replies:   "investigate:verifier: ['{\"confidence\": 0.55, \"summary\": \"doubtful\", \"next_step_context\": \"\"}']\ninvestigate:grounding:\n" + judgeReply(0.52),
			verifier:  &pipeline.Verifier{Executor: "scripted", Mode: pipeline.ModeIndependent, CombinationStrategy: pipeline.CombineVeto, VetoFloor: 0.6, Trigger: pipeline.VerifierTrigger{Always: true}},
			grounding: &pipeline.Grounding{Enforce: true},
			checks:    []*pipeline.Check{webhookCheck("health", srv.URL+"/ok", "")},
			want:      want{status: task.StatusCompleted, combined: 0.52, policy: store.PolicyTrustVector, g: ptr(0.52), d: &yes}},
		{name: "veto, G and D: D fails last and zeroes it", threshold: 0.5,
			replies:   "investigate:verifier: ['{\"confidence\": 0.55, \"summary\": \"doubtful\", \"next_step_context\": \"\"}']\ninvestigate:grounding:\n" + judgeReply(0.52),
			verifier:  &pipeline.Verifier{Executor: "scripted", Mode: pipeline.ModeIndependent, CombinationStrategy: pipeline.CombineVeto, VetoFloor: 0.6, Trigger: pipeline.VerifierTrigger{Always: true}},
			grounding: &pipeline.Grounding{Enforce: true},
			checks:    []*pipeline.Check{webhookCheck("health", srv.URL+"/ok", ""), webhookCheck("pool", srv.URL+"/small", "response.body.pool >= 50"), webhookCheck("never", srv.URL+"/ok", "")},
			want:      want{status: task.StatusEscalated, combined: 0, policy: store.PolicyTrustVector, g: ptr(0.52), d: &no, flags: []string{FlagCheckFailed}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies := trustLoop + tt.replies
			if tt.noAgent {
				replies = "investigate: ['{\"confidence\": 0.85, \"summary\": \"the pool is exhausted\", \"next_step_context\": \"\"}']\n" + tt.replies
			}
			e := newEnv(t, replies)
			e.h.Agents = e.prov.inner.(*executor.Registry)
			e.h.Secrets = secretMap{"CHECK_TOKEN": "s3cret"}
			st := agentStep("investigate")
			st.Gate.ConfidenceThreshold = 0.7
			if tt.threshold > 0 {
				st.Gate.ConfidenceThreshold = tt.threshold
			}
			if tt.low != "" {
				st.Gate.OnLowConfidence = tt.low
			}
			st.Verifier, st.Checks = tt.verifier, tt.checks
			if g := tt.grounding; g != nil {
				g.Agent, g.Executor, g.TimeoutSeconds, g.MaxTraceChars, g.Judge = "grounding-judge", "gateway", 30, 1500, judgeAgent()
				st.Grounding = g
			}
			var req task.Request
			if tt.noAgent {
				st.ExecutorConfig = nil
				req = newRequest(t, task.ModeStep, st)
			} else {
				req = agentRequest(t, st, sreAgent(""))
			}
			resp, err := e.h.Respond(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			rec := stepRecords(t, e.st, "investigate")[0]
			rep := rec.Trust
			if resp.Status != tt.want.status || string(rec.Status) != tt.want.status {
				t.Errorf("status %s, record %s, want %s (%s)", resp.Status, rec.Status, tt.want.status, resp.Reason)
			}
			if rep == nil {
				t.Fatal("no trust report")
			}
			if rep.CombinedTrust != tt.want.combined || rep.Gate.Policy != tt.want.policy || rep.Version != store.TrustReportVersion {
				t.Errorf("combined %v policy %s, want %v %s", rep.CombinedTrust, rep.Gate.Policy, tt.want.combined, tt.want.policy)
			}
			wantMode := store.TrustShadow
			if tt.want.policy == store.PolicyTrustVector {
				wantMode = store.TrustEnforced
			}
			if rep.Mode != wantMode || rep.Gate.Decision != tt.want.status || rep.Signals.C != nil {
				t.Errorf("mode %s decision %s C %v", rep.Mode, rep.Gate.Decision, rep.Signals.C)
			}
			if !sameFloat(rep.Signals.G, tt.want.g) || !sameBool(rep.Signals.D, tt.want.d) {
				t.Errorf("G %v D %v, want %v %v", deref(rep.Signals.G), derefB(rep.Signals.D), deref(tt.want.g), derefB(tt.want.d))
			}
			for _, f := range tt.want.flags {
				if !strings.Contains(strings.Join(rec.Flags, ","), f) {
					t.Errorf("flags %v lack %s", rec.Flags, f)
				}
			}
			if tt.want.reason != "" && (!strings.Contains(resp.Reason, tt.want.reason) || rep.Gate.Reason != resp.Reason) {
				t.Errorf("reason %q (report %q), want %q", resp.Reason, rep.Gate.Reason, tt.want.reason)
			}
			if resp.Trust == nil || resp.Trust.Combined != tt.want.combined {
				t.Errorf("response trust %+v", resp.Trust)
			}
			// Later steps and the recorded output see the combined trust.
			assertSeen(t, resp, rec, "investigate", tt.want.combined)
			if *rec.EffectiveConfidence != rep.Signals.SAfterV || rep.Signals.S != 0.85 {
				t.Errorf("effective %v, S %v S_after_V %v", *rec.EffectiveConfidence, rep.Signals.S, rep.Signals.SAfterV)
			}
			if strings.Contains(string(mustJSON(t, rec)), "s3cret") {
				t.Error("the check's token reached the record")
			}
		})
	}
}

// TestGroundingJudge: the judge reads the task, the answer and the trace
// and no more; its claims and spend are in the report and the step's usage.
func TestGroundingJudge(t *testing.T) {
	e := newEnv(t, trustLoop+`
investigate:grounding:
  - {reply: '{"confidence": 0.5, "summary": "one of two", "next_step_context": "", "reasoning": {"claims": [{"claim": "pool exhausted", "supported": true, "evidence": "10/10"}, {"claim": "deploy", "supported": false}]}}', input_tokens: 700, output_tokens: 70}
`)
	rec := &recordingAgents{Agents: e.prov.inner.(*executor.Registry)}
	e.h.Agents = rec
	st := agentStep("investigate")
	st.Grounding = &pipeline.Grounding{Agent: "grounding-judge", Executor: "gateway", TimeoutSeconds: 30, MaxTraceChars: 8, Judge: judgeAgent(),
		ExecutorConfig: map[string]any{"model": "judge-{{ labels.service }}"}}
	if _, err := e.h.Respond(context.Background(), agentRequest(t, st, sreAgent(""))); err != nil {
		t.Fatal(err)
	}
	r := stepRecords(t, e.st, "investigate")[0]
	g := r.Trust.Grounding
	if g == nil || *g.Score != 0.5 || len(g.Claims) != 2 || g.Claims[0].Evidence != "10/10" || g.InputTokens != 700 || !strings.HasPrefix(g.Note, "1 of 2 claims supported") {
		t.Fatalf("verdict %+v", g)
	}
	if r.InputTokens != 700 || r.OutputTokens != 70 {
		t.Errorf("step tokens %d/%d: the judge's spend belongs to the step", r.InputTokens, r.OutputTokens)
	}
	if len(rec.calls) != 2 || rec.calls[1].Step != "investigate:grounding" || rec.calls[1].Config["model"] != "judge-api" || rec.calls[1].Config["agent"] != "grounding-judge" {
		t.Fatalf("agent calls %+v", rec.calls)
	}
	if len(rec.agents) != 2 || rec.agents[1].Profile.Name != "grounding-judge" {
		t.Errorf("judge agent %+v", rec.agents)
	}
}

// recordingAgents records the calls of agent steps.
type recordingAgents struct {
	Agents
	calls  []executor.Call
	agents []*agent.Resolved
}

func (r *recordingAgents) Agent(call executor.Call, a *agent.Resolved) (agent.Model, agent.Toolbox, error) {
	r.calls, r.agents = append(r.calls, call), append(r.agents, a)
	return r.Agents.Agent(call, a)
}

func TestJudgePrompt(t *testing.T) {
	trace := []agent.Event{
		{Type: agent.EventToolCall, Iteration: 1, ID: "c1", Name: "grafana.query", Arguments: json.RawMessage(`{"expr":"pool"}`)},
		{Type: agent.EventToolResult, Iteration: 1, ID: "c1", Name: "grafana.query", Content: "0123456789abcdef", Truncated: true, Chars: 9000},
		{Type: agent.EventToolDenied, Iteration: 2, ID: "c2", Name: "jira.delete", Reason: "read only"},
		{Type: agent.EventText, Iteration: 3, Content: "done"},
	}
	p := judgePrompt("Why {{ x }}?", json.RawMessage(`{"confidence":0.8,"summary":"s","artifacts":{"log":"secret-ish"}}`), trace, 10)
	for _, want := range []string{"## Task given to the agent\n\nWhy {{ x }}?", `{"confidence":0.8,"summary":"s"}`,
		"[1] tool_call grafana.query {\"expr\":\"p […cut at 10 of 15 characters]",
		"[1] tool_result grafana.query (cut in the trace: 9000 characters in all):\n0123456789 […cut at 10 of 16 characters]",
		"[2] tool_denied jira.delete: read only", "[3] text: done"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "secret-ish") {
		t.Error("the judge sees the artifacts")
	}
	var many []agent.Event
	for i := range 200 {
		many = append(many, agent.Event{Type: agent.EventToolResult, Iteration: i, Content: strings.Repeat("x", 1500)})
	}
	p = judgePrompt("t", json.RawMessage(`{}`), many, 1500)
	if len(p) > MaxJudgeTraceBytes+4096 || !strings.Contains(p, "more events left out]") {
		t.Errorf("a long trace gives a prompt of %d bytes", len(p))
	}
}

// TestHumanCheck: a step pauses at a human check (waiting record,
// StatusCheck), its approval is named after the check, and the check Task
// goes on from the decision: approve runs the next check and completes,
// reject and a timeout fail it closed.
func TestHumanCheck(t *testing.T) {
	srv := checkServer(t)
	tests := []struct {
		name     string
		decision *task.Decision
		err      *task.Error
		status   string
		combined float64
		outcome  string
		detail   string
	}{
		{"approved", &task.Decision{Decision: task.Approve, By: "alice"}, nil, task.StatusCompleted, 0.85, store.CheckPassed, "approved by alice"},
		{"rejected", &task.Decision{Decision: task.Reject, By: "bob", Comment: "wrong pool"}, nil, task.StatusEscalated, 0, store.CheckFailed, "rejected by bob: wrong pool"},
		{"timed out", nil, &task.Error{Error: "States.Timeout", Cause: "no answer"}, task.StatusEscalated, 0, store.CheckError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, `investigate: ['{"confidence": 0.85, "summary": "the pool is exhausted", "next_step_context": ""}']`)
			n := &captureNotifier{}
			e.h.Notifier, e.h.Secrets = n, secretMap{"CHECK_TOKEN": "s3cret"}
			st := seqStep("investigate", "why?")
			st.Gate.ConfidenceThreshold = 0.7
			st.Checks = []*pipeline.Check{
				webhookCheck("health", srv.URL+"/ok", ""),
				{Name: "signoff", Type: pipeline.CheckHuman, Message: "Is {{ output.summary }} right?", TimeoutSeconds: 600},
				webhookCheck("pool", srv.URL+"/ok", "response.body.pool >= 50"),
			}
			ctx := context.Background()
			resp, err := e.h.Respond(ctx, newRequest(t, task.ModeStep, st))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != task.StatusCheck || resp.Check == nil || *resp.Check != (task.CheckAt{Index: 1, Name: "signoff", Attempt: 1}) {
				t.Fatalf("paused with %s %+v", resp.Status, resp.Check)
			}
			rec := stepRecords(t, e.st, "investigate")[0]
			if rec.Status != store.StepWaiting || len(rec.Trust.DeterministicChecks) != 2 || rec.Trust.DeterministicChecks[1].Outcome != store.CheckPending ||
				rec.Trust.Gate.Decision != "waiting" || rec.Trust.Signals.D != nil {
				t.Fatalf("waiting record %s %+v", rec.Status, rec.Trust)
			}

			areq := newRequest(t, task.ModeApproval, st)
			areq.TaskToken, areq.Check = "token-1", resp.Check
			areq.Steps = map[string]json.RawMessage{"investigate": resp.Output}
			if _, err := e.h.Respond(ctx, areq); err != nil {
				t.Fatal(err)
			}
			if len(n.got) != 1 || n.got[0].Step != "investigate:check:signoff" || n.got[0].Message != "Is the pool is exhausted right?" {
				t.Fatalf("approval %+v", n.got)
			}
			if getRun(t, e.st).Status != store.RunWaiting {
				t.Errorf("run not waiting")
			}

			creq := newRequest(t, task.ModeCheck, st)
			creq.Check, creq.Decision, creq.Error = resp.Check, tt.decision, tt.err
			creq.Usage = resp.Usage
			final, err := e.h.Respond(ctx, creq)
			if err != nil {
				t.Fatal(err)
			}
			recs := stepRecords(t, e.st, "investigate")
			rec = recs[0]
			if len(recs) != 1 || final.Status != tt.status || string(rec.Status) != tt.status || rec.Trust.CombinedTrust != tt.combined {
				t.Fatalf("%d records; status %s / %s, combined %v; want %s %v", len(recs), final.Status, rec.Status, rec.Trust.CombinedTrust, tt.status, tt.combined)
			}
			checks := rec.Trust.DeterministicChecks
			if len(checks) != 3 || checks[1].Outcome != tt.outcome || checks[1].Detail != tt.detail {
				t.Fatalf("checks %+v", checks)
			}
			wantLast := store.CheckPassed
			if tt.outcome != store.CheckPassed {
				wantLast = store.CheckSkipped
			}
			if checks[2].Outcome != wantLast {
				t.Errorf("the check after the human one: %s, want %s", checks[2].Outcome, wantLast)
			}
			if tt.err != nil && checks[1].Error != "no decision within 600 s" {
				t.Errorf("timeout error %q", checks[1].Error)
			}
			if strings.Contains(strings.Join(rec.Flags, ","), FlagAwaitingCheck) {
				t.Errorf("the finished record keeps %s", FlagAwaitingCheck)
			}

			// A retried check Task answers what the record says.
			again, err := e.h.Respond(ctx, creq)
			if err != nil || again.Status != final.Status || len(stepRecords(t, e.st, "investigate")) != 1 {
				t.Errorf("retried check Task: %s %v", again.Status, err)
			}
		})
	}
}

// TestDefaultCheckMessage: a human check without a message asks about
// the answer, whose text is never rendered.
func TestDefaultCheckMessage(t *testing.T) {
	e := newEnv(t, ``)
	n := &captureNotifier{}
	e.h.Notifier = n
	st := seqStep("investigate", "why?")
	st.Checks = []*pipeline.Check{{Name: "signoff", Type: pipeline.CheckHuman}}
	req := newRequest(t, task.ModeApproval, st)
	req.TaskToken, req.Check = "t", &task.CheckAt{Index: 0, Name: "signoff", Attempt: 1}
	req.Steps = map[string]json.RawMessage{"investigate": json.RawMessage(`{"confidence": 0.8, "summary": "{{ pipeline_run_id }} {% raw %}", "next_step_context": ""}`)}
	if _, err := e.h.Respond(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := "Step \"investigate\" answered (confidence 0.8): {{ pipeline_run_id }} {% raw %}\nApprove if the answer holds; a rejection fails deterministic check \"signoff\" and the step's trust."
	if len(n.got) != 1 || n.got[0].Message != want {
		t.Errorf("message %q", n.got[0].Message)
	}
	a, _ := e.st.GetApproval(context.Background(), n.got[0].ID)
	if !a.ExpiresAt.Equal(e.clock.Add(300e9)) {
		t.Errorf("expires %v, want the default 300 s", a.ExpiresAt)
	}
}

// TestScriptedChecks: with check replies (a run with --responses), webhook
// and shell checks answer from them and nothing is called or run.
func TestScriptedChecks(t *testing.T) {
	tests := []struct {
		name    string
		checks  []*pipeline.Check
		outcome []string
	}{
		{"webhook and shell pass", []*pipeline.Check{
			{Name: "health", Type: pipeline.CheckWebhook, URL: "http://never.invalid", Expect: `response.status_code == 200 and response.body.status == "healthy"`},
			{Name: "disk", Type: pipeline.CheckShell, Run: "rm -rf /", Expect: `result == "91" and exit_code == 0`},
		}, []string{store.CheckPassed, store.CheckPassed}},
		{"a scripted error fails closed", []*pipeline.Check{
			{Name: "gone", Type: pipeline.CheckWebhook, URL: "http://never.invalid", Expect: pipeline.DefaultWebhookCheckExpect},
			{Name: "health", Type: pipeline.CheckWebhook, URL: "http://never.invalid", Expect: pipeline.DefaultWebhookCheckExpect},
		}, []string{store.CheckError, store.CheckSkipped}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := executor.ParseResponses("r.yaml", []byte(`
investigate: ['{"confidence": 0.9, "summary": "ok", "next_step_context": ""}']
investigate:check:health: ['{"status": "healthy"}']
investigate:check:disk: ['  91  ']
investigate:check:gone: [{error: "http 500"}]
`))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, ``)
			e.h.Executors = executor.NewRegistry(executor.Deps{Responses: rs})
			e.h.CheckReplies = rs
			e.h.HTTP = &http.Client{Transport: refuse{t}}
			st := seqStep("investigate", "why?")
			st.Checks = tt.checks
			if _, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, st)); err != nil {
				t.Fatal(err)
			}
			got := stepRecords(t, e.st, "investigate")[0].Trust.DeterministicChecks
			for i, want := range tt.outcome {
				if got[i].Outcome != want {
					t.Errorf("check %s: %s (%s), want %s", got[i].Name, got[i].Outcome, got[i].Error, want)
				}
			}
		})
	}
}

type refuse struct{ t *testing.T }

func (r refuse) RoundTrip(req *http.Request) (*http.Response, error) {
	r.t.Errorf("a scripted check called %s", req.URL)
	return nil, fmt.Errorf("refused")
}

// TestShellCheck runs shell checks for real: a value that tries to end
// the quoting or start another command is one argument, the exit code
// decides with expect, and a Lambda-like handler refuses to run them.
func TestShellCheck(t *testing.T) {
	if _, err := exec.LookPath("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	hostile := `x'; touch pwned; echo '$(id) "$HOME" ` + "`id`\n;"
	tests := []struct {
		name    string
		run     string
		expect  string
		shell   bool
		outcome string
		detail  string
	}{
		{"a value is one word", `printf '%s|' {{ output.summary }} {{ output.next_step_context }}`, "result == " + strconv.Quote(hostile+"|plain|"), true, store.CheckPassed, ""},
		{"exit 0 and expect", `echo 42`, `result == "42" and exit_code == 0`, true, store.CheckPassed, "exit 0: 42"},
		{"expect does not hold", `echo 41`, `result == "42"`, true, store.CheckFailed, "exit 0: 41"},
		{"a failing command fails whatever expect says", `echo oops >&2; exit 3`, `exit_code == 3`, true, store.CheckFailed, "exit 3:  (stderr: oops)"},
		{"not in a Lambda", `echo 42`, `exit_code == 0`, false, store.CheckError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			e := newEnv(t, `investigate: [`+string(mustJSON(t, string(mustJSON(t, map[string]any{"confidence": 0.9, "summary": hostile, "next_step_context": "plain"}))))+`]`)
			e.h.ShellChecks = tt.shell
			st := seqStep("investigate", "why?")
			st.Checks = []*pipeline.Check{{Name: "cmd", Type: pipeline.CheckShell, Run: tt.run, Expect: tt.expect, TimeoutSeconds: 10}}
			if _, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, st)); err != nil {
				t.Fatal(err)
			}
			r := stepRecords(t, e.st, "investigate")[0].Trust.DeterministicChecks[0]
			if r.Outcome != tt.outcome || (tt.detail != "" && r.Detail != tt.detail) {
				t.Errorf("outcome %s detail %q error %q, want %s %q", r.Outcome, r.Detail, r.Error, tt.outcome, tt.detail)
			}
			if _, err := exec.Command("test", "-e", "pwned").Output(); err == nil {
				t.Error("a value ran a command")
			}
		})
	}
}

func TestShellCheckTimeout(t *testing.T) {
	e := newEnv(t, `investigate: ['{"confidence": 0.9, "summary": "ok", "next_step_context": ""}']`)
	e.h.ShellChecks = true
	st := seqStep("investigate", "why?")
	st.Checks = []*pipeline.Check{{Name: "slow", Type: pipeline.CheckShell, Run: "sleep 30", Expect: "exit_code == 0", TimeoutSeconds: 1}}
	if _, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, st)); err != nil {
		t.Fatal(err)
	}
	r := stepRecords(t, e.st, "investigate")[0].Trust.DeterministicChecks[0]
	if r.Outcome != store.CheckError || !strings.Contains(r.Error, "no answer within 1 s") {
		t.Errorf("%+v", r)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"plain-word_1.2/x:y,z@h%+=", "plain-word_1.2/x:y,z@h%+="},
		{"two words", "'two words'"},
		{"it's", `'it'"'"'s'`},
		{"$(id)", "'$(id)'"},
		{"a\nb", "'a\nb'"},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRenderShell(t *testing.T) {
	r := newRenderer("n0nce")
	b := map[string]any{"v": "a b", "w": "it's", "list": []any{"x", "y z"}, "empty": ""}
	tests := []struct{ name, src, want string }{
		{"plain text stays", "echo hi", "echo hi"},
		{"outputs are words", "echo {{ v }} {{w}}", `echo 'a b' 'it'"'"'s'`},
		{"trim marks keep their side", "echo x  {{- v -}}  y", `echo x'a b'y`},
		{"an undefined value is an empty word", "test -n {{ nope }}", "test -n ''"},
		{"raw stays the author's", "echo {% raw %}{{ v }}{% endraw %} {{ v }}", `echo {{ v }} 'a b'`},
		{"comments stay out", "echo {% comment %}{{ v }}{% endcomment %}{{ empty }}", "echo ''"},
		{"a captured output is quoted whole", "{% capture c %}{{ v }}-{{ w }}{% endcapture %}echo {{ c }}", `echo 'a b-it'"'"'s'`},
		{"loops quote each output", "echo{% for x in list %} {{ x }}{% endfor %}", `echo x 'y z'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.renderShell(context.Background(), "s", "run", tt.src, b)
			if err != nil || got != tt.want {
				t.Errorf("renderShell(%q) = %q, %v; want %q", tt.src, got, err, tt.want)
			}
		})
	}
	if _, err := r.renderShell(context.Background(), "s", "run", "{% capture c %}{{ v }}{% endcapture %}echo {{ c | slice: 0, 7 }}", b); err == nil {
		t.Error("a filter that cuts a marker is not refused")
	}
}

func okOutput() *llmoutput.Output { return llmoutput.New(0.8, "ok", "") }

type secretMap map[string]string

func (m secretMap) Resolve(_ context.Context, name string) (string, error) {
	if v, ok := m[name]; ok {
		return v, nil
	}
	return "", fmt.Errorf("secret %q is not set", name)
}

func sameFloat(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func sameBool(a, b *bool) bool     { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

func derefB(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
