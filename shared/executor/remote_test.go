package executor

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor/remotetest"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

const validAnswer = `{"confidence": 0.9, "summary": "checkout-api is saturated", "next_step_context": "restart it", "action": "remediate"}`

// answerWith answers every run with text.
func answerWith(text string) func(remotetest.Run) remotetest.Answer {
	return func(remotetest.Run) remotetest.Answer {
		return remotetest.Answer{Texts: []string{text}, Model: "claude-sonnet-4-5", Provider: "anthropic", InputTokens: 120, OutTokens: 30}
	}
}

// openclawSetup is a paired device, its identity on disk under a fake
// home, and a fake OpenClaw gateway that knows it.
type openclawSetup struct {
	id   remotetest.Identity
	home string
	gw   *remotetest.OpenClaw
}

func newOpenClaw(t *testing.T, answer func(remotetest.Run) remotetest.Answer) openclawSetup {
	t.Helper()
	id := remotetest.NewIdentity(testToken)
	home := t.TempDir()
	if err := id.WriteDir(filepath.Join(home, ".openclaw", "identity")); err != nil {
		t.Fatal(err)
	}
	return openclawSetup{id: id, home: home, gw: remotetest.NewOpenClaw(t, id, []string{"sre-triage", "sre-remediator"}, answer)}
}

func (s openclawSetup) registry(t *testing.T) *Registry {
	reg, _ := newRegistry(t, Deps{OpenClawIdentityFiles: true, Home: s.home})
	return reg
}

func openclawAgent(url string) *agent.Resolved {
	return &agent.Resolved{Profile: agent.Profile{Name: "sre-triage"}, ThinkingLevel: "low",
		Remote: &agent.Remote{Runtime: agent.RuntimeOpenClaw, URL: url, Identity: "~/.openclaw/identity",
			Device: "${OC_DEVICE}", DeviceAuth: "${OC_AUTH}"}}
}

func openclawCall() Call {
	return Call{Executor: OpenClaw, Step: "triage", Timeout: 30 * time.Second, Config: map[string]any{
		"agent": "sre-triage", "session_key": "agent:sre-triage:pipeline:run-1:triage", "model": "anthropic/claude-opus-4-7"}}
}

// runLoop runs an agent step's loop over the registry's model for it.
func runLoop(t *testing.T, reg *Registry, call Call, a *agent.Resolved, within time.Duration) (*agent.Conversation, error) {
	t.Helper()
	m, tools, err := reg.Agent(call, a)
	if err != nil {
		return nil, err
	}
	if tools != nil {
		t.Errorf("a remote agent got a toolbox")
	}
	l := &agent.Loop{Agent: a, Model: m, Runner: &llmoutput.Runner{}, Schema: llmoutput.ContractSchema()}
	// The caller's context outlives the loop's deadline, as a step's does
	// (the margin to record the step).
	ctx, cancel := context.WithTimeout(context.Background(), within+5*time.Second)
	defer cancel()
	return l.Run(ctx, "Triage the alert: checkout-api p99 is 4s.", time.Now().Add(within))
}

// TestOpenClawRun runs an agent on the fake OpenClaw gateway through the
// tool loop: the signed handshake, the agent request as the gateway's
// schema allows it, events skipped, the result's text, model and usage.
func TestOpenClawRun(t *testing.T) {
	s := newOpenClaw(t, func(remotetest.Run) remotetest.Answer {
		return remotetest.Answer{Texts: []string{validAnswer}, Model: "claude-sonnet-4-5", Provider: "anthropic", InputTokens: 120, OutTokens: 30, Events: 3}
	})
	conv, err := runLoop(t, s.registry(t), openclawCall(), openclawAgent(s.gw.URL), 20*time.Second)
	if err != nil {
		t.Fatalf("run: %v (refusals %v)", err, s.gw.Refusals())
	}
	if conv.Output.Confidence != 0.9 || conv.Output.Summary != "checkout-api is saturated" || conv.Iterations != 1 {
		t.Errorf("output %+v, iterations %d", conv.Output, conv.Iterations)
	}
	if len(conv.Usage) != 1 || conv.Usage[0] != (agent.CallUsage{Provider: "anthropic", Model: "claude-sonnet-4-5", Calls: 1, InputTokens: 120, OutputTokens: 30}) {
		t.Errorf("usage %+v", conv.Usage)
	}
	runs := s.gw.Runs()
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	r := runs[0]
	if r.AgentID != "sre-triage" || r.SessionKey != "agent:sre-triage:pipeline:run-1:triage" || r.Message != "Triage the alert: checkout-api p99 is 4s." {
		t.Errorf("run %+v", r)
	}
	if r.Params["model"] != "anthropic/claude-opus-4-7" || r.Params["thinking"] != "low" {
		t.Errorf("overrides: model %v thinking %v", r.Params["model"], r.Params["thinking"])
	}
	if sys, _ := r.Params["extraSystemPrompt"].(string); !strings.Contains(sys, "confidence") {
		t.Errorf("extraSystemPrompt %q does not carry the answer's instruction", sys)
	}
	if to, _ := r.Params["timeout"].(float64); to < 1 || to > 20 {
		t.Errorf("timeout %v, want the seconds left (1..20)", r.Params["timeout"])
	}
	if k, _ := r.Params["idempotencyKey"].(string); !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(k) {
		t.Errorf("idempotencyKey %q", k)
	}
	if conv.Trace[0].Type != agent.EventText || !strings.Contains(conv.Trace[0].Content, "checkout-api") {
		t.Errorf("trace %+v", conv.Trace)
	}
}

