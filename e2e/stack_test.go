package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/stepline/stepline/internal/testenv"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
)

// StackName is the stack make synth synthesizes.
const StackName = "Stepline"

// TestStack creates make synth's template in the box's CloudFormation
// (through Transform) and runs the stack: every state machine's
// definition substituted with the stack's resources, an unmodified
// example pipeline run through the stack's own ingest, step and recorder
// functions and table, EventBridge triggers and status changes delivered
// by hand through the stack's own rules, and every other state machine
// executed until it ends.
func TestStack(t *testing.T) {
	h := box(t)
	root := testenv.RepoRoot()
	cdkOut := filepath.Join(root, "cdk.out")
	raw, err := os.ReadFile(filepath.Join(cdkOut, StackName+".template.json"))
	if err != nil {
		testenv.Missing(t, "no synthesized template: run make synth ("+err.Error()+")")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := deployStack(t, ctx, h, raw, cdkOut)

	t.Run("state machines substituted", func(t *testing.T) {
		for logical, arn := range st.machines {
			d, err := h.AWS.SFN.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
			if err != nil {
				t.Fatalf("%s: %v", logical, err)
			}
			def := aws.ToString(d.Definition)
			if m := placeholder.FindString(def); m != "" {
				t.Errorf("%s: %s is not substituted", logical, m)
			}
			if !strings.Contains(def, functionArn(st.functions["Step"])) {
				t.Errorf("%s: the definition does not invoke the stack's step function %s", logical, st.functions["Step"])
			}
		}
	})

	t.Run("example through the stack", func(t *testing.T) {
		ollama := startOllama(t, filepath.Join(root, "pipelines", "responses", "multi-service-health.yaml"))
		defer ollama.Close()
		// POST /pipelines/multi-service-health/runs, as API Gateway hands it
		// to the ingest function (the route is IAM-authorized).
		body := `{"event": "deploy.finished", "summary": "Deploy 4411 finished", "data": {"deploy_id": "4411", "services": ["cart-api", "payments-api", "search-api"]}}`
		inv, err := h.AWS.Invoke(ctx, st.functions["Ingest"], apiRequest("POST", "/pipelines/multi-service-health/runs", body))
		if err != nil || inv.FunctionError != "" {
			t.Fatalf("ingest: %v %s", err, inv.Payload)
		}
		var resp events.APIGatewayV2HTTPResponse
		json.Unmarshal(inv.Payload, &resp)
		var accepted struct {
			Status string `json:"status"`
			RunID  string `json:"run_id"`
		}
		if json.Unmarshal([]byte(resp.Body), &accepted); resp.StatusCode != 202 || accepted.Status != "accepted" {
			t.Fatalf("manual run: HTTP %d %s", resp.StatusCode, resp.Body)
		}
		exec := executionArn(st.machines["PipelineMultiServiceHealth"], accepted.RunID)
		d, err := h.Wait(ctx, exec)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != sfntypes.ExecutionStatusSucceeded {
			t.Fatalf("execution %s: %s %s", d.Status, aws.ToString(d.Error), aws.ToString(d.Cause))
		}
		recordByHand(t, ctx, h, d)
		run, steps, err := st.store.GetRunWithSteps(ctx, accepted.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range steps {
			names = append(names, fmt.Sprintf("%s:%s", s.Name, s.Status))
		}
		want := []string{"discover:completed", "check-service/0:completed", "check-service/1:completed", "check-service:completed", "report:completed"}
		if run.Status != store.RunCompleted || run.Source != "manual" || !sameSet(names, want) {
			t.Errorf("run %s (source %q), records %v; want completed, manual, %v", run.Status, run.Source, names, want)
		}
	})

	t.Run("triggers and status changes by hand", func(t *testing.T) {
		trig := readTrigger(t, filepath.Join(root, "events", "checkout-latency.trigger.json"))
		// A fingerprinted alert: the stack's dedup rule hands it to ingest,
		// which starts sre-alert-triage; the same alert again is
		// deduplicated.
		first, err := h.AWS.Deliver(ctx, "alertmanager", "Stepline Trigger", trig)
		if err != nil {
			t.Fatal(err)
		}
		runID := ingested(t, first, st.functions["Ingest"], "accepted")
		again, err := h.AWS.Deliver(ctx, "alertmanager", "Stepline Trigger", trig)
		if err != nil {
			t.Fatal(err)
		}
		if dup := ingested(t, again, st.functions["Ingest"], "deduplicated"); dup != runID {
			t.Errorf("the second alert was deduplicated onto %s, want %s", dup, runID)
		}
		// Without a fingerprint the state machine rule starts it directly.
		var m map[string]any
		json.Unmarshal(trig, &m)
		delete(m, "fingerprint")
		plain, _ := json.Marshal(m)
		direct, err := h.AWS.Deliver(ctx, "alertmanager", "Stepline Trigger", plain)
		if err != nil {
			t.Fatal(err)
		}
		if len(direct) != 1 || direct[0].Target != st.machines["PipelineSreAlertTriage"] {
			t.Fatalf("an unfingerprinted alert went to %+v, want the state machine only", direct)
		}
		var directARN string
		json.Unmarshal(direct[0].Answer, &directARN)
		var input struct {
			Trigger json.RawMessage `json:"trigger"`
		}
		json.Unmarshal(direct[0].Input, &input)
		if !jsonEq(input.Trigger, plain) {
			t.Errorf("the rule gave the state machine %s, want the trigger", direct[0].Input)
		}
		// A testing pipeline's rules are disabled: nothing starts.
		deploy := readTrigger(t, filepath.Join(root, "events", "deploy-finished.trigger.json"))
		var tm map[string]any
		json.Unmarshal(deploy, &tm)
		delete(tm, "pipeline")
		delete(tm, "fingerprint")
		tb, _ := json.Marshal(tm)
		if none, err := h.AWS.Deliver(ctx, "generic", "Stepline Trigger", tb); err != nil || len(none) != 0 {
			t.Errorf("a testing pipeline's event was delivered: %+v, %v", none, err)
		}
		// Both sre runs end at their triage (the box has no Bedrock); the
		// recorder gets their status changes through the stack's rule.
		for _, arn := range []string{executionArn(st.machines["PipelineSreAlertTriage"], runID), directARN} {
			d, err := h.Wait(ctx, arn)
			if err != nil {
				t.Fatal(err)
			}
			recordByHand(t, ctx, h, d)
			run, err := st.store.GetRun(ctx, aws.ToString(d.Name))
			if err != nil {
				t.Fatalf("run %s: %v", aws.ToString(d.Name), err)
			}
			if !run.Status.Terminal() || run.Pipeline != "sre-alert-triage" {
				t.Errorf("run %s: %s %q", run.ID, run.Status, run.Reason)
			}
			t.Logf("sre-alert-triage run %s (source %s): %s: %s", run.ID, run.Source, run.Status, run.Reason)
		}
	})

	t.Run("every state machine runs", func(t *testing.T) {
		// order-intake and research-brief call hosted models: the proxy
		// refuses them, so each run ends failed or escalated, recorded in
		// the stack's table by its step function.
		for logical, event := range map[string]string{"PipelineOrderIntake": "order-created.trigger.json", "PipelineResearchBrief": "research-question.trigger.json"} {
			trig := readTrigger(t, filepath.Join(root, "events", event))
			runID := NewRunID()
			out, err := h.AWS.SFN.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(st.machines[logical]), Name: aws.String(runID),
				Input: aws.String(`{"trigger": ` + string(trig) + `}`)})
			if err != nil {
				t.Fatal(err)
			}
			d, err := h.Wait(ctx, aws.ToString(out.ExecutionArn))
			if err != nil {
				t.Fatal(err)
			}
			recordByHand(t, ctx, h, d)
			run, steps, err := st.store.GetRunWithSteps(ctx, runID)
			if err != nil || len(steps) == 0 || !run.Status.Terminal() {
				t.Errorf("%s: run %s with %d records (%v): %q", logical, run.Status, len(steps), err, run.Reason)
			}
			t.Logf("%s run: %s with %d records: %s", logical, run.Status, len(steps), run.Reason)
		}
		if !slices.Contains(h.Fake.Egress(), "api.anthropic.com:443") {
			t.Errorf("the steps did not ask the proxy for api.anthropic.com: %v", h.Fake.Egress())
		}
	})
}

