package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/task"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dynamotest.Stop()
	os.Exit(code)
}

// fakeModel speaks the OpenAI chat-completions wire format; the prompt
// says which answer to give.
func fakeModel(t *testing.T) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusUnauthorized)
			return
		}
		var content string
		switch s := string(body); {
		case strings.Contains(s, "case completed"):
			content = `{"confidence": 0.91, "summary": "checkout-api is saturated", "next_step_context": "restart it", "action": "restart"}`
		case strings.Contains(s, "case low"):
			content = `{"confidence": 0.4, "summary": "not sure what is wrong", "next_step_context": ""}`
		case strings.Contains(s, "case stop"):
			content = `{"confidence": 0.95, "summary": "already resolved", "next_step_context": "", "proceed": false, "proceed_reason": "the alert resolved itself"}`
		default:
			http.Error(w, `{"error": {"message": "overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
		reply, _ := json.Marshal(content)
		fmt.Fprintf(w, `{"id": "c1", "model": "gpt-4o-mini", "choices": [{"index": 0, "message": {"role": "assistant", "content": %s}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 120, "completion_tokens": 40}}`, reply)
	}))
}

// TestBootstrapThroughEmulator invokes the real step bootstrap through the
// Runtime Interface Emulator with the events in events/lambda and checks
// the answers and the records in DynamoDB Local.
func TestBootstrapThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t)
	model := fakeModel(t)
	defer model.Close()
	bin := rietest.Build(t, ".")
	e := rietest.Start(t, bin,
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"MODEL_BASE_URL="+model.URL+"/v1", "MODEL_API_KEY=test-key",
	)
	// current: the event as a definition compiled now sends it, which
	// catches Stepline.RunEnded ($pipeline.run_ended_error), under a run
	// of its own; the events as they are stand for definitions compiled
	// before, which get every answer as the result.
	cases := []struct {
		event     string
		current   bool
		status    string
		errorType string
	}{
		{"step-completed.json", true, task.StatusCompleted, ""},
		{"step-low-confidence.json", true, task.StatusEscalated, fault.NameRunEnded},
		{"step-stop.json", true, task.StatusStopped, fault.NameRunEnded},
		{"step-stop.json", false, task.StatusStopped, ""},
		{"step-executor-failure.json", true, "", "ExecutorUnavailable"},
	}
	store := dynamo.New(client, table)
	for i, c := range cases {
		event, err := os.ReadFile(filepath.Join("..", "..", "events", "lambda", c.event))
		if err != nil {
			t.Fatal(err)
		}
		if c.current {
			event = currentEvent(t, event)
		}
		res := e.Invoke(t, event)
		if i == 0 {
			t.Logf("first (cold) invocation: %v", res.Duration)
		}
		if res.ErrorType != c.errorType {
			t.Errorf("%s: errorType %q (%s), want %q", c.event, res.ErrorType, res.Message, c.errorType)
			continue
		}
		var req task.Request
		_ = json.Unmarshal(event, &req)
		steps, err := store.ListSteps(context.Background(), req.Run.ID)
		if err != nil || len(steps) != 1 {
			t.Fatalf("%s: %d records, %v", c.event, len(steps), err)
		}
		if c.errorType != "" && c.status == "" {
			if steps[0].Status != "failed" || !strings.Contains(steps[0].Error, "503") {
				t.Errorf("%s: record %+v", c.event, steps[0])
			}
			continue
		}
		resp := answer(t, e, res)
		if resp.Status != c.status || string(steps[0].Status) != c.status {
			t.Errorf("%s: response %q, record %q, want %q", c.event, resp.Status, steps[0].Status, c.status)
		}
		if steps[0].InputTokens != 120 || steps[0].OutputTokens != 40 || steps[0].Model != "gpt-4o-mini" {
			t.Errorf("%s: usage/model not recorded: %+v", c.event, steps[0])
		}
		run, err := store.GetRun(context.Background(), req.Run.ID)
		if err != nil {
			t.Fatalf("%s: run not recorded: %v", c.event, err)
		}
		if c.status != task.StatusCompleted && string(run.Status) != c.status {
			t.Errorf("%s: run status %q, want %q", c.event, run.Status, c.status)
		}
	}
	if strings.Contains(e.Output(), "test-key") {
		t.Error("the API key appears in the function's logs")
	}
}

// TestSIGTERMOnlyWhenAsked checks through the emulator that the function
// registers the extension that makes the Lambda service send SIGTERM (for
// closing MCP sessions) only with MCP_CLOSE_ON_SHUTDOWN=true: the
// registration costs every cold start.
func TestSIGTERMOnlyWhenAsked(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	bin := rietest.Build(t, ".")
	env := []string{"TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local"}
	for _, c := range []struct {
		value      string
		registered bool
	}{{"", false}, {"false", false}, {"true", true}} {
		e := rietest.Start(t, bin, append(env, "MCP_CLOSE_ON_SHUTDOWN="+c.value)...)
		if res := e.Invoke(t, []byte(`{"mode": "nothing"}`)); res.ErrorType != "ConfigError" {
			t.Fatalf("MCP_CLOSE_ON_SHUTDOWN=%q: errorType %q (%s), want ConfigError", c.value, res.ErrorType, res.Message)
		}
		e.Stop()
		if got := strings.Contains(e.Output(), "GoLangEnableSIGTERM"); got != c.registered {
			t.Errorf("MCP_CLOSE_ON_SHUTDOWN=%q: SIGTERM extension registered %v, want %v\n%s", c.value, got, c.registered, e.Output())
		}
	}
}

// BenchmarkColdStart compares the step bootstrap's cold start with a
// hello-world bootstrap's (see rietest.ColdStart). An invalid event: the
// step function answers at once, so the figure is the start-up, not the
// work. Nothing is stored, so the table and its endpoint need not exist.
//
//	go test -run '^$' -bench ColdStart -benchtime 20x ./functions/step
func BenchmarkColdStart(b *testing.B) {
	rietest.ColdStart(b, rietest.Build(b, "."), []byte(`{"mode": "nothing"}`),
		"TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local")
}