// TestOpenClawReask checks that an answer that is not LLMOutput is asked
// again as a follow-up message in the same session: the gateway keeps the
// session's conversation, so only the feedback is sent.
func TestOpenClawReask(t *testing.T) {
	n := 0
	s := newOpenClaw(t, func(remotetest.Run) remotetest.Answer {
		n++
		if n == 1 {
			return remotetest.Answer{Texts: []string{"I think the service is fine."}, Model: "m", Provider: "anthropic", InputTokens: 10, OutTokens: 5}
		}
		return remotetest.Answer{Texts: []string{validAnswer}, Model: "m", Provider: "anthropic", InputTokens: 20, OutTokens: 7}
	})
	conv, err := runLoop(t, s.registry(t), openclawCall(), openclawAgent(s.gw.URL), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	runs := s.gw.Runs()
	if len(runs) != 2 || conv.Iterations != 2 {
		t.Fatalf("%d runs, %d iterations", len(runs), conv.Iterations)
	}
	if runs[1].SessionKey != runs[0].SessionKey || len(runs[1].History) != 1 || runs[1].History[0] != runs[0].Message {
		t.Errorf("the re-ask is not a follow-up in the same session: %+v", runs[1])
	}
	if strings.Contains(runs[1].Message, "Triage the alert") || !strings.Contains(strings.ToLower(runs[1].Message), "json") {
		t.Errorf("the follow-up is %q, want the feedback alone", runs[1].Message)
	}
	if conv.Tokens() != (llmoutput.Usage{InputTokens: 30, OutputTokens: 12}) {
		t.Errorf("tokens %+v", conv.Tokens())
	}
}

// TestOpenClawIdentityFromSecrets reads the two identity files from
// secrets, as the step function on AWS does.
func TestOpenClawIdentityFromSecrets(t *testing.T) {
	s := newOpenClaw(t, answerWith(validAnswer))
	reg, _ := newRegistry(t, Deps{Secrets: testSecretsWith(map[string]string{"OC_DEVICE": string(s.id.DeviceJSON), "OC_AUTH": string(s.id.DeviceAuthJSON)})})
	if _, err := runLoop(t, reg, openclawCall(), openclawAgent(s.gw.URL), 20*time.Second); err != nil {
		t.Fatalf("%v (refusals %v)", err, s.gw.Refusals())
	}
	// Missing secrets are a ConfigError naming them.
	reg, _ = newRegistry(t, Deps{Secrets: secretNone()})
	_, err := runLoop(t, reg, openclawCall(), openclawAgent(s.gw.URL), 5*time.Second)
	assertFault(t, err, fault.NameConfigError, "OC_DEVICE")
}

// TestOpenClawSignatureAge signs with the registry's clock: a signature
// inside the gateway's two minutes passes, one outside is refused.
func TestOpenClawSignatureAge(t *testing.T) {
	for _, tc := range []struct {
		name string
		skew time.Duration
		ok   bool
	}{
		{"fresh", 0, true},
		{"just inside the gateway's window", -2*time.Minute + 10*time.Second, true},
		{"just outside it", -2*time.Minute - 10*time.Second, false},
		{"from the future", 2*time.Minute + 10*time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newOpenClaw(t, answerWith(validAnswer))
			reg, _ := newRegistry(t, Deps{OpenClawIdentityFiles: true, Home: s.home, Now: func() time.Time { return time.Now().Add(tc.skew) }})
			_, err := runLoop(t, reg, openclawCall(), openclawAgent(s.gw.URL), 10*time.Second)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			assertFault(t, err, fault.NameConfigError, "device signature expired")
		})
	}
}

