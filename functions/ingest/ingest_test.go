package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/functions/internal/states"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/catalog"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

const testToken = "rie-webhook-token-7f3a9c"

// testNames is the naming rule of the test deployment: testMachines are
// its state machines.
var testNames = awsenv.StateMachines{Partition: "aws", Region: "us-east-1", Account: "123456789012", Prefix: "stepline"}

var testMachines = map[string]string{
	"rie-orders": "arn:aws:states:us-east-1:123456789012:stateMachine:stepline-rie-orders",
	"rie-alerts": "arn:aws:states:us-east-1:123456789012:stateMachine:stepline-rie-alerts",
	"rie-drafts": "arn:aws:states:us-east-1:123456789012:stateMachine:stepline-rie-drafts",
}

// fakeStarts records StartExecution calls and answers err when set.
type fakeStarts struct {
	mu    sync.Mutex
	calls []states.Execution
	err   error
}

func (f *fakeStarts) StartExecution(_ context.Context, x states.Execution) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, x)
	if f.err != nil {
		return "", f.err
	}
	return "arn:aws:states:us-east-1:123456789012:execution:x:" + x.Name, nil
}

func (f *fakeStarts) started() []states.Execution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]states.Execution(nil), f.calls...)
}

type env struct {
	h      *handler
	starts *fakeStarts
	store  *sqlite.Store
}

