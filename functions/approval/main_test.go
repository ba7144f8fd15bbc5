package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/task"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dynamotest.Stop()
	os.Exit(code)
}

const (
	keyARN    = "arn:aws:secretsmanager:us-east-1:123456789012:secret:stepline-approval-key-AbCdEf"
	rieKey    = "rie-test-approval-signing-key-0123456789"
	apiBase   = "https://api.example.com"
	eventFile = "approval-request.json"
)

func readEvent(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "lambda", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// logLine waits for the function's log line holding want (the emulator
// passes the function's output on asynchronously) and returns it.
func logLine(t *testing.T, e *rietest.Emulator, want string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, line := range strings.Split(e.Output(), "\n") {
			if strings.Contains(line, want) {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %s:\n%s", want, e.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBootstrapThroughEmulator invokes the real approval bootstrap through
// the Runtime Interface Emulator: the signing key comes from a fake
// Secrets Manager, approvals land in DynamoDB Local, and the approval
// notification is a webhook to a test server.
func TestBootstrapThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t)
	sm := rietest.FakeSecretsManager(t, map[string]string{keyARN: rieKey})
	hook := newHook(t, http.StatusOK)
	bin := rietest.Build(t, ".")
	e := rietest.Start(t, bin,
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"APPROVAL_KEY_SECRET_ARN="+keyARN,
		"API_BASE_URL="+apiBase,
		"APPROVAL_HOOK_URL="+hook.srv.URL,
	)
	st := dynamo.New(client, table)
	signer := &approval.Signer{Key: []byte(rieKey)}
	ctx := context.Background()
	event := readEvent(t, eventFile)
	taskToken := event["task_token"].(string)

	t.Run("production: the link goes out through the approval webhook", func(t *testing.T) {
		res := e.Invoke(t, encode(t, event))
		if res.ErrorType != "" {
			t.Fatalf("errorType %s: %s", res.ErrorType, res.Message)
		}
		var resp task.Response
		if err := json.Unmarshal(res.Body, &resp); err != nil || resp.Status != "waiting" || resp.Step != "approve_remediation" {
			t.Fatalf("response %s (%v)", res.Body, err)
		}
		sent := hook.received()
		if len(sent) != 1 {
			t.Fatalf("webhook received %d messages, want 1", len(sent))
		}
		if !strings.Contains(sent[0], "Approve approve_remediation for checkout-api?") {
			t.Errorf("message %q", sent[0])
		}
		id, err := signer.Verify(tokenIn(t, sent[0]))
		if err != nil {
			t.Fatalf("the link does not verify with the key from Secrets Manager: %v", err)
		}
		a, err := st.GetApproval(ctx, id)
		if err != nil {
			t.Fatalf("approval %s not stored: %v", id, err)
		}
		if a.TaskToken != taskToken || a.RunID != "run-rie-approval" || a.Step != "approve_remediation" || a.Decision != store.DecisionPending {
			t.Errorf("stored approval %+v", a)
		}
		if want := "checkout-api is saturated. Proposed action: restart on checkout-api. Runbook: https://runbooks.example.com/checkout/checkout-api"; a.Message != want {
			t.Errorf("message %q, want %q", a.Message, want)
		}
		if d := a.ExpiresAt.Sub(a.CreatedAt); d.Seconds() != 1800 {
			t.Errorf("approval open for %v, want 1800 s", d)
		}
		run, err := st.GetRun(ctx, "run-rie-approval")
		if err != nil || run.Status != store.RunWaiting {
			t.Errorf("run %+v, %v; want waiting", run, err)
		}
		if strings.Contains(sent[0], taskToken) {
			t.Error("the task token left the server in the notification")
		}
	})

	t.Run("testing without approval notifications: the link is logged", func(t *testing.T) {
		ev := readEvent(t, eventFile)
		p := ev["pipeline"].(map[string]any)
		p["stage"] = "testing"
		delete(p, "notifications")
		ev["run"].(map[string]any)["id"] = "run-rie-approval-testing"
		before := len(hook.received())
		res := e.Invoke(t, encode(t, ev))
		if res.ErrorType != "" {
			t.Fatalf("errorType %s: %s", res.ErrorType, res.Message)
		}
		if len(hook.received()) != before {
			t.Error("a notification was sent for a pipeline without approval notifications")
		}
		line := logLine(t, e, `"run":"run-rie-approval-testing"`)
		if !strings.Contains(line, `"msg":"approval requested"`) {
			t.Fatalf("log line %s", line)
		}
		id, err := signer.Verify(tokenIn(t, line))
		if err != nil {
			t.Fatalf("logged link: %v", err)
		}
		if a, err := st.GetApproval(ctx, id); err != nil || a.RunID != "run-rie-approval-testing" {
			t.Errorf("approval %+v, %v", a, err)
		}
	})

	t.Run("a Task of another mode is refused", func(t *testing.T) {
		ev := readEvent(t, eventFile)
		ev["mode"] = "step"
		res := e.Invoke(t, encode(t, ev))
		if res.ErrorType != "ConfigError" {
			t.Errorf("errorType %q (%s), want ConfigError", res.ErrorType, res.Message)
		}
	})

	if out := e.Output(); strings.Contains(out, taskToken) || strings.Contains(out, rieKey) {
		t.Error("the task token or the signing key appears in the function's logs")
	}

	// Without its signing key the function exits at its first request
	// (boot.Await) rather than send links nobody can check.
	t.Run("missing key fails the first request", func(t *testing.T) {
		e := rietest.Start(t, bin,
			"TABLE_NAME="+table, "API_BASE_URL="+apiBase,
			"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
			"AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
			"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
			"APPROVAL_KEY_SECRET_ARN="+keyARN+"-other",
		)
		// The emulator answers an invocation whose runtime exited with an
		// empty body (Lambda: Runtime.ExitError).
		res := e.Invoke(t, encode(t, readEvent(t, eventFile)))
		var resp task.Response
		if json.Unmarshal(res.Body, &resp) == nil && resp.Status != "" {
			t.Fatalf("invocation answered %s without a signing key", res.Body)
		}
		logLine(t, e, "ResourceNotFoundException")
	})
}

// BenchmarkColdStart compares the approval bootstrap's cold start with a
// hello-world bootstrap's (see rietest.ColdStart). The signing key comes
// from a fake Secrets Manager, as on AWS at start-up; the event is not an
// approval Task, so the function answers at once and stores nothing.
//
//	go test -run '^$' -bench ColdStart -benchtime 20x ./functions/approval
func BenchmarkColdStart(b *testing.B) {
	sm := rietest.FakeSecretsManager(b, map[string]string{keyARN: rieKey})
	rietest.ColdStart(b, rietest.Build(b, "."), []byte(`{"mode": "nothing"}`),
		"TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"APPROVAL_KEY_SECRET_ARN="+keyARN, "API_BASE_URL="+apiBase)
}