// TestOpenClawFailures maps each way a run can fail to its fault.
func TestOpenClawFailures(t *testing.T) {
	type setup struct {
		answer func(remotetest.Run) remotetest.Answer
		edit   func(t *testing.T, s *openclawSetup, call *Call, a *agent.Resolved)
	}
	fails := func(msg, code string) func(remotetest.Run) remotetest.Answer {
		return func(remotetest.Run) remotetest.Answer { return remotetest.Answer{Error: msg, Code: code} }
	}
	cases := []struct {
		name  string
		setup setup
		fault string
		msg   []string
	}{
		{"not configured", setup{edit: func(_ *testing.T, _ *openclawSetup, _ *Call, a *agent.Resolved) { a.Remote.URL = "" }},
			fault.NameConfigError, []string{"executors.openclaw.url"}},
		{"identity missing", setup{edit: func(_ *testing.T, _ *openclawSetup, _ *Call, a *agent.Resolved) { a.Remote.Identity = "~/nowhere" }},
			fault.NameConfigError, []string{"device.json not found", "executors.openclaw.identity"}},
		{"device id is not the key's", setup{edit: func(t *testing.T, s *openclawSetup, _ *Call, _ *agent.Resolved) {
			other := remotetest.NewIdentity(testToken)
			other.DeviceJSON = []byte(strings.Replace(string(other.DeviceJSON), other.DeviceID, s.id.DeviceID, 1))
			writeIdentity(t, s.home, other)
		}}, fault.NameConfigError, []string{"not the fingerprint"}},
		{"unpaired device", setup{edit: func(t *testing.T, s *openclawSetup, _ *Call, _ *agent.Resolved) {
			writeIdentity(t, s.home, remotetest.NewIdentity(testToken))
		}}, fault.NameConfigError, []string{"refused the device identity", "pairing required"}},
		{"wrong token", setup{edit: func(t *testing.T, s *openclawSetup, _ *Call, _ *agent.Resolved) {
			id := s.id
			id.DeviceAuthJSON = []byte(strings.ReplaceAll(string(id.DeviceAuthJSON), testToken, "tok-stale-000000"))
			writeIdentity(t, s.home, id)
		}}, fault.NameConfigError, []string{"gateway token mismatch"}},
		{"gateway starting", setup{edit: func(_ *testing.T, s *openclawSetup, _ *Call, _ *agent.Resolved) { s.gw.SetUnavailable(true) }},
			fault.NameExecutorUnavailable, []string{"cannot take the connection now"}},
		{"unknown agent", setup{edit: func(_ *testing.T, _ *openclawSetup, c *Call, a *agent.Resolved) {
			a.Profile.Name, c.Config["agent"], c.Config["session_key"] = "sre-nobody", "sre-nobody", "agent:sre-nobody:x"
		}}, fault.NameExecutorRejected, []string{"refused the request", "unknown agent id"}},
		{"session key of another agent", setup{edit: func(_ *testing.T, _ *openclawSetup, c *Call, _ *agent.Resolved) {
			c.Config["session_key"] = "agent:sre-remediator:x"
		}}, fault.NameConfigError, []string{`must start with "agent:sre-triage:"`}},
		{"run fails", setup{answer: fails("model provider overloaded", "")}, fault.NameExecutorUnavailable, []string{`agent "sre-triage" failed: model provider overloaded (UNAVAILABLE)`}},
		{"run refused by its code", setup{answer: fails("bad attachment", "INVALID_REQUEST")}, fault.NameExecutorRejected, []string{"bad attachment"}},
		{"run times out on the gateway", setup{answer: fails("agent timed out", "AGENT_TIMEOUT")}, fault.NameExecutorTimeout, []string{"agent timed out"}},
		{"the error echoes the token", setup{answer: fails("auth failed for token "+testToken, "INVALID_REQUEST")}, fault.NameExecutorRejected, []string{"[REDACTED]"}},
		{"connection dropped mid-run", setup{answer: func(remotetest.Run) remotetest.Answer { return remotetest.Answer{Drop: true} }},
			fault.NameExecutorUnavailable, []string{"broke while waiting for the agent's result"}},
		{"connection refused", setup{edit: func(_ *testing.T, _ *openclawSetup, _ *Call, a *agent.Resolved) { a.Remote.URL = closedURL(t) }},
			fault.NameExecutorUnavailable, []string{"cannot connect"}},
		{"HTTP 503 on upgrade", setup{edit: func(_ *testing.T, _ *openclawSetup, _ *Call, a *agent.Resolved) { a.Remote.URL = statusURL(t, 503) }},
			fault.NameExecutorUnavailable, []string{"HTTP 503"}},
		{"HTTP 401 on upgrade", setup{edit: func(_ *testing.T, _ *openclawSetup, _ *Call, a *agent.Resolved) { a.Remote.URL = statusURL(t, 401) }},
			fault.NameConfigError, []string{"HTTP 401", "credentials"}},
		{"HTTP 404 on upgrade", setup{edit: func(_ *testing.T, _ *openclawSetup, _ *Call, a *agent.Resolved) { a.Remote.URL = statusURL(t, 404) }},
			fault.NameConfigError, []string{"HTTP 404", "check the URL"}},
		{"not a gateway", setup{edit: func(_ *testing.T, _ *openclawSetup, _ *Call, a *agent.Resolved) {
			a.Remote.URL = silentURL(t, `{"type":"res","id":"x","ok":true}`)
		}},
			fault.NameExecutorUnavailable, []string{"before its challenge"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			answer := tc.setup.answer
			if answer == nil {
				answer = answerWith(validAnswer)
			}
			s := newOpenClaw(t, answer)
			call, a := openclawCall(), openclawAgent(s.gw.URL)
			if tc.setup.edit != nil {
				tc.setup.edit(t, &s, &call, a)
			}
			_, err := runLoop(t, s.registry(t), call, a, 10*time.Second)
			assertFault(t, err, tc.fault, tc.msg...)
		})
	}
}