func newEnv(t *testing.T) *env {
	t.Helper()
	files := bundled(t)
	ps, err := catalog.Pipelines(files)
	if err != nil {
		t.Fatal(err)
	}
	router, err := inbound.NewRouter(ps)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	starts := &fakeStarts{}
	start := starter{sfn: starts, machines: testMachines}
	log := slog.New(slog.DiscardHandler)
	webhooks, err := inbound.New(inbound.Config{Router: router, Store: st, Starter: start, Tokens: inbound.Tokens{"": testToken}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	triggers, err := inbound.New(inbound.Config{Router: router, Store: st, Starter: start, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := newDeployed(files, ps)
	if err != nil {
		t.Fatal(err)
	}
	return &env{h: &handler{webhooks: webhooks, events: triggers, runs: st, start: start, deployed: dep, log: log}, starts: starts, store: st}
}

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "lambda", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func apiRequest(t *testing.T, name string, edit func(*events.APIGatewayV2HTTPRequest)) json.RawMessage {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(readEvent(t, name), &ev); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&ev)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHandlerOfBundles builds the handler of the bundled test pipelines:
// in file-name order, each with its state machine and its file's source;
// a model that does not decode, or a list of files of another length
// than the pipelines, is an error naming the file.
func TestHandlerOfBundles(t *testing.T) {
	e := &environment{names: testNames, runs: newEnv(t).store, sfn: &fakeStarts{}, tokens: inbound.Tokens{"": testToken}, log: slog.New(slog.DiscardHandler)}
	files := bundled(t)
	h, err := e.handler(files)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range h.deployed.pipelines {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "rie-orders,rie-alerts,rie-drafts" {
		t.Errorf("pipelines %v, want the files' order", names)
	}
	if !reflect.DeepEqual(h.start.machines, testMachines) {
		t.Errorf("machines = %v, want %v", h.start.machines, testMachines)
	}
	for i, f := range files {
		if src := h.deployed.sources[names[i]]; src != f.Source || src == "" {
			t.Errorf("source of %s: %q, want its file's", names[i], src)
		}
	}

	bad := append(slices.Clone(files), catalog.File{Name: "40-broken.yaml", Model: json.RawMessage(`{"pipeline": {"name": "broken", "steps": [{"name": "a"}]}, "step_kinds": ["loop"]}`)})
	if _, err := e.handler(bad); err == nil || !strings.Contains(err.Error(), `pipeline file 40-broken.yaml: pipeline model "broken": steps[0]: unknown kind "loop"`) {
		t.Errorf("a model that does not decode: %v", err)
	}
	twice := append(slices.Clone(files), catalog.File{Name: "50-again.yaml", Model: files[0].Model})
	if _, err := e.handler(twice); err == nil || !strings.Contains(err.Error(), `pipeline "rie-orders" is defined twice (again in 50-again.yaml)`) {
		t.Errorf("a pipeline in two files: %v", err)
	}
	if _, err := newDeployed(files[:2], nil); err == nil {
		t.Error("newDeployed took 2 files for no pipeline")
	}
}

// decodeResponse reads an HTTP API answer.
func decodeResponse(t *testing.T, v any) (int, map[string]any) {
	t.Helper()
	resp, ok := v.(events.APIGatewayV2HTTPResponse)
	if !ok {
		t.Fatalf("answer %T, want an HTTP API response", v)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatalf("body %q: %v", resp.Body, err)
	}
	if resp.Headers["Content-Type"] != "application/json" {
		t.Errorf("Content-Type %q", resp.Headers["Content-Type"])
	}
	return resp.StatusCode, body
}

func TestWebhook(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tokenless := func(ev *events.APIGatewayV2HTTPRequest) { delete(ev.Headers, "authorization") }
	tests := []struct {
		name       string
		event      json.RawMessage
		wantStatus int
		want       map[string]string // fields of the answer
		wantStarts int               // executions started so far
	}{
		{name: "accepted", event: apiRequest(t, "apigw-webhook-generic.json", nil), wantStatus: 202,
			want: map[string]string{"status": "accepted", "pipeline": "rie-orders", "source": "generic"}, wantStarts: 1},
		{name: "the same event again is deduplicated", event: apiRequest(t, "apigw-webhook-generic.json", nil), wantStatus: 202,
			want: map[string]string{"status": "deduplicated", "pipeline": "rie-orders"}, wantStarts: 1},
		{name: "source from the query, body in base64", event: apiRequest(t, "apigw-webhook-generic.json", func(ev *events.APIGatewayV2HTTPRequest) {
			delete(ev.Headers, "x-pipeline-source")
			ev.RawQueryString = "source=generic"
			ev.QueryStringParameters = map[string]string{"source": "generic"}
			ev.Body = base64.StdEncoding.EncodeToString([]byte(`{"event": "order.created", "summary": "Order 1043", "idempotency_key": "order-1043"}`))
			ev.IsBase64Encoded = true
		}), wantStatus: 202, want: map[string]string{"status": "accepted", "summary": "Order 1043"}, wantStarts: 2},
		{name: "no token", event: apiRequest(t, "apigw-webhook-generic.json", tokenless), wantStatus: 401, wantStarts: 2},
		{name: "wrong token", event: apiRequest(t, "apigw-webhook-generic.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Headers["authorization"] = "Bearer guessed"
		}), wantStatus: 401, wantStarts: 2},
		{name: "no source", event: apiRequest(t, "apigw-webhook-generic.json", func(ev *events.APIGatewayV2HTTPRequest) {
			delete(ev.Headers, "x-pipeline-source")
		}), wantStatus: 400, wantStarts: 2},
		{name: "no pipeline matches", event: apiRequest(t, "apigw-webhook-generic.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body = `{"event": "order.cancelled", "idempotency_key": "order-1042"}`
		}), wantStatus: 422, wantStarts: 2},
		{name: "testing pipeline is skipped", event: apiRequest(t, "apigw-webhook-generic.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body = `{"event": "draft.created", "summary": "a draft"}`
		}), wantStatus: 202, want: map[string]string{"status": "skipped_testing", "pipeline": "rie-drafts"}, wantStarts: 2},
		{name: "GET is not allowed", event: apiRequest(t, "apigw-webhook-generic.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RequestContext.HTTP.Method = "GET"
		}), wantStatus: 405, wantStarts: 2},
		{name: "unknown path", event: apiRequest(t, "apigw-webhook-generic.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RawPath, ev.RouteKey = "/hooks", "$default"
		}), wantStatus: 404, wantStarts: 2},
		{name: "the route decides, whatever the stage adds to the path", event: apiRequest(t, "apigw-webhook-generic.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RawPath = "/prod/webhook"
			ev.Body = `{"event": "order.created", "summary": "Order 1044", "idempotency_key": "order-1044"}`
		}), wantStatus: 202, want: map[string]string{"status": "accepted"}, wantStarts: 3},
		{name: "manual run of a testing pipeline", event: apiRequest(t, "apigw-pipeline-run.json", nil), wantStatus: 202,
			want: map[string]string{"status": "accepted", "pipeline": "rie-drafts", "source": "manual"}, wantStarts: 4},
		{name: "manual run of an unknown pipeline", event: apiRequest(t, "apigw-pipeline-run.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RawPath, ev.PathParameters = "/pipelines/nope/runs", map[string]string{"name": "nope"}
		}), wantStatus: 404, wantStarts: 4},
		{name: "manual run named by the path alone", event: apiRequest(t, "apigw-pipeline-run.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RawPath, ev.PathParameters = "/pipelines/rie-orders/runs", nil
		}), wantStatus: 202, want: map[string]string{"status": "accepted", "pipeline": "rie-orders"}, wantStarts: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.h.Handle(ctx, tc.event)
			if err != nil {
				t.Fatal(err)
			}
			status, body := decodeResponse(t, out)
			if status != tc.wantStatus {
				t.Errorf("status %d %v, want %d", status, body, tc.wantStatus)
			}
			if status >= 400 && body["error"] == "" {
				t.Errorf("no error message: %v", body)
			}
			for k, v := range tc.want {
				if body[k] != v {
					t.Errorf("%s = %v, want %q", k, body[k], v)
				}
			}
			if got := len(e.starts.started()); got != tc.wantStarts {
				t.Errorf("%d executions started, want %d", got, tc.wantStarts)
			}
		})
	}

	// The first execution: named after the run, input {"trigger": ...}.
	first := e.starts.started()[0]
	var input struct {
		Trigger inbound.Context `json:"trigger"`
	}
	if err := json.Unmarshal([]byte(first.Input), &input); err != nil {
		t.Fatal(err)
	}
	if first.StateMachineARN != testMachines["rie-orders"] || input.Trigger.Fingerprint != "order-1042" ||
		input.Trigger.Labels["event"] != "order.created" || input.Trigger.Metadata["order_id"] != "1042" {
		t.Errorf("StartExecution %s %s %s", first.StateMachineARN, first.Name, first.Input)
	}
	run, err := e.store.GetRun(ctx, first.Name)
	if err != nil || run.Status != store.RunRunning || run.Pipeline != "rie-orders" || run.Fingerprint != "order-1042" {
		t.Errorf("run record %+v, %v", run, err)
	}
}

