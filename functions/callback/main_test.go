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

	"github.com/aws/aws-lambda-go/events"

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

// The approval links in events/lambda/apigw-approval-*.json are signed with
// rieKey for approval rieApprovalID, valid until 2099; the forged one
// carries the same approval ID and expiry under another key's MAC.
const (
	keyARN        = "arn:aws:secretsmanager:us-east-1:123456789012:secret:stepline-approval-key-AbCdEf"
	rieKey        = "rie-test-approval-signing-key-0123456789"
	rieApprovalID = "rie-callback-approval-0001-Zk3m9QpLx2Vb7NcT5wHs8"
	taskToken     = "AQCEAAAAKgAAAAMAAAAAAAAAAUNBTExCQUNLLVRBU0stVE9LRU4tMDAwMQ=="
)

var linkExpiry = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)

// sfnCall is one request to the fake Step Functions.
type sfnCall struct {
	Target string
	Body   map[string]any
}

// fakeStepFunctions speaks the Step Functions JSON protocol: it records
// every call and answers SendTaskSuccess, refusing the tokens in expired
// as Step Functions refuses a token whose Task timed out.
type fakeStepFunctions struct {
	srv     *httptest.Server
	mu      sync.Mutex
	calls   []sfnCall
	expired map[string]bool
}

func newFakeStepFunctions(t *testing.T, expired ...string) *fakeStepFunctions {
	t.Helper()
	f := &fakeStepFunctions{expired: map[string]bool{}}
	for _, tok := range expired {
		f.expired[tok] = true
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		target := r.Header.Get("X-Amz-Target")
		f.mu.Lock()
		f.calls = append(f.calls, sfnCall{Target: target, Body: body})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		switch tok, _ := body["taskToken"].(string); {
		case target != "AWSStepFunctions.SendTaskSuccess":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type": "UnknownOperationException"}`)
		case f.expired[tok]:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type": "com.amazonaws.swf.service.v2.model#TaskTimedOut", "message": "Task Timed Out: 'Provided task does not exist anymore'"}`)
		default:
			io.WriteString(w, `{}`)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeStepFunctions) sent() []sfnCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sfnCall(nil), f.calls...)
}

