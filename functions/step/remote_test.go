package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor/remotetest"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/task"
)

const (
	rieGatewayToken  = "tok-rie-gateway-7a6b5c4d3e2f"
	rieOpenClawToken = "tok-rie-openclaw-1f2e3d4c5b6a"
)

// remoteEvent is a step Task whose agent runs on a remote runtime, as the
// compiler writes it: the resolved agent names the runtime, the
// executor_config carries the session key to render.
func remoteEvent(t *testing.T, runID, executor, name string, a agent.Resolved) []byte {
	t.Helper()
	ev := map[string]any{
		"mode":     task.ModeStep,
		"pipeline": map[string]any{"name": "rie-remote", "stage": "production"},
		"trigger":  map[string]any{"source": "alertmanager", "labels": map[string]any{"service": "checkout-api"}},
		"usage":    map[string]any{},
		"attempt":  1,
		"run":      map[string]any{"id": runID, "started_at": "2026-11-29T12:00:00.000Z"},
		"step": map[string]any{
			"name": name, "executor": executor,
			"executor_config":      map[string]any{"agent": a.Profile.Name, "session_key": "agent:" + a.Profile.Name + ":pipeline:{{pipeline_run_id}}:{{current_step}}"},
			"prompt_template":      "Investigate {{ labels.service }}",
			"confidence_threshold": 0.75, "on_low_confidence": "escalate", "timeout_seconds": 60, "agent": a,
		},
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRemoteAgentsThroughEmulator runs an openclaw step and a remote
// gateway step in the real bootstrap under the Runtime Interface
// Emulator: the OpenClaw identity comes from Secrets Manager (the two
// files, as SECRET_REFS maps them), the gateway's token from the
// environment; the records in DynamoDB Local hold model, provider,
// tokens and the remote trace; no secret reaches the function's logs.
func TestRemoteAgentsThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t)
	id := remotetest.NewIdentity(rieOpenClawToken)
	oc := remotetest.NewOpenClaw(t, id, []string{"sre-triage"}, func(remotetest.Run) remotetest.Answer {
		return remotetest.Answer{Texts: []string{`{"confidence": 0.87, "summary": "checkout-api is saturated", "next_step_context": "", "action": "remediate"}`},
			Model: "claude-sonnet-4-5", Provider: "anthropic", InputTokens: 500, OutTokens: 60, Events: 2}
	})
	gw := remotetest.NewGateway(t, rieGatewayToken, []string{"sre-investigator"}, func(remotetest.Run) remotetest.Answer {
		return remotetest.Answer{Texts: []string{`{"confidence": 0.9, "summary": "error rate 0.31", "next_step_context": ""}`},
			Model: "gpt-4o", Provider: "openai", AgentVersion: "0a1b2c3d4e5f", InputTokens: 700, OutTokens: 90,
			Trace: []map[string]any{
				{"type": "llm_call", "iteration": 1},
				{"type": "tool_call", "name": "grafana__query", "input": map[string]any{"expr": "errors"}},
				{"type": "tool_result", "name": "grafana__query", "content": "error rate 0.31", "is_error": false},
				{"type": "llm_call", "iteration": 2},
				{"type": "text", "content": "done"},
			}}
	})
	sm := rietest.FakeSecretsManager(t, map[string]string{
		"stepline/openclaw-device":      string(id.DeviceJSON),
		"stepline/openclaw-device-auth": string(id.DeviceAuthJSON),
	})
	bin := rietest.Build(t, ".")
	e := rietest.Start(t, bin,
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"SECRET_REFS=OPENCLAW_DEVICE=secretsmanager:stepline/openclaw-device,OPENCLAW_DEVICE_AUTH=secretsmanager:stepline/openclaw-device-auth",
		"AGENT_GATEWAY_TOKEN="+rieGatewayToken,
	)
	st := dynamo.New(client, table)
	cases := []struct {
		runID, executor, step string
		agent                 agent.Resolved
		model, provider       string
		in, out               int64
		trace                 string
	}{
		{"run-rie-openclaw", "openclaw", "triage", agent.Resolved{Profile: agent.Profile{Name: "sre-triage"}, Remote: &agent.Remote{
			Runtime: agent.RuntimeOpenClaw, URL: oc.URL, Identity: "~/.openclaw/identity", Device: "${OPENCLAW_DEVICE}", DeviceAuth: "${OPENCLAW_DEVICE_AUTH}"}},
			"claude-sonnet-4-5", "anthropic", 500, 60, "text"},
		{"run-rie-gateway", "gateway", "investigate", agent.Resolved{Profile: agent.Profile{Name: "sre-investigator"}, Remote: &agent.Remote{
			Runtime: agent.RuntimeGateway, URL: gw.URL, Token: "${AGENT_GATEWAY_TOKEN}"}},
			"gpt-4o", "openai", 700, 90, "tool_call,tool_result,text"},
	}
	for _, c := range cases {
		res := e.Invoke(t, remoteEvent(t, c.runID, c.executor, c.step, c.agent))
		if res.ErrorType != "" {
			t.Fatalf("%s: %s: %s\n%s (refusals %v %v)", c.step, res.ErrorType, res.Message, e.Output(), oc.Refusals(), gw.Refusals())
		}
		var resp task.Response
		if err := json.Unmarshal(res.Body, &resp); err != nil || resp.Status != task.StatusCompleted {
			t.Fatalf("%s: %v %s", c.step, err, res.Body)
		}
		steps, err := st.ListSteps(context.Background(), c.runID)
		if err != nil || len(steps) != 1 {
			t.Fatalf("%s: %d records, %v", c.step, len(steps), err)
		}
		rec := steps[0]
		if rec.Agent != c.agent.Profile.Name || rec.Model != c.model || rec.Provider != c.provider || rec.InputTokens != c.in || rec.OutputTokens != c.out || rec.CostUSD == nil {
			t.Errorf("%s record: agent %q model %q provider %q tokens %d/%d cost %v", c.step, rec.Agent, rec.Model, rec.Provider, rec.InputTokens, rec.OutputTokens, rec.CostUSD)
		}
		var trace []agent.Event
		_ = json.Unmarshal(rec.Trace, &trace)
		var types []string
		for _, ev := range trace {
			types = append(types, ev.Type)
		}
		if strings.Join(types, ",") != c.trace {
			t.Errorf("%s trace %s", c.step, rec.Trace)
		}
	}
	if r := oc.Runs(); len(r) != 1 || r[0].SessionKey != "agent:sre-triage:pipeline:run-rie-openclaw:triage" || r[0].Message != "Investigate checkout-api" {
		t.Errorf("openclaw runs %+v", r)
	}
	if tp, _ := gw.Runs()[0].Params["traceparent"].(string); !regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$`).MatchString(tp) {
		t.Errorf("traceparent %q", tp)
	}
	for _, s := range []string{rieGatewayToken, rieOpenClawToken, "PRIVATE KEY"} {
		if strings.Contains(e.Output(), s) {
			t.Errorf("the function's logs hold %q", s)
		}
	}
}
