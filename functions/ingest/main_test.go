package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/catalog"
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

// publish publishes the test pipelines as a deployment does (package
// shared/catalog, the models compiled as the CDK app compiles them): two
// bundles in a fake S3, named by parameters of a
// fake Parameter Store, and returns the environment that points the
// function at them.
func publish(t testing.TB) []string {
	t.Helper()
	var bundles [2][]catalog.File
	for i, f := range bundled(t) {
		bundles[i%2] = append(bundles[i%2], f)
	}
	params := map[string]string{
		// Not under the path: not read.
		"/stepline/" + testNames.Prefix + "/other":            "s3://cdk-assets/nothing.json",
		"/stepline/" + testNames.Prefix + "/pipelines/deep/x": "s3://cdk-assets/nothing.json",
	}
	objects := map[string][]byte{}
	for i, fs := range bundles {
		raw, err := catalog.Encode(fs)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("bundle-%d.json", i)
		params[catalog.ParameterName(testNames.Prefix, fmt.Sprintf("%02d", i))] = "s3://cdk-assets/" + key
		objects["cdk-assets/"+key] = raw
	}
	return []string{
		"AWS_ENDPOINT_URL_SSM=" + rietest.FakeParameterStore(t, params).URL,
		"AWS_ENDPOINT_URL_S3=" + rietest.FakeS3(t, objects).URL,
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
// pipeline files come from the deployment's bundles (a fake Parameter
// Store and S3), the webhook token comes from
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
	env := []string{
		"TABLE_NAME=" + table,
		"AWS_ENDPOINT_URL_DYNAMODB=" + endpoint,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + sm.URL,
		"AWS_ENDPOINT_URL_SFN=" + sf.srv.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"WEBHOOK_TOKEN_SECRET_ARN=" + tokenARN,
	}
	env = append(env, publish(t)...)
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

	// Every pipeline of both bundles is deployed, with its file.
	get := func(path, route, name string) (int, map[string]any) {
		return invokeAPI(t, e, apiRequest(t, "apigw-pipeline-run.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RequestContext.HTTP.Method, ev.RawPath, ev.RouteKey, ev.Body = "GET", path, "GET "+route, ""
			ev.PathParameters = map[string]string{"name": name}
		}))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "pipelines", "*.yaml"))
	if status, body := get("/pipelines", "/pipelines", ""); status != 200 || len(body["pipelines"].([]any)) != len(files) {
		t.Errorf("GET /pipelines answered %d %v, want the %d pipelines of both bundles", status, body, len(files))
	}
	if status, body := get("/pipelines/rie-alerts", "/pipelines/{name}", "rie-alerts"); status != 200 || body["name"] != "rie-alerts" || !strings.Contains(fmt.Sprint(body["yaml"]), "name: rie-alerts") {
		t.Errorf("GET /pipelines/rie-alerts answered %d %v", status, body)
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

// TestBundlesReadAgain pins what the function does when its start's read
// of the pipeline bundles fails (a bundle's object missing): it still
// takes work, answers an event it does not serve at once, answers a
// request that needs the pipelines 500 and reads the bundles again on the
// next, which succeeds once the object is there.
func TestBundlesReadAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	env := publish(t)
	var s3URL string
	for i, kv := range env {
		if u, ok := strings.CutPrefix(kv, "AWS_ENDPOINT_URL_S3="); ok {
			s3URL = u
			env = append(env[:i], env[i+1:]...)
			break
		}
	}
	target, err := url.Parse(s3URL)
	if err != nil || s3URL == "" {
		t.Fatalf("publish gave no S3 endpoint: %v", env)
	}
	// The bundles' objects are missing until ready is set.
	var ready atomic.Bool
	proxy := httputil.NewSingleHostReverseProxy(target)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	sm := rietest.FakeSecretsManager(t, map[string]string{tokenARN: testToken})
	e := rietest.Start(t, rietest.Build(t, "."), append(env, "AWS_ENDPOINT_URL_S3="+gate.URL,
		"TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_ENDPOINT_URL_SFN=http://127.0.0.1:9", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"WEBHOOK_TOKEN_SECRET_ARN="+tokenARN, "STATE_MACHINE_PREFIX="+testNames.Prefix, "STATE_MACHINE_ACCOUNT="+testNames.Account)...)

	if res := e.Invoke(t, []byte(`{}`)); !strings.Contains(res.Message, "unknown event") {
		t.Errorf("an unknown event answered %s %q, want the unknown event error", res.ErrorType, res.Message)
	}
	list := apiRequest(t, "apigw-pipeline-run.json", func(ev *events.APIGatewayV2HTTPRequest) {
		ev.RequestContext.HTTP.Method, ev.RawPath, ev.RouteKey, ev.Body = "GET", "/pipelines", "GET /pipelines", ""
	})
	if status, body := invokeAPI(t, e, list); status != http.StatusInternalServerError || !strings.Contains(fmt.Sprint(body["error"]), "pipelines do not load") {
		t.Errorf("GET /pipelines without the bundles answered %d %v, want 500 and why", status, body)
	}
	if out := e.Output(); !strings.Contains(out, "the deployment's bundles do not load") || !strings.Contains(out, "NoSuchKey") {
		t.Errorf("the start's failed read is not logged with its cause:\n%s", out)
	}
	ready.Store(true)
	files, _ := filepath.Glob(filepath.Join("testdata", "pipelines", "*.yaml"))
	if status, body := invokeAPI(t, e, list); status != http.StatusOK || len(body["pipelines"].([]any)) != len(files) {
		t.Errorf("GET /pipelines once the bundles are there answered %d %v, want the %d pipelines", status, body, len(files))
	}
}

