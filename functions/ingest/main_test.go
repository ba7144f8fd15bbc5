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
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dynamotest.Stop()
	os.Exit(code)
}

const tokenARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:stepline-webhook-token-Gh7Jk2"

// execution is a StartExecution call the fake Step Functions took.
type execution struct {
	StateMachineArn string `json:"stateMachineArn"`
	Name            string `json:"name"`
	Input           string `json:"input"`
}

// fakeStepFunctions answers StartExecution in the Step Functions JSON
// protocol and records the executions it was asked to start.
type fakeStepFunctions struct {
	srv        *httptest.Server
	mu         sync.Mutex
	executions []execution
}

func newFakeStepFunctions(t *testing.T) *fakeStepFunctions {
	t.Helper()
	f := &fakeStepFunctions{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		var in execution
		raw, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Amz-Target") != "AWSStepFunctions.StartExecution" || json.Unmarshal(raw, &in) != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type": "UnknownOperationException"}`)
			return
		}
		f.mu.Lock()
		f.executions = append(f.executions, in)
		f.mu.Unlock()
		arn := strings.Replace(in.StateMachineArn, ":stateMachine:", ":execution:", 1) + ":" + in.Name
		json.NewEncoder(w).Encode(map[string]any{"executionArn": arn, "startDate": float64(time.Now().UnixMilli()) / 1000})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeStepFunctions) started() []execution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]execution(nil), f.executions...)
}

// bundle puts the bootstrap and the pipeline files together as the code
// asset does: <dir>/bootstrap and <dir>/pipelines/*.yaml.
func bundle(t testing.TB, bin string) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(bin), "pipelines")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "pipelines", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test pipelines: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func invokeAPI(t *testing.T, e *rietest.Emulator, event []byte) (int, map[string]any) {
	t.Helper()
	res := e.Invoke(t, event)
	if res.ErrorType != "" {
		t.Fatalf("errorType %s: %s", res.ErrorType, res.Message)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(res.Body, &resp); err != nil {
		t.Fatalf("answer %s: %v", res.Body, err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatalf("body %q: %v", resp.Body, err)
	}
	return resp.StatusCode, body
}

// TestBootstrapThroughEmulator invokes the real ingest bootstrap through
// the Runtime Interface Emulator with the events in events/lambda: the
// pipeline files lie next to the bootstrap, the webhook token comes from
// a fake Secrets Manager, runs and dedup claims go to DynamoDB Local, and
// a fake Step Functions records the executions started.
func TestBootstrapThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t)
	sm := rietest.FakeSecretsManager(t, map[string]string{tokenARN: testToken})
	sf := newFakeStepFunctions(t)
	bin := rietest.Build(t, ".")
	bundle(t, bin)
	env := []string{
		"TABLE_NAME=" + table,
		"AWS_ENDPOINT_URL_DYNAMODB=" + endpoint,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + sm.URL,
		"AWS_ENDPOINT_URL_SFN=" + sf.srv.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"WEBHOOK_TOKEN_SECRET_ARN=" + tokenARN,
	}
	e := rietest.Start(t, bin, append(env, "STATE_MACHINE_PREFIX="+testNames.Prefix, "STATE_MACHINE_ACCOUNT="+testNames.Account)...)
	st := dynamo.New(client, table)
	ctx := context.Background()

	webhook := readEvent(t, "apigw-webhook-generic.json")
	status, body := invokeAPI(t, e, webhook)
	if status != 202 || body["status"] != "accepted" || body["pipeline"] != "rie-orders" {
		t.Fatalf("webhook answered %d %v, want 202 accepted by rie-orders", status, body)
	}
	runID, _ := body["run_id"].(string)
	started := sf.started()
	if len(started) != 1 {
		t.Fatalf("%d executions started, want 1", len(started))
	}
	x := started[0]
	var input map[string]map[string]any
	if err := json.Unmarshal([]byte(x.Input), &input); err != nil {
		t.Fatalf("input %s: %v", x.Input, err)
	}
	trig := input["trigger"]
	if x.StateMachineArn != testMachines["rie-orders"] || x.Name != runID || len(input) != 1 || trig == nil ||
		trig["source"] != "generic" || trig["fingerprint"] != "order-1042" || trig["labels"].(map[string]any)["event"] != "order.created" {
		t.Errorf("execution %+v", x)
	}
	run, err := st.GetRun(ctx, runID)
	if err != nil || run.Status != store.RunRunning || run.Pipeline != "rie-orders" || run.Stage != store.StageProduction {
		t.Errorf("run %+v, %v", run, err)
	}

	status, body = invokeAPI(t, e, webhook)
	if status != 202 || body["status"] != "deduplicated" || body["run_id"] != runID {
		t.Errorf("repeat answered %d %v, want 202 deduplicated onto %s", status, body, runID)
	}
	if n := len(sf.started()); n != 1 {
		t.Errorf("the repeat started an execution: %d in all", n)
	}

	forged := apiRequest(t, "apigw-webhook-generic.json", func(ev *events.APIGatewayV2HTTPRequest) {
		ev.Headers["authorization"] = "Bearer not-the-token"
		ev.Body = strings.Replace(ev.Body, "order-1042", "order-9999", 1)
	})
	if status, body = invokeAPI(t, e, forged); status != 401 {
		t.Errorf("a wrong token answered %d %v, want 401", status, body)
	}

	status, body = invokeAPI(t, e, readEvent(t, "apigw-pipeline-run.json"))
	if status != 202 || body["status"] != "accepted" || body["pipeline"] != "rie-drafts" || body["source"] != "manual" {
		t.Errorf("manual run answered %d %v", status, body)
	}

	res := e.Invoke(t, readEvent(t, "eventbridge-trigger-ingest.json"))
	var tr triggerResult
	if res.ErrorType != "" || json.Unmarshal(res.Body, &tr) != nil || tr.Status != "accepted" || tr.Pipeline != "rie-alerts" {
		t.Errorf("trigger event answered %s %s", res.ErrorType, res.Body)
	}
	if n := len(sf.started()); n != 3 {
		t.Errorf("%d executions started in all, want 3 (webhook, manual run, trigger event)", n)
	}
	if strings.Contains(e.Output(), testToken) {
		t.Error("the webhook token appears in the function's logs")
	}

	// Without the naming rule the function cannot find its state
	// machines: it does not start, and says what is missing.
	t.Run("no state machine prefix", func(t *testing.T) {
		e := rietest.Start(t, bin, append(env, "STATE_MACHINE_ACCOUNT="+testNames.Account)...)
		res := e.Invoke(t, webhook)
		var resp events.APIGatewayV2HTTPResponse
		if json.Unmarshal(res.Body, &resp) == nil && resp.StatusCode != 0 {
			t.Fatalf("answered %d without its state machines", resp.StatusCode)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(e.Output(), `STATE_MACHINE_PREFIX is unset`) {
			if time.Now().After(deadline) {
				t.Fatalf("the log does not say what is missing:\n%s", e.Output())
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// BenchmarkColdStart compares the ingest bootstrap's cold start with a
// hello-world bootstrap's (see rietest.ColdStart). As on AWS, the start-up
// reads the test pipelines bundled next to the bootstrap and the webhook
// tokens from a (fake) Secrets Manager; the event is neither a request
// nor a trigger, answered at once.
//
//	go test -run '^$' -bench ColdStart -benchtime 20x ./functions/ingest
func BenchmarkColdStart(b *testing.B) {
	sm := rietest.FakeSecretsManager(b, map[string]string{tokenARN: testToken})
	bin := rietest.Build(b, ".")
	bundle(b, bin)
	rietest.ColdStart(b, bin, []byte(`{}`),
		"TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_ENDPOINT_URL_SFN=http://127.0.0.1:9", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"WEBHOOK_TOKEN_SECRET_ARN="+tokenARN, "STATE_MACHINE_PREFIX="+testNames.Prefix, "STATE_MACHINE_ACCOUNT="+testNames.Account)
}