// TestOpenClawGivesUp checks that a step's deadline ends a slow run: the
// loop reports the deadline and the gateway is asked to abort the run.
func TestOpenClawGivesUp(t *testing.T) {
	s := newOpenClaw(t, func(remotetest.Run) remotetest.Answer { return remotetest.Answer{Delay: time.Minute} })
	start := time.Now()
	_, err := runLoop(t, s.registry(t), openclawCall(), openclawAgent(s.gw.URL), 1500*time.Millisecond)
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
	if fault.Name(err) != fault.NameAgentDeadlineExceeded {
		t.Errorf("err %v, want the deadline", err)
	}
	runs := s.gw.Runs()
	waitFor(t, func() bool { return len(s.gw.Aborts()) == 1 })
	if len(runs) != 1 || s.gw.Aborts()[0] != runs[0].Params["idempotencyKey"] {
		t.Errorf("aborts %v for runs %+v", s.gw.Aborts(), runs)
	}
}

// TestSessionKeyBound checks the rendered session key's bound.
func TestSessionKeyBound(t *testing.T) {
	for _, n := range []int{MaxSessionKeyBytes - 1, MaxSessionKeyBytes, MaxSessionKeyBytes + 1} {
		key := "agent:sre-triage:" + strings.Repeat("k", n-len("agent:sre-triage:"))
		m := &remoteModel{reg: NewRegistry(Deps{}), call: Call{Step: "triage"}, agent: openclawAgent("ws://x")}
		_, err := m.request(context.Background(), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "go"}}}, settings.RemoteConfig{SessionKey: key})
		if (err != nil) != (n > MaxSessionKeyBytes) {
			t.Errorf("%d bytes: err %v", n, err)
		}
	}
}

// TestRemotePingDetectsSilence checks that a connection whose other side
// stopped answering (not even pings) is given up as dropped.
func TestRemotePingDetectsSilence(t *testing.T) {
	u := silentURL(t, `{"type":"event","event":"connect.challenge","payload":{"nonce":"n1"}}`)
	s := newOpenClaw(t, answerWith(validAnswer))
	reg, _ := newRegistry(t, Deps{OpenClawIdentityFiles: true, Home: s.home, RemotePing: 100 * time.Millisecond})
	start := time.Now()
	_, err := runLoop(t, reg, openclawCall(), openclawAgent(u), 10*time.Second)
	assertFault(t, err, fault.NameExecutorUnavailable, "no answer to a ping")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to notice", d)
	}
}