// TestPipelineDirAndOldBundles runs the bootstrap with PIPELINE_DIR (the
// bundle documents of a directory, read at start instead of the
// deployment's) and, without it, against a deployment whose bundle is of
// format 1 (no models): that one logs the fix, deploy again, and answers
// the requests that need the pipelines 500.
func TestPipelineDirAndOldBundles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	sm := rietest.FakeSecretsManager(t, map[string]string{tokenARN: testToken})
	env := []string{"TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_SECRETS_MANAGER=" + sm.URL,
		"AWS_ENDPOINT_URL_SFN=http://127.0.0.1:9", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"WEBHOOK_TOKEN_SECRET_ARN=" + tokenARN, "STATE_MACHINE_PREFIX=" + testNames.Prefix, "STATE_MACHINE_ACCOUNT=" + testNames.Account}
	bin := rietest.Build(t, ".")
	list := apiRequest(t, "apigw-pipeline-run.json", func(ev *events.APIGatewayV2HTTPRequest) {
		ev.RequestContext.HTTP.Method, ev.RawPath, ev.RouteKey, ev.Body = "GET", "/pipelines", "GET /pipelines", ""
	})

	dir := t.TempDir()
	files := bundled(t)
	for i, fs := range [][]catalog.File{files[:1], files[1:]} {
		raw, err := catalog.Encode(fs)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", i)), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := rietest.Start(t, bin, append(env, "PIPELINE_DIR="+dir)...)
	if status, body := invokeAPI(t, e, list); status != http.StatusOK || len(body["pipelines"].([]any)) != len(files) {
		t.Errorf("GET /pipelines with PIPELINE_DIR answered %d %v, want the %d pipelines", status, body, len(files))
	}

	old := []byte(`{"stepline_bundle": 1, "files": [{"name": "10-orders.yaml", "source": "name: rie-orders\n"}]}`)
	e = rietest.Start(t, bin, append(env,
		"AWS_ENDPOINT_URL_SSM="+rietest.FakeParameterStore(t, map[string]string{catalog.ParameterName(testNames.Prefix, "core"): "s3://cdk-assets/old.json"}).URL,
		"AWS_ENDPOINT_URL_S3="+rietest.FakeS3(t, map[string][]byte{"cdk-assets/old.json": old}).URL)...)
	if status, body := invokeAPI(t, e, list); status != http.StatusInternalServerError || !strings.Contains(fmt.Sprint(body["error"]), "pipelines do not load") {
		t.Errorf("GET /pipelines with a format 1 bundle answered %d %v, want 500", status, body)
	}
	if out := e.Output(); !strings.Contains(out, "format 1, want 2: deploy the core stack and the pipeline stacks again") {
		t.Errorf("the log does not say to deploy again:\n%s", out)
	}
}