func TestStartFailure(t *testing.T) {
	e := newEnv(t)
	e.starts.err = errors.New("AccessDeniedException: not authorized to perform states:StartExecution")
	out, err := e.h.Handle(context.Background(), apiRequest(t, "apigw-webhook-generic.json", nil))
	if err != nil {
		t.Fatal(err)
	}
	status, body := decodeResponse(t, out)
	if status != 500 || strings.Contains(body["error"].(string), "AccessDenied") || body["request_id"] != "Cq3xKhq2joEEMwA=" {
		t.Errorf("answer %d %v", status, body)
	}
	runs, err := e.store.ListRuns(context.Background(), store.RunFilter{})
	if err != nil || len(runs) != 1 || runs[0].Status != store.RunFailed || !strings.Contains(runs[0].Reason, "AccessDenied") {
		t.Errorf("runs %+v, %v: want one failed run saying why", runs, err)
	}
}

func TestTriggerEvents(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	base := readEvent(t, "eventbridge-trigger-ingest.json")
	edit := func(f func(ev map[string]any)) json.RawMessage {
		var ev map[string]any
		if err := json.Unmarshal(base, &ev); err != nil {
			t.Fatal(err)
		}
		f(ev)
		b, _ := json.Marshal(ev)
		return b
	}
	trig := func(ev map[string]any) map[string]any { return ev["trigger"].(map[string]any) }
	tests := []struct {
		name         string
		event        json.RawMessage
		wantStatus   string
		wantPipeline string
		wantStarts   int
		wantErr      bool
	}{
		{name: "trigger.match holds", event: base, wantStatus: inbound.StatusAccepted, wantPipeline: "rie-alerts", wantStarts: 1},
		{name: "the same alert is deduplicated", event: base, wantStatus: inbound.StatusDeduplicated, wantPipeline: "rie-alerts", wantStarts: 1},
		{name: "the regex refuses it", event: edit(func(ev map[string]any) {
			trig(ev)["summary"] = "disk full"
			trig(ev)["fingerprint"] = "other"
		}), wantStatus: StatusNoMatch, wantPipeline: "rie-alerts", wantStarts: 1},
		{name: "a pipeline this function does not know", event: edit(func(ev map[string]any) { ev["pipeline"] = "elsewhere" }),
			wantStatus: StatusRefused, wantPipeline: "elsewhere", wantStarts: 1},
		{name: "an event naming its pipeline", event: edit(func(ev map[string]any) {
			delete(ev, "pipeline")
			trig(ev)["pipeline"] = "rie-orders"
			trig(ev)["fingerprint"] = "named-1"
		}), wantStatus: inbound.StatusAccepted, wantPipeline: "rie-orders", wantStarts: 2},
		{name: "naming a testing pipeline is gated", event: edit(func(ev map[string]any) {
			delete(ev, "pipeline")
			trig(ev)["pipeline"] = "rie-drafts"
		}), wantStatus: inbound.StatusSkippedTesting, wantPipeline: "rie-drafts", wantStarts: 2},
		{name: "no pipeline at all", event: edit(func(ev map[string]any) { delete(ev, "pipeline") }), wantStatus: StatusRefused, wantStarts: 2},
		{name: "a trigger that is not an object", event: edit(func(ev map[string]any) { ev["trigger"] = "text" }),
			wantStatus: StatusRefused, wantPipeline: "rie-alerts", wantStarts: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.h.Handle(ctx, tc.event)
			if err != nil {
				t.Fatal(err)
			}
			res, ok := out.(triggerResult)
			if !ok {
				t.Fatalf("answer %T", out)
			}
			if res.Status != tc.wantStatus || res.Pipeline != tc.wantPipeline {
				t.Errorf("result %+v, want %s of %q", res, tc.wantStatus, tc.wantPipeline)
			}
			if got := len(e.starts.started()); got != tc.wantStarts {
				t.Errorf("%d executions started, want %d", got, tc.wantStarts)
			}
		})
	}
	var input struct {
		Trigger inbound.Context `json:"trigger"`
	}
	first := e.starts.started()[0]
	if err := json.Unmarshal([]byte(first.Input), &input); err != nil {
		t.Fatal(err)
	}
	c := input.Trigger
	if first.StateMachineARN != testMachines["rie-alerts"] || c.Source != "alertmanager" || c.Severity != "critical" ||
		c.Fingerprint != "5f1c2a9e7d3b4c10:firing" || c.Labels["service"] != "checkout-api" || c.Metadata["receiver"] != "stepline" ||
		c.Pipeline != "rie-alerts" || c.Team != "checkout" || !c.ReceivedAt.Equal(time.Date(2026, 11, 29, 17, 52, 3, 0, time.UTC)) {
		t.Errorf("trigger %s: the normalized event must arrive as it was sent, team and time included", first.Input)
	}

	// A failed start may succeed when retried: the error goes back to
	// Lambda, which retries the invocation.
	e.starts.err = errors.New("ServiceUnavailable")
	if _, err := e.h.Handle(ctx, edit(func(ev map[string]any) { trig(ev)["fingerprint"] = "retry-me" })); err == nil {
		t.Error("a failed start was not returned as an error")
	}
}

func TestUnknownEvent(t *testing.T) {
	e := newEnv(t)
	for _, ev := range []string{`{"detail-type": "Scheduled Event"}`, `[]`, `"x"`} {
		if _, err := e.h.Handle(context.Background(), json.RawMessage(ev)); err == nil {
			t.Errorf("%s: no error", ev)
		}
	}
}
