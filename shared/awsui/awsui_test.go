package awsui

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/stepline/stepline/shared/store"
)

const machinePrefix = "arn:aws:states:eu-west-1:123456789012:stateMachine:"

// fakeSFN serves ListStateMachines, DescribeStateMachine and
// GetExecutionHistory from maps, and records SendTaskSuccess.
type fakeSFN struct {
	mu       sync.Mutex
	machines []string                           // names
	history  map[string][]sfntypes.HistoryEvent // by execution ARN
	lists    int                                // ListStateMachines calls
	sent     []*sfn.SendTaskSuccessInput
}

func (f *fakeSFN) ListStateMachines(_ context.Context, in *sfn.ListStateMachinesInput, _ ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	out := &sfn.ListStateMachinesOutput{}
	for _, n := range f.machines {
		out.StateMachines = append(out.StateMachines, sfntypes.StateMachineListItem{Name: aws.String(n), StateMachineArn: aws.String(machinePrefix + n)})
	}
	return out, nil
}

func (f *fakeSFN) DescribeStateMachine(_ context.Context, in *sfn.DescribeStateMachineInput, _ ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error) {
	def := `{"Comment": "pipeline", "QueryLanguage": "JSONata", "StartAt": "work", "States": {"work": {"Type": "Pass", "End": true}}}`
	return &sfn.DescribeStateMachineOutput{StateMachineArn: in.StateMachineArn, Definition: aws.String(def)}, nil
}

func (f *fakeSFN) GetExecutionHistory(_ context.Context, in *sfn.GetExecutionHistoryInput, _ ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev, ok := f.history[aws.ToString(in.ExecutionArn)]
	if !ok {
		return nil, &sfntypes.ExecutionDoesNotExist{Message: aws.String("no such execution")}
	}
	out := append([]sfntypes.HistoryEvent(nil), ev...)
	if in.ReverseOrder {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return &sfn.GetExecutionHistoryOutput{Events: out}, nil
}

func (f *fakeSFN) SendTaskSuccess(_ context.Context, in *sfn.SendTaskSuccessInput, _ ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, in)
	return &sfn.SendTaskSuccessOutput{}, nil
}

// runStore is a Store whose GetRun knows some runs; the rest of the
// interface is not called by these tests.
type runStore struct {
	Store
	runs  map[string]store.Run
	reads map[string]int
}