// TestTokensWaitedOnFirstNeed pins when the webhook tokens are waited
// for: not by the start, nor by an event the function does not serve,
// but by the first event that needs the pipelines; a secret without a
// usable token list stops the function then, saying where (not what).
func TestTokensWaitedOnFirstNeed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	const unusable = "a=,secret-bit"
	sm := rietest.FakeSecretsManager(t, map[string]string{tokenARN: unusable})
	env := append(publish(t), "TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_ENDPOINT_URL_SFN=http://127.0.0.1:9", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"WEBHOOK_TOKEN_SECRET_ARN="+tokenARN, "STATE_MACHINE_PREFIX="+testNames.Prefix, "STATE_MACHINE_ACCOUNT="+testNames.Account)
	e := rietest.Start(t, rietest.Build(t, "."), env...)
	if res := e.Invoke(t, []byte(`{}`)); !strings.Contains(res.Message, "unknown event") {
		t.Errorf("an unknown event answered %s %q, want the unknown event error", res.ErrorType, res.Message)
	}
	if strings.Contains(e.Output(), "no usable token list") {
		t.Fatalf("the tokens were waited for before an event needed them:\n%s", e.Output())
	}
	list := apiRequest(t, "apigw-pipeline-run.json", func(ev *events.APIGatewayV2HTTPRequest) {
		ev.RequestContext.HTTP.Method, ev.RawPath, ev.RouteKey, ev.Body = "GET", "/pipelines", "GET /pipelines", ""
	})
	res := e.Invoke(t, list)
	if res.ErrorType == "" {
		t.Errorf("GET /pipelines with unusable tokens answered %s, want the function stopped", res.Body)
	}
	out := e.Output()
	if !strings.Contains(out, "WEBHOOK_TOKEN_SECRET_ARN: the secret holds no usable token list") || !strings.Contains(out, tokenARN) {
		t.Errorf("the log does not say where the tokens are:\n%s", out)
	}
	if strings.Contains(out, "secret-bit") {
		t.Errorf("the log quotes the secret:\n%s", out)
	}
}

// BenchmarkColdStart compares the ingest bootstrap's cold start with a
// hello-world bootstrap's (see rietest.ColdStart). As on AWS, the start-up
// reads the deployment's pipeline bundles (a fake Parameter Store and S3)
// and the webhook tokens (a fake Secrets Manager); the event is neither a
// request nor a trigger, answered at once, without waiting for the
// bundles.
//
//	go test -run '^$' -bench ColdStart -benchtime 20x ./functions/ingest
func BenchmarkColdStart(b *testing.B) {
	rietest.ColdStart(b, rietest.Build(b, "."), []byte(`{}`), coldStartEnv(b)...)
}

// coldStartEnv is the environment of the cold-start benchmarks: fakes of
// the services the start-up calls.
func coldStartEnv(b *testing.B) []string {
	sm := rietest.FakeSecretsManager(b, map[string]string{tokenARN: testToken})
	env := append(publish(b),
		"TABLE_NAME=unused", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_ENDPOINT_URL_SFN=http://127.0.0.1:9", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"WEBHOOK_TOKEN_SECRET_ARN="+tokenARN, "STATE_MACHINE_PREFIX="+testNames.Prefix, "STATE_MACHINE_ACCOUNT="+testNames.Account)
	return env
}

// BenchmarkFirstRequest is BenchmarkColdStart with a request that needs
// the pipelines, GET /schedules: its answer waits for the bundles' read
// and decodes their models (the test pipelines), so the figure is what
// the first request of a container costs, where BenchmarkColdStart's is
// the start-up alone.
//
//	go test -run '^$' -bench FirstRequest -benchtime 30x ./functions/ingest
func BenchmarkFirstRequest(b *testing.B) {
	var ev events.APIGatewayV2HTTPRequest
	ev.RequestContext.HTTP.Method, ev.RawPath, ev.RouteKey = "GET", "/schedules", "GET /schedules"
	raw, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	rietest.ColdStart(b, rietest.Build(b, "."), raw, coldStartEnv(b)...)
}