// gatewayAgent is an agent on the remote agent gateway at url.
func gatewayAgent(url string) *agent.Resolved {
	return &agent.Resolved{Profile: agent.Profile{Name: "sre-triage"}, ThinkingLevel: "high",
		Remote: &agent.Remote{Runtime: agent.RuntimeGateway, URL: url, Token: "${TOKEN}"}}
}

func gatewayCall() Call {
	return Call{Executor: Gateway, Step: "investigate", Timeout: 30 * time.Second, Config: map[string]any{
		"agent": "sre-triage", "session_key": "agent:sre-triage:pipeline:run-1:investigate", "model": "anthropic/claude-opus-4-7", "trace_max_chars": 40}}
}

// gatewayTrace is a run's trace as the reference gateway emits it.
func gatewayTrace() []map[string]any {
	return []map[string]any{
		{"type": "llm_call", "iteration": 1},
		{"type": "text", "content": "Checking the error rate."},
		{"type": "tool_call", "name": "grafana__query", "input": map[string]any{"expr": "rate(errors[5m])"}},
		{"type": "tool_result", "name": "grafana__query", "content": strings.Repeat("x", 40) + "… [truncated]", "is_error": false},
		{"type": "llm_call", "iteration": 2},
		{"type": "thinking", "content": "Should I close the ticket?"},
		{"type": "tool_call", "name": "jira__delete_issue", "input": map[string]any{"key": "OPS-1"}},
		{"type": "tool_denied", "name": "jira__delete_issue", "server": "jira", "rule_index": 0, "reason": "read only"},
		{"type": "llm_retry", "model": "x", "attempt": 1},
		{"type": "llm_call", "iteration": 3},
		{"type": "text", "content": validAnswer},
	}
}