func (s runStore) GetRun(_ context.Context, id string) (store.Run, error) {
	s.reads[id]++
	r, ok := s.runs[id]
	if !ok {
		return store.Run{}, store.ErrNotFound
	}
	return r, nil
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestHistoryAndConsole(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	exec := "arn:aws:states:eu-west-1:123456789012:execution:Stepline-triage:run-1"
	f := &fakeSFN{machines: []string{"Stepline-triage", "Other-triage"}, history: map[string][]sfntypes.HistoryEvent{exec: {
		{Id: 1, Type: sfntypes.HistoryEventTypeExecutionStarted, Timestamp: aws.Time(t0)},
		{Id: 2, Type: sfntypes.HistoryEventTypeTaskStateEntered, Timestamp: aws.Time(t0), StateEnteredEventDetails: &sfntypes.StateEnteredEventDetails{Name: aws.String("triage")}},
		{Id: 3, Type: sfntypes.HistoryEventTypeTaskScheduled, Timestamp: aws.Time(t0)},
		{Id: 4, Type: sfntypes.HistoryEventTypeTaskFailed, Timestamp: aws.Time(t0), TaskFailedEventDetails: &sfntypes.TaskFailedEventDetails{Error: aws.String("Executor.Timeout"), Cause: aws.String("<b>slow</b>")}},
		{Id: 5, Type: sfntypes.HistoryEventTypeTaskStateExited, Timestamp: aws.Time(t0.Add(time.Second)), StateExitedEventDetails: &sfntypes.StateExitedEventDetails{Name: aws.String("triage")}},
	}}}
	clk := &clock{t: t0}
	st := runStore{reads: map[string]int{}, runs: map[string]store.Run{
		"run-1": {ID: "run-1", Pipeline: "triage"},
		"run-2": {ID: "run-2", Pipeline: "new-pipeline"},
	}}
	b, err := New(ctx, Config{Store: st, SFN: f, Region: "eu-west-1", Prefix: "Stepline", Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if ps := b.Pipelines(); len(ps) != 1 || ps[0].Name != "triage" || ps[0].Machine == nil || ps[0].Description != "pipeline" {
		t.Fatalf("pipelines %+v", ps)
	}
	h, err := b.History(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h {
		got = append(got, e.Type+"/"+e.State)
	}
	want := "ExecutionStarted/ StateEntered/triage TaskScheduled/triage TaskFailed/triage StateExited/triage"
	if strings.Join(got, " ") != want {
		t.Errorf("history %v\nwant %s", got, want)
	}
	var det map[string]string
	if json.Unmarshal(h[3].Detail, &det) != nil || det["error"] != "Executor.Timeout" || det["cause"] != "<b>slow</b>" {
		t.Errorf("failure detail %s", h[3].Detail)
	}
	if h[0].Seq != 1 || !h[4].Time.Equal(t0.Add(time.Second)) {
		t.Errorf("seq/time %+v %+v", h[0], h[4])
	}

	cfg, err := b.WebUI()
	if err != nil {
		t.Fatal(err)
	}
	wantURL := "https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/" + exec
	if got := cfg.ConsoleURL("run-1"); got != wantURL {
		t.Errorf("console %q\nwant %q", got, wantURL)
	}
	if st.reads["run-1"] != 1 || cfg.Poll != LivePoll {
		t.Errorf("run-1 read %d times, want once (its pipeline is kept); poll %s", st.reads["run-1"], cfg.Poll)
	}

	// A pipeline deployed after the listing is found by listing again,
	// but not more often than RelistEvery.
	if _, err := b.History(ctx, "run-2"); err == nil {
		t.Error("history of a run without a state machine: no error")
	}
	lists := f.lists
	f.mu.Lock()
	f.machines = append(f.machines, "Stepline-new-pipeline")
	f.mu.Unlock()
	if _, err := b.ExecutionARN(ctx, "run-2"); err == nil || f.lists != lists {
		t.Errorf("listed again within RelistEvery: %v, %d lists", err, f.lists-lists)
	}
	clk.t = clk.t.Add(RelistEvery)
	arn, err := b.ExecutionARN(ctx, "run-2")
	if err != nil || arn != "arn:aws:states:eu-west-1:123456789012:execution:Stepline-new-pipeline:run-2" {
		t.Errorf("after a relist: %q, %v", arn, err)
	}
	// An execution Step Functions no longer has: no history, no error.
	if h, err := b.History(ctx, "run-2"); err != nil || len(h) != 0 {
		t.Errorf("gone execution: %v, %v", h, err)
	}
	if _, err := b.History(ctx, "no-such-run"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}

func TestExecutionARN(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"arn:aws:states:eu-west-1:1:stateMachine:p-x", "arn:aws:states:eu-west-1:1:execution:p-x:r"},
		{"arn:aws-cn:states:cn-north-1:1:stateMachine:p-x", "arn:aws-cn:states:cn-north-1:1:execution:p-x:r"},
		{"arn:aws:states:eu-west-1:1:execution:p-x:y", ""},
		{"not an arn", ""},
	} {
		got, err := executionARN(tt.in, "r")
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("executionARN(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestLookupStack(t *testing.T) {
	var form []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		form = append(form, r.PostForm.Get("Action")+" "+r.PostForm.Get("StackName"))
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKID/") {
			t.Errorf("unsigned request: %q", r.Header.Get("Authorization"))
		}
		if r.PostForm.Get("StackName") != "Stepline" {
			w.WriteHeader(400)
			w.Write([]byte(`<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id Nope does not exist</Message></Error></ErrorResponse>`))
			return
		}
		w.Write([]byte(`<DescribeStacksResponse><DescribeStacksResult><Stacks><member>
			<StackId>arn:aws:cloudformation:eu-west-1:123456789012:stack/Stepline/abc</StackId><StackName>Stepline</StackName>
			<Outputs><member><OutputKey>TableName</OutputKey><OutputValue>Stepline-Table-1</OutputValue></member>
			<member><OutputKey>StateMachinePrefix</OutputKey><OutputValue>Stepline</OutputValue></member></Outputs>
			</member></Stacks></DescribeStacksResult></DescribeStacksResponse>`))
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""), BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1}
	cf, err := NewCloudFormation(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cf.LookupStack(context.Background(), "Stepline")
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "arn:aws:cloudformation:eu-west-1:123456789012:stack/Stepline/abc" || s.Outputs[OutputTableName] != "Stepline-Table-1" || s.Outputs[OutputStateMachinePrefix] != "Stepline" {
		t.Errorf("stack %+v", s)
	}
	if _, err := cf.LookupStack(context.Background(), "Nope"); err == nil || !strings.Contains(err.Error(), `describe stack "Nope"`) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing stack: %v", err)
	}
	if strings.Join(form, ",") != "DescribeStacks Stepline,DescribeStacks Nope" {
		t.Errorf("requests %v", form)
	}
}