var placeholder = regexp.MustCompile(`\$\{[A-Za-z0-9]+Arn\}`)

// stack is the deployed stack's resources.
type stack struct {
	machines  map[string]string // logical ID without its hash → ARN
	functions map[string]string // "Step", "Ingest", ... → function name
	store     *dynamo.Store
}

// deployStack creates what the template needs first (its secrets, the
// secrets and parameters cdk.json maps, the bootstrap version, the code
// assets), transforms it and creates the stack.
func deployStack(t *testing.T, ctx context.Context, h *Harness, raw []byte, cdkOut string) stack {
	t.Helper()
	var tpl map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	tr := Transform{APIEndpoint: APIBaseURL, Secrets: map[string]string{}, Env: map[string]string{
		"HTTPS_PROXY": h.Fake.URL, "HTTP_PROXY": h.Fake.URL, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": h.Fake.BedrockEndpoint(),
	}}
	for id, gen := range SecretsToCreate(tpl) {
		arn, err := h.AWS.CreateSecret(ctx, "stack/"+id, GenerateSecret(gen))
		if err != nil {
			t.Fatal(err)
		}
		tr.Secrets[id] = arn
	}
	if err := createMappedSecrets(ctx, h.AWS, tpl); err != nil {
		t.Fatal(err)
	}
	if err := h.AWS.PutParameter(ctx, "/cdk-bootstrap/hnb659fds/version", "21", true); err != nil {
		t.Fatal(err)
	}
	assets, err := Assets(cdkOut, StackName, h.Tools)
	if err != nil {
		t.Fatal(err)
	}
	bucket := "cdk-hnb659fds-assets-" + Account + "-" + Region
	if err := h.AWS.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	for _, a := range assets {
		if err := h.AWS.PutObject(ctx, bucket, a.Key, a.Body); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := tr.Apply(tpl)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.MarshalIndent(tpl, "", " ")
	dir := filepath.Join(h.Box.Logs, "stack")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "template.json"), body, 0o644)
	repJSON, _ := json.MarshalIndent(rep, "", "  ")
	os.WriteFile(filepath.Join(dir, "transform.json"), repJSON, 0o644)
	if err := h.AWS.CreateStack(ctx, StackName, body, nil); err != nil {
		t.Fatalf("create stack: %v (template in %s)", err, dir)
	}
	var s Stack
	deadline := time.Now().Add(time.Minute)
	for {
		if s, err = h.AWS.DescribeStack(ctx, StackName); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(s.Status, "_IN_PROGRESS") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s.Status != "CREATE_COMPLETE" {
		t.Fatalf("stack %s: %s (template in %s)", s.Status, s.Reason, dir)
	}
	res, err := h.AWS.StackResources(ctx, StackName)
	if err != nil {
		t.Fatal(err)
	}
	out := stack{machines: map[string]string{}, functions: map[string]string{}}
	var table string
	for _, r := range res {
		switch r.Type {
		case "AWS::StepFunctions::StateMachine":
			out.machines[trimHash(r.LogicalID)] = r.PhysicalID
		case "AWS::Lambda::Function":
			out.functions[strings.TrimSuffix(trimHash(r.LogicalID), "Function")] = r.PhysicalID
		case "AWS::DynamoDB::Table":
			table = r.PhysicalID
		}
	}
	client, err := dynamo.NewClient(h.AWS.Config)
	if err != nil {
		t.Fatal(err)
	}
	out.store = dynamo.New(client, table)
	t.Logf("stack %s with %d resources (%d removed, %d references stubbed, %d secrets created first) in %s",
		s.Status, len(res), len(rep.Removed), len(rep.Stubbed), len(rep.Secrets), time.Since(started).Round(time.Millisecond))
	pipelines, _ := filepath.Glob(filepath.Join(h.Tools.Root, "pipelines", "*.yaml"))
	if len(out.machines) != len(pipelines) || out.functions["Step"] == "" || out.functions["Ingest"] == "" || out.functions["Recorder"] == "" || table == "" {
		t.Fatalf("stack resources: machines %v, functions %v, table %q", out.machines, out.functions, table)
	}
	return out
}