// TestRemoteGatewayRun runs an agent on the fake remote agent gateway:
// the token, the agent request's fields, the trace_event frames turned
// into Stepline's trace, the agent's metadata.
func TestRemoteGatewayRun(t *testing.T) {
	gw := remotetest.NewGateway(t, testToken, []string{"sre-triage"}, func(remotetest.Run) remotetest.Answer {
		return remotetest.Answer{Texts: []string{validAnswer}, Model: "claude-sonnet-4-5", Provider: "anthropic", AgentVersion: "a1b2c3d4e5f6",
			InputTokens: 900, OutTokens: 80, Trace: gatewayTrace()}
	})
	reg, _ := newRegistry(t, Deps{})
	conv, err := runLoop(t, reg, gatewayCall(), gatewayAgent(gw.URL), 20*time.Second)
	if err != nil {
		t.Fatalf("%v (refusals %v)", err, gw.Refusals())
	}
	if conv.Version != "a1b2c3d4e5f6" || conv.Output.Confidence != 0.9 || conv.Tokens() != (llmoutput.Usage{InputTokens: 900, OutputTokens: 80}) {
		t.Errorf("version %q output %+v tokens %+v", conv.Version, conv.Output, conv.Tokens())
	}
	r := gw.Runs()[0]
	if r.Params["thinkingLevel"] != "high" || r.Params["model"] != "anthropic/claude-opus-4-7" || r.Params["traceToolResultMax"] != float64(40) {
		t.Errorf("params %v", r.Params)
	}
	if tp, _ := r.Params["traceparent"].(string); !regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`).MatchString(tp) {
		t.Errorf("traceparent %q", tp)
	}
	if !strings.HasPrefix(r.Message, "Triage the alert") || !strings.Contains(r.Message, "confidence") {
		t.Errorf("message %q: want the prompt, then the answer's instruction", r.Message)
	}
	type ev struct {
		Type, ID, Name string
		It             int
		Truncated      bool
	}
	var got []ev
	for _, e := range conv.Trace {
		got = append(got, ev{e.Type, e.ID, e.Name, e.Iteration, e.Truncated})
	}
	want := []ev{
		{"text", "", "", 1, false},
		{"tool_call", "call_1_1", "grafana.query", 1, false},
		{"tool_result", "call_1_1", "grafana.query", 1, true},
		{"tool_call", "call_2_2", "jira.delete_issue", 2, false},
		{"tool_denied", "call_2_2", "jira.delete_issue", 2, false},
		{"text", "", "", 3, true},
	}
	if len(got) != len(want) {
		t.Fatalf("trace %+v", conv.Trace)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if string(conv.Trace[1].Arguments) != `{"expr":"rate(errors[5m])"}` || conv.Trace[4].Reason != "read only" {
		t.Errorf("arguments %s reason %q", conv.Trace[1].Arguments, conv.Trace[4].Reason)
	}
	for _, f := range []string{agent.FlagToolDenied, agent.FlagToolResultTruncated} {
		if !strings.Contains(strings.Join(conv.Flags, ","), f) {
			t.Errorf("flags %v lack %s", conv.Flags, f)
		}
	}
}

// TestRemoteGatewayReask checks that the re-ask carries the task, the
// answer and the feedback: the gateway's sessions keep no conversation.
func TestRemoteGatewayReask(t *testing.T) {
	n := 0
	gw := remotetest.NewGateway(t, testToken, []string{"sre-triage"}, func(remotetest.Run) remotetest.Answer {
		n++
		text := validAnswer
		if n == 1 {
			text = `{"confidence": 7, "summary": "x", "next_step_context": ""}`
		}
		return remotetest.Answer{Texts: []string{text}, Model: "m", Provider: "anthropic", AgentVersion: "v" + string(rune('0'+n))}
	})
	reg, _ := newRegistry(t, Deps{})
	conv, err := runLoop(t, reg, gatewayCall(), gatewayAgent(gw.URL), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	runs := gw.Runs()
	if len(runs) != 2 || runs[0].SessionKey != runs[1].SessionKey {
		t.Fatalf("runs %+v", runs)
	}
	m := runs[1].Message
	if !strings.HasPrefix(m, runs[0].Message) || !strings.Contains(m, `"confidence": 7`) || !strings.Contains(m, "Your previous answer was") {
		t.Errorf("re-ask message %q", m)
	}
	if conv.Version != "v2" {
		t.Errorf("version %q, want the last run's", conv.Version)
	}
}

// TestRemoteGatewayFailures maps the gateway's refusals and failures.
func TestRemoteGatewayFailures(t *testing.T) {
	fails := func(msg string) func(remotetest.Run) remotetest.Answer {
		return func(remotetest.Run) remotetest.Answer { return remotetest.Answer{Error: msg} }
	}
	cases := []struct {
		name   string
		token  string
		agent  string
		answer func(remotetest.Run) remotetest.Answer
		fault  string
		msg    []string
	}{
		{"wrong token", "tok-other-00000000", "sre-triage", nil, fault.NameConfigError, []string{"refused the token: invalid operator token"}},
		{"unknown agent", testToken, "sre-nobody", nil, fault.NameExecutorRejected, []string{"refused the request: agent not found: sre-nobody"}},
		{"iteration limit", testToken, "sre-triage", fails("max iterations exceeded: 20"), fault.NameAgentIterationsExhausted, []string{"max iterations exceeded"}},
		{"internal error", testToken, "sre-triage", fails("internal error: boom"), fault.NameExecutorUnavailable, []string{"internal error: boom"}},
		{"every model failed", testToken, "sre-triage", fails("All models exhausted (a, b): 529"), fault.NameExecutorUnavailable, []string{"All models exhausted"}},
		{"another failure", testToken, "sre-triage", fails("provider rejected the request"), fault.NameExecutorRejected, []string{`agent "sre-triage" failed: provider rejected the request`}},
		{"the failure echoes the token", testToken, "sre-triage", fails("bad token " + testToken), fault.NameExecutorRejected, []string{"[REDACTED]"}},
		{"dropped mid-run", testToken, "sre-triage", func(remotetest.Run) remotetest.Answer { return remotetest.Answer{Drop: true} },
			fault.NameExecutorUnavailable, []string{"broke"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			answer := tc.answer
			if answer == nil {
				answer = answerWith(validAnswer)
			}
			gw := remotetest.NewGateway(t, tc.token, []string{"sre-triage"}, answer)
			reg, _ := newRegistry(t, Deps{})
			call, a := gatewayCall(), gatewayAgent(gw.URL)
			a.Profile.Name, call.Config["agent"], call.Config["session_key"] = tc.agent, tc.agent, "agent:"+tc.agent+":s"
			_, err := runLoop(t, reg, call, a, 10*time.Second)
			assertFault(t, err, tc.fault, tc.msg...)
		})
	}
}

// TestRemoteGatewayDisconnectCancels checks that the step giving up (its
// deadline) disconnects, and that the gateway cancels the run.
func TestRemoteGatewayDisconnectCancels(t *testing.T) {
	gw := remotetest.NewGateway(t, testToken, []string{"sre-triage"}, func(remotetest.Run) remotetest.Answer { return remotetest.Answer{Delay: time.Minute} })
	reg, _ := newRegistry(t, Deps{})
	_, err := runLoop(t, reg, gatewayCall(), gatewayAgent(gw.URL), 1500*time.Millisecond)
	if fault.Name(err) != fault.NameAgentDeadlineExceeded {
		t.Fatalf("err %v", err)
	}
	waitFor(t, func() bool { return gw.Cancelled() == 1 })
}

// TestTraceConverterBounds checks the trace's bounds: contents cut at
// the limit, and at most MaxRemoteTraceEvents events.
func TestTraceConverterBounds(t *testing.T) {
	for _, n := range []int{9, 10, 11} {
		tc := newTraceConverter(10)
		tc.add(json.RawMessage(`{"type":"text","content":"` + strings.Repeat("é", n) + `"}`))
		ev := tc.events[0]
		if ev.Truncated != (n > 10) || len([]rune(ev.Content)) != min(n, 10) || (n > 10 && ev.Chars != n) {
			t.Errorf("%d characters: %+v", n, ev)
		}
	}
	for _, n := range []int{MaxRemoteTraceEvents - 1, MaxRemoteTraceEvents, MaxRemoteTraceEvents + 1} {
		tc := newTraceConverter(10)
		for range n {
			tc.add(json.RawMessage(`{"type":"text","content":"x"}`))
		}
		if len(tc.events) != min(n, MaxRemoteTraceEvents) {
			t.Errorf("%d events kept of %d", len(tc.events), n)
		}
	}
}

// TestIdentityFileBound checks the identity files' bound.
func TestIdentityFileBound(t *testing.T) {
	id := remotetest.NewIdentity(testToken)
	for _, n := range []int{MaxIdentityFileBytes - 1, MaxIdentityFileBytes, MaxIdentityFileBytes + 1} {
		dir := t.TempDir()
		pad := n - len(id.DeviceJSON)
		device := string(id.DeviceJSON[:len(id.DeviceJSON)-1]) + `, "pad": "` + strings.Repeat("p", pad-len(`, "pad": ""`)) + `"}`
		if len(device) != n {
			t.Fatalf("built %d bytes, want %d", len(device), n)
		}
		os.WriteFile(filepath.Join(dir, DeviceFile), []byte(device), 0o600)
		os.WriteFile(filepath.Join(dir, DeviceAuthFile), id.DeviceAuthJSON, 0o600)
		_, err := readIdentityFile(dir, DeviceFile)
		if (err != nil) != (n > MaxIdentityFileBytes) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}

// TestOpenClawSignaturePayload pins the signed text, as OpenClaw's
// buildDeviceAuthPayloadV3 writes it.
func TestOpenClawSignaturePayload(t *testing.T) {
	got := OpenClawSignaturePayload("dev", "gateway-client", "backend", "operator", []string{"operator.read", "operator.write"}, 1737264000000, "tok", "n1", " Linux ", "")
	if want := "v3|dev|gateway-client|backend|operator|operator.read,operator.write|1737264000000|tok|n1|linux|"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func writeIdentity(t *testing.T, home string, id remotetest.Identity) {
	t.Helper()
	if err := id.WriteDir(filepath.Join(home, ".openclaw", "identity")); err != nil {
		t.Fatal(err)
	}
}

// closedURL is a ws URL nothing listens on.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "ws://" + addr + "/rpc"
}

// statusURL answers the WebSocket upgrade with an HTTP status.
func statusURL(t *testing.T, status int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", status)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// silentURL accepts the WebSocket, sends first, then neither reads nor
// writes again (pings go unanswered) until the test ends.
func silentURL(t *testing.T, first string) string {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		_ = c.Write(r.Context(), websocket.MessageText, []byte(first))
		<-stop
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Errorf("condition not met within 5s")
}
