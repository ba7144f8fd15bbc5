package states

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/awsrest"
)

// fake answers the Step Functions JSON protocol with answer (status,
// body) and records each request.
type fake struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
}

func newClient(t *testing.T, answer func(target string, body map[string]any) (int, string)) (*Client, *fake) {
	t.Helper()
	f := &fake{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests, f.bodies = append(f.requests, r), append(f.bodies, string(raw))
		f.mu.Unlock()
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		status, out := answer(r.Header.Get("X-Amz-Target"), body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(status)
		io.WriteString(w, out)
	}))
	t.Cleanup(srv.Close)
	cfg, err := awsenv.Load([]string{"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=secret", "AWS_ENDPOINT_URL_SFN=" + srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.c.Backoff = func(int) time.Duration { return 0 }
	return c, f
}

const machine = "arn:aws:states:us-east-1:123456789012:stateMachine:stepline-orders"

func TestStartExecution(t *testing.T) {
	c, f := newClient(t, func(target string, body map[string]any) (int, string) {
		if target != "AWSStepFunctions.StartExecution" {
			return 400, `{"__type": "UnknownOperationException"}`
		}
		return 200, `{"executionArn": "arn:aws:states:us-east-1:123456789012:execution:stepline-orders:` + body["name"].(string) + `", "startDate": 1795900000.1}`
	})
	arn, err := c.StartExecution(context.Background(), Execution{StateMachineARN: machine, Name: "run-1", Input: `{"trigger": {}}`})
	if err != nil || arn != "arn:aws:states:us-east-1:123456789012:execution:stepline-orders:run-1" {
		t.Fatalf("StartExecution = %q, %v", arn, err)
	}
	r := f.requests[0]
	if r.Method != http.MethodPost || r.URL.Path != "/" || r.Header.Get("Content-Type") != "application/x-amz-json-1.0" ||
		!strings.Contains(r.Header.Get("Authorization"), "/us-east-1/states/aws4_request") || r.Header.Get("Amz-Sdk-Invocation-Id") == "" {
		t.Errorf("request %s %s %v", r.Method, r.URL.Path, r.Header)
	}
	var body map[string]string
	if err := json.Unmarshal([]byte(f.bodies[0]), &body); err != nil || body["stateMachineArn"] != machine || body["name"] != "run-1" || body["input"] != `{"trigger": {}}` || len(body) != 3 {
		t.Errorf("body %s", f.bodies[0])
	}
}

func TestDefinition(t *testing.T) {
	c, _ := newClient(t, func(target string, body map[string]any) (int, string) {
		switch {
		case target != "AWSStepFunctions.DescribeStateMachine":
			return 400, `{"__type": "UnknownOperationException"}`
		case body["stateMachineArn"] == machine:
			return 200, `{"stateMachineArn": "` + machine + `", "definition": "{\"StartAt\": \"A\"}", "status": "ACTIVE"}`
		case body["stateMachineArn"] == machine+"-bare":
			return 200, `{"stateMachineArn": "` + machine + `-bare"}`
		}
		return 400, `{"__type": "com.amazonaws.swf.service.v2.model#StateMachineDoesNotExist", "message": "State Machine Does Not Exist"}`
	})
	ctx := context.Background()
	if def, err := c.Definition(ctx, machine); err != nil || def != `{"StartAt": "A"}` {
		t.Errorf("Definition = %q, %v", def, err)
	}
	var re *awsrest.ResponseError
	if _, err := c.Definition(ctx, machine+"-gone"); !errors.As(err, &re) || re.Code != "StateMachineDoesNotExist" || !strings.HasPrefix(err.Error(), "DescribeStateMachine: ") {
		t.Errorf("an unknown machine: %v, want the service's StateMachineDoesNotExist", err)
	}
	if _, err := c.Definition(ctx, machine+"-bare"); err == nil || !strings.Contains(err.Error(), "no definition") {
		t.Errorf("an answer without a definition: %v", err)
	}
}

func TestSendTaskSuccess(t *testing.T) {
	c, f := newClient(t, func(target string, body map[string]any) (int, string) {
		switch {
		case target != "AWSStepFunctions.SendTaskSuccess":
			return 400, `{"__type": "UnknownOperationException"}`
		case body["taskToken"] == "expired":
			return 400, `{"__type": "com.amazonaws.swf.base.model#TaskTimedOut", "message": "Task Timed Out"}`
		}
		return 200, `{}`
	})
	ctx := context.Background()
	if err := c.SendTaskSuccess(ctx, "token-1", `{"decision": "approve"}`); err != nil {
		t.Fatalf("SendTaskSuccess: %v", err)
	}
	var body map[string]string
	if err := json.Unmarshal([]byte(f.bodies[0]), &body); err != nil || body["taskToken"] != "token-1" || body["output"] != `{"decision": "approve"}` || len(body) != 2 {
		t.Errorf("body %s", f.bodies[0])
	}
	var re *awsrest.ResponseError
	if err := c.SendTaskSuccess(ctx, "expired", `{}`); !errors.As(err, &re) || re.Code != "TaskTimedOut" || !strings.HasPrefix(err.Error(), "SendTaskSuccess: ") {
		t.Errorf("an expired token: %v, want the service's TaskTimedOut", err)
	}
}

// TestRetry pins that a call's retried attempts carry the same
// invocation ID, and that a call after it carries another.
func TestRetry(t *testing.T) {
	n := 0
	c, f := newClient(t, func(string, map[string]any) (int, string) {
		n++
		if n == 1 {
			return 500, `{"__type": "ServiceUnavailable"}`
		}
		return 200, `{"executionArn": "x"}`
	})
	for range 2 {
		if _, err := c.StartExecution(context.Background(), Execution{StateMachineARN: machine, Name: "run-1"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.requests) != 3 {
		t.Fatalf("%d requests, want 3 (a retried call, then one call)", len(f.requests))
	}
	id := func(i int) string { return f.requests[i].Header.Get("Amz-Sdk-Invocation-Id") }
	if id(0) == "" || id(0) != id(1) || id(2) == id(1) {
		t.Errorf("invocation IDs %q %q %q: want the first two equal, the third another", id(0), id(1), id(2))
	}
	if strings.Contains(f.bodies[2], "input") {
		t.Errorf("an execution without input sent %s", f.bodies[2])
	}
}