// createMappedSecrets stores a value for every secret the functions'
// SECRET_REFS map (cdk.json's stepline:secrets): Secrets Manager secrets
// (a JSON object when the reference names a key) and SSM parameters.
func createMappedSecrets(ctx context.Context, a *AWS, tpl map[string]any) error {
	refs := map[string]secret.Ref{}
	for _, r := range resources(tpl) {
		props, _ := r["Properties"].(map[string]any)
		env, _ := props["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if s, ok := vars["SECRET_REFS"].(string); ok {
			m, err := secret.ParseRefs(s)
			if err != nil {
				return err
			}
			for k, v := range m {
				refs[k] = v
			}
		}
	}
	values := map[string]map[string]string{} // id → key → value ("" key: whole)
	stores := map[string]string{}
	for name, ref := range refs {
		if values[ref.ID] == nil {
			values[ref.ID] = map[string]string{}
		}
		values[ref.ID][ref.Key] = "box-" + strings.ToLower(name)
		stores[ref.ID] = ref.Source
	}
	for id, keys := range values {
		v := keys[""]
		if len(keys) > 1 || v == "" {
			b, _ := json.Marshal(keys)
			v = string(b)
		}
		var err error
		if stores[id] == secret.SourceSSM {
			err = a.PutParameter(ctx, id, v, false)
		} else {
			_, err = a.CreateSecret(ctx, id, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// trimHash drops CDK's 8-character hash from a logical ID.
func trimHash(id string) string {
	if len(id) > 8 {
		return id[:len(id)-8]
	}
	return id
}

func executionArn(machineArn, name string) string {
	return strings.Replace(machineArn, ":stateMachine:", ":execution:", 1) + ":" + name
}

// recordByHand delivers the execution's status change through the
// stack's rules (the recorder's rule matches it).
func recordByHand(t *testing.T, ctx context.Context, h *Harness, d *sfn.DescribeExecutionOutput) {
	t.Helper()
	ev := StatusChange(d)
	got, err := h.AWS.Deliver(ctx, ev.Source, ev.DetailType, ev.Detail)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0].Target, "Recorder") {
		t.Fatalf("the status change of %s went to %+v, want the recorder", aws.ToString(d.Name), got)
	}
}

// ingested returns the run ID the ingest function answered a delivery
// with, checking its status.
func ingested(t *testing.T, ds []Delivery, ingest, status string) string {
	t.Helper()
	if len(ds) != 1 || !strings.HasSuffix(ds[0].Target, ":"+ingest) {
		t.Fatalf("delivered to %+v, want the ingest function only", ds)
	}
	var res struct {
		Status string `json:"status"`
		RunID  string `json:"run_id"`
		Reason string `json:"reason"`
	}
	json.Unmarshal(ds[0].Answer, &res)
	if res.Status != status || res.RunID == "" {
		t.Fatalf("ingest answered %s, want %s", ds[0].Answer, status)
	}
	return res.RunID
}

func readTrigger(t *testing.T, path string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	trig, err := eventTrigger(b)
	if err != nil {
		t.Fatal(err)
	}
	return trig
}

// apiRequest is an API Gateway HTTP API request (payload format 2.0).
func apiRequest(method, path, body string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: method + " " + path, RawPath: path, Body: body,
		Headers: map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: NewRunID(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "127.0.0.1"}},
	}
}