func readEvent(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "lambda", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// withToken returns ev with its approval link's token replaced.
func withToken(ev events.APIGatewayV2HTTPRequest, token string) events.APIGatewayV2HTTPRequest {
	old := strings.TrimPrefix(ev.RawPath, "/approvals/")
	ev.RawPath = "/approvals/" + token
	ev.RequestContext.HTTP.Path = ev.RawPath
	ev.PathParameters = map[string]string{"id": token}
	h := map[string]string{}
	for k, v := range ev.Headers {
		h[k] = strings.ReplaceAll(v, old, token)
	}
	ev.Headers = h
	return ev
}

func invoke(t *testing.T, e *rietest.Emulator, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	res := e.Invoke(t, b)
	if res.ErrorType != "" {
		t.Fatalf("errorType %s: %s", res.ErrorType, res.Message)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(res.Body, &resp); err != nil {
		t.Fatalf("answer %s: %v", res.Body, err)
	}
	return resp
}

// TestBootstrapThroughEmulator invokes the real callback bootstrap through
// the Runtime Interface Emulator with the API Gateway events in
// events/lambda: the signing key comes from a fake Secrets Manager, the
// approval is in DynamoDB Local, and a fake Step Functions records the
// SendTaskSuccess calls.
func TestBootstrapThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t)
	sm := rietest.FakeSecretsManager(t, map[string]string{keyARN: rieKey})
	const expiredToken = "AQCEAAAAKgAAAAMAAAAAAAAAAUVYUElSRUQtVEFTSy1UT0tFTg=="
	sf := newFakeStepFunctions(t, expiredToken)
	st := dynamo.New(client, table)
	ctx := context.Background()
	now := time.Now()
	for _, a := range []store.Approval{
		{ID: rieApprovalID, RunID: "run-rie-callback", Step: "approve_remediation", Pipeline: "sre-alert-triage",
			Message: "Restart checkout-api? Runbook: https://runbooks.example.com/checkout", TaskToken: taskToken, CreatedAt: now, ExpiresAt: linkExpiry},
		{ID: "rie-callback-approval-0002-timed-out", RunID: "run-rie-callback-2", Step: "approve_remediation", Pipeline: "sre-alert-triage",
			Message: "Restart payments-api?", TaskToken: expiredToken, CreatedAt: now, ExpiresAt: linkExpiry},
	} {
		if err := st.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	signer := &approval.Signer{Key: []byte(rieKey)}
	get, post, forged := readEvent(t, "apigw-approval-get.json"), readEvent(t, "apigw-approval-post.json"), readEvent(t, "apigw-approval-post-forged.json")
	if id, err := signer.Verify(strings.TrimPrefix(get.RawPath, "/approvals/")); err != nil || id != rieApprovalID {
		t.Fatalf("the link in apigw-approval-get.json carries %q, %v: re-sign it with the test key", id, err)
	}

	bin := rietest.Build(t, ".")
	e := rietest.Start(t, bin,
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_ENDPOINT_URL_SFN="+sf.srv.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"APPROVAL_KEY_SECRET_ARN="+keyARN,
	)

	steps := []struct {
		name       string
		ev         events.APIGatewayV2HTTPRequest
		wantStatus int
		wantBody   string // in the page
		wantSent   int    // SendTaskSuccess calls so far
	}{
		{name: "GET shows the page", ev: get, wantStatus: 200, wantBody: "Restart checkout-api?"},
		{name: "forged POST is refused", ev: forged, wantStatus: 403, wantBody: "not valid"},
		{name: "forged GET is refused", ev: withToken(get, strings.TrimPrefix(forged.RawPath, "/approvals/")), wantStatus: 403, wantBody: "not valid"},
		{name: "POST decides and resumes the run", ev: post, wantStatus: 303, wantSent: 1},
		{name: "a second POST is refused", ev: post, wantStatus: 409, wantBody: "decided already", wantSent: 1},
		{name: "GET shows the decision", ev: get, wantStatus: 200, wantBody: "Approved</strong> by Alice Example", wantSent: 1},
		{name: "an expired task token: recorded, not resumed", ev: withToken(post, signer.Sign("rie-callback-approval-0002-timed-out", linkExpiry)),
			wantStatus: 502, wantBody: "could not be resumed", wantSent: 2},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			resp := invoke(t, e, s.ev)
			if resp.StatusCode != s.wantStatus || !strings.Contains(resp.Body, s.wantBody) {
				t.Errorf("answer %d %q, want %d with %q", resp.StatusCode, resp.Body, s.wantStatus, s.wantBody)
			}
			if ct := resp.Headers["Content-Type"]; resp.StatusCode != 303 && ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if resp.Headers["Cache-Control"] != "no-store" || resp.Headers["Referrer-Policy"] != "no-referrer" {
				t.Errorf("headers %v", resp.Headers)
			}
			if resp.StatusCode == 303 && resp.Headers["Location"] != s.ev.RawPath {
				t.Errorf("Location %q, want %q", resp.Headers["Location"], s.ev.RawPath)
			}
			if got := sf.sent(); len(got) != s.wantSent {
				t.Errorf("%d Step Functions calls, want %d: %+v", len(got), s.wantSent, got)
			}
		})
	}

	calls := sf.sent()
	if len(calls) < 1 {
		t.Fatal("no SendTaskSuccess")
	}
	first := calls[0]
	var d task.Decision
	out, _ := first.Body["output"].(string)
	if first.Target != "AWSStepFunctions.SendTaskSuccess" || first.Body["taskToken"] != taskToken || json.Unmarshal([]byte(out), &d) != nil ||
		d.Decision != "approve" || d.By != "Alice Example" {
		t.Errorf("SendTaskSuccess %+v", first)
	}
	a, err := st.GetApproval(ctx, rieApprovalID)
	if err != nil || a.Decision != store.DecisionApproved || a.DecidedBy != "Alice Example" {
		t.Errorf("stored approval %+v, %v", a, err)
	}
	if out := e.Output(); strings.Contains(out, taskToken) || strings.Contains(out, expiredToken) || strings.Contains(out, rieKey) {
		t.Errorf("a task token or the key appears in the function's logs:\n%s", out)
	}

	// The key is read from the start, and waited for before the first
	// request is handled (boot.Await): without it the function exits, and
	// no request is answered (nor a run resumed) by a function that
	// cannot check links.
	t.Run("missing key fails the first request", func(t *testing.T) {
		e := rietest.Start(t, bin,
			"TABLE_NAME="+table,
			"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
			"AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
			"AWS_ENDPOINT_URL_SFN="+sf.srv.URL,
			"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
			"APPROVAL_KEY_SECRET_ARN="+keyARN+"-other",
		)
		// The emulator answers an invocation whose runtime exited with an
		// empty body (Lambda: Runtime.ExitError).
		b, err := json.Marshal(post)
		if err != nil {
			t.Fatal(err)
		}
		res := e.Invoke(t, b)
		var resp events.APIGatewayV2HTTPResponse
		if json.Unmarshal(res.Body, &resp) == nil && resp.StatusCode != 0 {
			t.Fatalf("invocation answered %s without a signing key", res.Body)
		}
		if got := sf.sent(); len(got) != len(calls) {
			t.Errorf("%d Step Functions calls, want %d", len(got), len(calls))
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(e.Output(), "ResourceNotFoundException") {
			if time.Now().After(deadline) {
				t.Fatalf("no log line names the missing secret:\n%s", e.Output())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if out := e.Output(); !strings.Contains(out, `"msg":"APPROVAL_KEY_SECRET_ARN"`) {
			t.Errorf("the failure does not say which setting:\n%s", out)
		}
	})
}

// BenchmarkColdStart compares the callback bootstrap's cold start with a
// hello-world bootstrap's (see rietest.ColdStart). The signing key comes
// from a fake Secrets Manager, as on AWS at start-up; the request is for
// a path the function does not serve, answered at once.
//
//	go test -run '^$' -bench ColdStart -benchtime 20x ./functions/callback
func BenchmarkColdStart(b *testing.B) {
	sm := rietest.FakeSecretsManager(b, map[string]string{keyARN: rieKey})
	event := []byte(`{"version": "2.0", "rawPath": "/nothing", "requestContext": {"http": {"method": "GET", "path": "/nothing"}}}`)
	rietest.ColdStart(b, rietest.Build(b, "."), event,
		"TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_ENDPOINT_URL_SFN=http://127.0.0.1:9", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"APPROVAL_KEY_SECRET_ARN="+keyARN)
}
