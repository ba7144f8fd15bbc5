package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dynamotest.Stop()
	os.Exit(code)
}

// recorded is a test server that records the requests it is sent.
type recorded struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
	target []string
	calls  map[string]bool // the SDK's invocation ids: one per call, however many attempts
}

// sdkCalls returns how many operations the SDK called, counting an
// operation's retried attempts once.
func (r *recorded) sdkCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recorded) requests() (targets, bodies []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.target...), append([]string(nil), r.bodies...)
}

func newRecorded(t *testing.T, answer func(w http.ResponseWriter, target string, body []byte)) *recorded {
	t.Helper()
	rec := &recorded{calls: map[string]bool{}}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		target := r.Header.Get("X-Amz-Target")
		rec.mu.Lock()
		rec.bodies, rec.target = append(rec.bodies, string(b)), append(rec.target, target)
		if id := r.Header.Get("Amz-Sdk-Invocation-Id"); id != "" {
			rec.calls[id] = true
		}
		rec.mu.Unlock()
		answer(w, target, b)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// fakeStepFunctions answers DescribeStateMachine in the Step Functions
// JSON protocol with the given definition for testMachineARN.
func fakeStepFunctions(t *testing.T, definition string) *recorded {
	t.Helper()
	return newRecorded(t, func(w http.ResponseWriter, target string, body []byte) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		var in struct {
			StateMachineArn string `json:"stateMachineArn"`
		}
		_ = json.Unmarshal(body, &in)
		if target != "AWSStepFunctions.DescribeStateMachine" || in.StateMachineArn != testMachineARN {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type": "StateMachineDoesNotExist", "message": "State Machine Does Not Exist"}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"stateMachineArn": testMachineARN, "name": "stepline-rie-recorder", "status": "ACTIVE",
			"definition": definition, "roleArn": "arn:aws:iam::123456789012:role/stepline-rie-recorder",
			"type": "STANDARD", "creationDate": 1795900000.123,
		})
	})
}

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "lambda", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitFor polls the function's output (passed on asynchronously by the
// emulator) until count lines hold want.
func waitFor(t *testing.T, e *rietest.Emulator, want string, count int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(e.Output(), want) < count {
		if time.Now().After(deadline) {
			t.Fatalf("%d lines with %s, want %d:\n%s", strings.Count(e.Output(), want), want, count, e.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBootstrapThroughEmulator invokes the real recorder bootstrap through
// the Runtime Interface Emulator with the status change events in
// events/lambda: runs in DynamoDB Local, the pipeline's definition from a
// fake Step Functions, its escalate notification a webhook to a test
// server.
func TestBootstrapThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t)
	hook := newRecorded(t, func(w http.ResponseWriter, _ string, _ []byte) { w.WriteHeader(http.StatusNoContent) })
	sf := fakeStepFunctions(t, compiled(t, hook.srv.URL+"/escalate"))
	st := dynamo.New(client, table)
	ctx := context.Background()
	started := time.UnixMilli(1795974723512).UTC()
	for _, id := range []string{"run-rie-failed", "run-rie-escalated", "run-rie-succeeded"} {
		if err := st.CreateRun(ctx, store.Run{ID: id, Pipeline: "rie-recorder", Status: store.RunRunning, Stage: "production", StartedAt: started}); err != nil {
			t.Fatal(err)
		}
	}
	stepEnd := started.Add(time.Minute)
	if err := st.UpdateRun(ctx, "run-rie-escalated", store.RunUpdate{Status: store.RunEscalated, Reason: "confidence 0.42 below 0.75 at triage", CompletedAt: &stepEnd}); err != nil {
		t.Fatal(err)
	}

	bin := rietest.Build(t, ".")
	e := rietest.Start(t, bin,
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ENDPOINT_URL_SFN="+sf.srv.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"STATE_MACHINE_PREFIX=stepline", "STATE_MACHINE_ACCOUNT=123456789012",
		"METRIC_NAMESPACE=SteplineTest",
	)

	steps := []struct {
		event      string
		run        string
		wantStatus store.RunStatus
		wantReason string
		wantHooks  int // escalate webhooks received so far
	}{
		{"eventbridge-execution-failed.json", "run-rie-failed", store.RunFailed, "the execution failed with States.Runtime: An error occurred", 1},
		{"eventbridge-execution-failed.json", "run-rie-failed", store.RunFailed, "States.Runtime", 1}, // delivered twice: notified once
		{"eventbridge-execution-escalated.json", "run-rie-escalated", store.RunEscalated, "confidence 0.42 below 0.75 at triage", 1},
		{"eventbridge-execution-timed-out.json", "run-rie-timed-out", store.RunFailed, "the execution timed out", 2},
		{"eventbridge-execution-succeeded.json", "run-rie-succeeded", store.RunCompleted, "", 2},
	}
	for i, s := range steps {
		res := e.Invoke(t, readEvent(t, s.event))
		if res.ErrorType != "" {
			t.Fatalf("%s: errorType %s: %s", s.event, res.ErrorType, res.Message)
		}
		run, err := st.GetRun(ctx, s.run)
		if err != nil {
			t.Fatalf("%s: %v", s.event, err)
		}
		if run.Status != s.wantStatus || !strings.Contains(run.Reason, s.wantReason) || run.CompletedAt == nil {
			t.Errorf("%s: run %s %q, want %s with %q", s.event, run.Status, run.Reason, s.wantStatus, s.wantReason)
		}
		if _, bodies := hook.requests(); len(bodies) != s.wantHooks {
			t.Errorf("%s: %d escalate notifications, want %d", s.event, len(bodies), s.wantHooks)
		}
		waitFor(t, e, `"CloudWatchMetrics"`, i+1)
	}

	_, bodies := hook.requests()
	var first, second map[string]string
	if len(bodies) != 2 || json.Unmarshal([]byte(bodies[0]), &first) != nil || json.Unmarshal([]byte(bodies[1]), &second) != nil {
		t.Fatalf("notifications %q", bodies)
	}
	if first["run"] != "run-rie-failed" || first["status"] != "failed" || first["reason"] != "failed" || !strings.Contains(first["summary"], "States.Runtime") ||
		first["service"] != "checkout-api" {
		t.Errorf("first notification %v", first)
	}
	if second["run"] != "run-rie-timed-out" || second["reason"] != "timed_out" {
		t.Errorf("second notification %v", second)
	}
	created, err := st.GetRun(ctx, "run-rie-timed-out")
	if err != nil || created.Pipeline != "rie-recorder" || created.Stage != "production" || created.Team != "checkout" || !created.StartedAt.Equal(started) {
		t.Errorf("run created for the timeout %+v, %v", created, err)
	}
	done, _ := st.GetRun(ctx, "run-rie-succeeded")
	if !strings.Contains(string(done.FinalOutput), "checkout-api restarted") {
		t.Errorf("final output %s", done.FinalOutput)
	}
	// The SDK retries an attempt that fails in transit; count calls.
	if targets, _ := sf.requests(); sf.sdkCalls() != 2 {
		t.Errorf("%d DescribeStateMachine calls, want 2 (one per run closed here with notifications); requests %v", sf.sdkCalls(), targets)
	}
	out := e.Output()
	for _, want := range []string{`"Namespace":"SteplineTest"`, `"Status":"failed"`, `"Status":"escalated"`, `"Status":"completed"`} {
		if !strings.Contains(out, want) {
			t.Errorf("no metric with %s in the output", want)
		}
	}
}

// BenchmarkColdStart compares the recorder bootstrap's cold start with a
// hello-world bootstrap's (see rietest.ColdStart). The event is not an
// execution status change: the function logs it and answers at once.
//
//	go test -run '^$' -bench ColdStart -benchtime 20x ./functions/recorder
func BenchmarkColdStart(b *testing.B) {
	rietest.ColdStart(b, rietest.Build(b, "."), []byte(`{}`),
		"TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_SFN=http://127.0.0.1:9",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"STATE_MACHINE_PREFIX=stepline", "STATE_MACHINE_ACCOUNT=123456789012")
}