func jsonEq(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// startOllama serves the OpenAI-compatible API the multi-service-health
// example calls at http://localhost:11434/v1, answering from its
// responses file by what each prompt asks (its base_url names no step).
func startOllama(t *testing.T, responses string) io.Closer {
	t.Helper()
	data, err := os.ReadFile(responses)
	if err != nil {
		t.Fatal(err)
	}
	script, err := ParseScript(data)
	if err != nil {
		t.Fatal(err)
	}
	key := func(prompt string) string {
		switch {
		case strings.Contains(prompt, "touched these services"):
			return "discover"
		case strings.Contains(prompt, "Check the health of cart-api"):
			return "check-service/0"
		case strings.Contains(prompt, "Check the health of payments-api"):
			return "check-service/1"
		case strings.Contains(prompt, "deploy health report"):
			return "report"
		}
		return "unknown"
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		var prompt string
		for _, m := range req.Messages {
			if m.Role == "user" {
				prompt += fmt.Sprint(m.Content)
			}
		}
		rep, ok := script.next(key(prompt))
		if !ok || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error": {"message": "no reply for this prompt"}}`, http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "ollama-box", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": rep.Text}, "finish_reason": "stop"}}})
	})}
	for _, addr := range []string{"127.0.0.1:11434", "[::1]:11434"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr == "127.0.0.1:11434" {
				t.Fatalf("the example calls localhost:11434, which is taken: %v", err)
			}
			continue // no IPv6 loopback
		}
		go srv.Serve(l) // Close closes the listeners it serves
	}
	return srv
}
