package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/task"
)

// trustModel speaks the OpenAI chat-completions format for an
// investigator and its judge. The investigator (a request with tools)
// calls grafana's query once, then answers at 0.86 or, for a prompt
// holding "verify", 0.9. The judge (no tools) answers the G its task
// names ("G=0.5"), or fails with 503 for "G=fail".
func trustModel(t *testing.T) *httptest.Server {
	t.Helper()
	gRE := regexp.MustCompile(`G=([0-9.]+|fail)`)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []map[string]any `json:"messages"`
			Tools    []any            `json:"tools"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		if r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, `{"error": {"message": "no key"}}`, http.StatusUnauthorized)
			return
		}
		answer := func(content string) {
			c, _ := json.Marshal(content)
			fmt.Fprintf(w, `{"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10}}`, c)
		}
		last := req.Messages[len(req.Messages)-1]
		switch {
		case len(req.Tools) == 0 && strings.Contains(string(body), "Judge whether"):
			m := gRE.FindStringSubmatch(string(body))
			if m == nil || m[1] == "fail" {
				http.Error(w, `{"error": {"message": "overloaded"}}`, http.StatusServiceUnavailable)
				return
			}
			answer(`{"confidence": ` + m[1] + `, "summary": "judged", "next_step_context": "", "reasoning": {"claims": [{"claim": "error rate", "supported": true, "evidence": "0.31"}]}}`)
		case len(req.Tools) == 0 && strings.Contains(string(body), "independent opinion"):
			answer(`{"confidence": 0.55, "summary": "doubtful", "next_step_context": ""}`)
		case last["role"] != "tool" && len(req.Tools) > 0:
			fmt.Fprint(w, `{"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"grafana__query","arguments":"{\"expr\":\"errors\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":10}}`)
		case len(req.Tools) > 0:
			answer(`{"confidence": 0.86, "summary": "the error rate is 0.31", "next_step_context": ""}`)
		default:
			answer(`{"confidence": 0.86, "summary": "no tools, an answer from memory", "next_step_context": ""}`)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// checkTarget answers webhook checks: /ok 200 {"pool": 10}, /down 503.
func checkTarget(t *testing.T) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer check-secret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, `{"pool": 10}`)
		default:
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// trustEvent is a step Task of an agent step (withAgent) or a plain
// gateway step, with the trust blocks given, as the compiler writes it.
func trustEvent(t *testing.T, mode, runID, prompt string, withAgent bool, modelURL, mcpURL string, extra map[string]any) []byte {
	t.Helper()
	endpoint := agent.Endpoint{Provider: "openai", API: agent.APIGateway, Model: "gpt-4o-mini", BaseURL: modelURL, APIKey: "${MODEL_API_KEY}"}
	step := map[string]any{
		"name": "investigate", "executor": "gateway", "prompt_template": prompt,
		"confidence_threshold": 0.7, "on_low_confidence": "escalate", "timeout_seconds": 60,
		"executor_config": map[string]any{"base_url": modelURL, "api_key": "${MODEL_API_KEY}", "model": "gpt-4o-mini"},
	}
	if withAgent {
		step["executor_config"] = map[string]any{"agent": "sre-triage"}
		step["agent"] = agent.Resolved{
			Profile: agent.Profile{Name: "sre-triage", Version: "v-test", Soul: "You are an SRE.", Model: "openai/gpt-4o-mini", Tools: []agent.ToolGrant{{Server: "grafana"}}},
			Servers: map[string]agent.Server{"grafana": {Name: "grafana", URL: mcpURL}},
			Policy:  agent.Policy{Default: agent.Allow},
			Models:  []agent.Endpoint{endpoint},
		}
	}
	for k, v := range extra {
		step[k] = v
	}
	ev := map[string]any{
		"mode":     mode,
		"pipeline": map[string]any{"name": "rie-trust", "stage": "production", "run_ended_error": true},
		"trigger":  map[string]any{"source": "alertmanager", "labels": map[string]any{"service": "checkout-api"}},
		"usage":    map[string]any{},
		"attempt":  1,
		"run":      map[string]any{"id": runID, "started_at": "2026-11-29T12:00:00.000Z"},
		"step":     step,
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func judgeBlock(modelURL string, enforce bool) map[string]any {
	return map[string]any{"agent": "grounding-judge", "executor": "gateway", "timeout_seconds": 30, "enforce": enforce, "max_trace_chars": 1500,
		"judge": agent.Resolved{
			Profile: agent.Profile{Name: "grounding-judge", Version: "v-judge", Soul: "You judge.", Model: "openai/gpt-4o-mini"},
			Policy:  agent.Policy{Default: agent.Deny},
			Models:  []agent.Endpoint{{Provider: "openai", API: agent.APIGateway, Model: "gpt-4o-mini", BaseURL: modelURL, APIKey: "${MODEL_API_KEY}"}},
		}}
}

func webhookCheckConfig(name, url, expect string) map[string]any {
	return map[string]any{"name": name, "type": "webhook", "url": url, "method": "POST", "expect": expect, "timeout_seconds": 5,
		"headers": map[string]any{"Authorization": "Bearer ${CHECK_TOKEN}"}, "payload": map[string]any{"claim": "{{ output.summary }}"}}
}

// TestTrustThroughEmulator runs steps with a grounding judge and
// deterministic checks in the real step bootstrap under the Runtime
// Interface Emulator, records in DynamoDB Local: each case's answer, its
// record's status and combined trust, and its signals; then a human
// check's pause, approval and decision, the waiting record replaced by
// the finished one in DynamoDB.
func TestTrustThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t)
	mcpSrv, _ := mcpServer(t)
	model := trustModel(t)
	target := checkTarget(t)
	bin := rietest.Build(t, ".")
	e := rietest.Start(t, bin,
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"MODEL_API_KEY=test-key", "CHECK_TOKEN=check-secret",
	)
	st := dynamo.New(client, table)
	modelURL := model.URL + "/v1"
	veto := map[string]any{"executor": "gateway", "executor_config": map[string]any{"base_url": modelURL, "api_key": "${MODEL_API_KEY}"},
		"mode": "independent", "combination_strategy": "veto", "veto_floor": 0.6, "trigger": map[string]any{"always": true}}
	yes, no := true, false
	cases := []struct {
		name     string
		prompt   string
		agent    bool
		extra    map[string]any
		status   string
		combined float64
		g        *float64
		d        *bool
		flag     string
	}{
		{"G enforced below the threshold", "Investigate G=0.5", true, map[string]any{"grounding": judgeBlock(modelURL, true)},
			task.StatusEscalated, 0.5, ptrF(0.5), nil, ""},
		{"G enforced above the threshold", "Investigate G=0.8", true, map[string]any{"grounding": judgeBlock(modelURL, true)},
			task.StatusCompleted, 0.8, ptrF(0.8), nil, ""},
		{"G null: no trace", "Investigate G=0.1", false, map[string]any{"grounding": judgeBlock(modelURL, true)},
			task.StatusCompleted, 0.86, nil, nil, ""},
		{"G soft-failed", "Investigate G=fail", true, map[string]any{"grounding": judgeBlock(modelURL, true)},
			task.StatusCompleted, 0.86, nil, nil, "grounding_failed"},
		{"D passed", "Investigate", true, map[string]any{"deterministic_checks": []any{webhookCheckConfig("pool", target.URL+"/ok", "response.body.pool < 50")}},
			task.StatusCompleted, 0.86, nil, &yes, ""},
		{"D failed", "Investigate", true, map[string]any{"deterministic_checks": []any{webhookCheckConfig("pool", target.URL+"/down", "response.status_code < 400")}},
			task.StatusEscalated, 0, nil, &no, "deterministic_check_failed"},
		{"D errored", "Investigate", true, map[string]any{"deterministic_checks": []any{webhookCheckConfig("pool", "http://127.0.0.1:1/ok", "response.status_code < 400")}},
			task.StatusEscalated, 0, nil, &no, "deterministic_check_failed"},
		{"veto, G and D", "Investigate G=0.52 for an independent opinion", true, map[string]any{"confidence_threshold": 0.5, "verifier": veto,
			"grounding": judgeBlock(modelURL, true), "deterministic_checks": []any{webhookCheckConfig("pool", target.URL+"/ok", "response.body.pool < 50")}},
			task.StatusCompleted, 0.52, ptrF(0.52), &yes, ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runID := fmt.Sprintf("run-rie-trust-%d", i)
			resp := answer(t, e, e.Invoke(t, trustEvent(t, task.ModeStep, runID, c.prompt, c.agent, modelURL, mcpSrv.URL, c.extra)))
			recs, err := st.ListSteps(context.Background(), runID)
			if err != nil || len(recs) != 1 {
				t.Fatalf("%d records, %v", len(recs), err)
			}
			rec := recs[0]
			rep := rec.Trust
			if resp.Status != c.status || string(rec.Status) != c.status || rep == nil || rep.CombinedTrust != c.combined {
				t.Fatalf("status %s / %s, report %+v; want %s %v (%s)", resp.Status, rec.Status, rep, c.status, c.combined, resp.Reason)
			}
			if !sameF(rep.Signals.G, c.g) || !sameB(rep.Signals.D, c.d) || rep.Signals.C != nil {
				t.Errorf("signals %+v", rep.Signals)
			}
			if c.flag != "" && !strings.Contains(strings.Join(rec.Flags, ","), c.flag) {
				t.Errorf("flags %v lack %s", rec.Flags, c.flag)
			}
		})
	}

	// A human check: the step pauses, its record waits; the approval is
	// recorded under the check's name; the decision finishes the record.
	for _, d := range []struct {
		decision, status, detail string
		combined                 float64
	}{{task.Approve, task.StatusCompleted, "approved by lead", 0.86}, {task.Reject, task.StatusEscalated, "rejected by lead", 0}} {
		runID := "run-rie-human-check-" + d.decision
		checks := map[string]any{"deterministic_checks": []any{
			webhookCheckConfig("pool", target.URL+"/ok", "response.body.pool < 50"),
			map[string]any{"name": "signoff", "type": "human", "timeout_seconds": 600, "message": "Right? {{ output.summary }}"},
		}}
		res := e.Invoke(t, trustEvent(t, task.ModeStep, runID, "Investigate", true, modelURL, mcpSrv.URL, checks))
		var paused task.Response
		if err := json.Unmarshal(res.Body, &paused); err != nil || paused.Status != task.StatusCheck || paused.Check == nil || paused.Check.Name != "signoff" {
			t.Fatalf("paused %s %+v (%v): %s", paused.Status, paused.Check, err, res.Body)
		}
		recs, _ := st.ListSteps(context.Background(), runID)
		if len(recs) != 1 || recs[0].Status != store.StepWaiting {
			t.Fatalf("waiting record: %+v", recs)
		}
		approval := withFields(t, trustEvent(t, task.ModeApproval, runID, "Investigate", true, modelURL, mcpSrv.URL, checks),
			map[string]any{"task_token": "token-" + d.decision, "check": paused.Check, "steps": map[string]any{"investigate": paused.Output}})
		if res := e.Invoke(t, approval); res.ErrorType != "" {
			t.Fatalf("approval: %s %s", res.ErrorType, res.Message)
		}
		final := withFields(t, trustEvent(t, task.ModeCheck, runID, "Investigate", true, modelURL, mcpSrv.URL, checks),
			map[string]any{"check": paused.Check, "decision": task.Decision{Decision: d.decision, By: "lead"}, "usage": paused.Usage})
		if resp := answer(t, e, e.Invoke(t, final)); resp.Status != d.status {
			t.Fatalf("%s: %s, want %s", d.decision, resp.Status, d.status)
		}
		recs, _ = st.ListSteps(context.Background(), runID)
		if len(recs) != 1 || string(recs[0].Status) != d.status || recs[0].Trust == nil || len(recs[0].Trust.DeterministicChecks) != 2 {
			t.Fatalf("%s: records %+v", d.decision, recs)
		}
		if rep := recs[0].Trust; rep.CombinedTrust != d.combined || rep.DeterministicChecks[1].Detail != d.detail {
			t.Errorf("%s: combined trust %v, want %v; human check %+v", d.decision, rep.CombinedTrust, d.combined, rep.DeterministicChecks[1])
		}
	}
	if out := e.Output(); strings.Contains(out, "test-key") || strings.Contains(out, "check-secret") {
		t.Error("a secret appears in the function's logs")
	}
}

// withFields sets top-level fields of an event.
func withFields(t *testing.T, ev []byte, fields map[string]any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptrF(v float64) *float64 { return &v }

func sameF(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func sameB(a, b *bool) bool    { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
