package steprun

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

type captureNotifier struct {
	got []store.Approval
}

func (c *captureNotifier) NotifyApproval(_ context.Context, a store.Approval, _ string) error {
	c.got = append(c.got, a)
	return nil
}

func TestApproval(t *testing.T) {
	e := newEnv(t, ``)
	n := &captureNotifier{}
	e.h.Notifier = n
	st := seqStep("approve", "Deploy {{ service }}?")
	st.Executor, st.TimeoutSeconds = "human", 600
	req := newRequest(t, task.ModeApproval, st)
	req.Pipeline.Include = []string{"labels.service"}
	req.TaskToken = "token-abc"
	resp, err := e.h.Respond(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != StatusWaiting {
		t.Errorf("status = %q", resp.Status)
	}
	if len(n.got) != 1 || n.got[0].TaskToken != "" || n.got[0].Message != "Deploy api?" {
		t.Fatalf("notified %+v, want one approval without its token", n.got)
	}
	a, err := e.st.GetApproval(context.Background(), n.got[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.TaskToken != "token-abc" || !a.ExpiresAt.Equal(e.clock.Add(600*time.Second)) || a.Step != "approve" {
		t.Errorf("stored approval = %+v", a)
	}
	if got := getRun(t, e.st).Status; got != store.RunWaiting {
		t.Errorf("run status = %q, want waiting", got)
	}
}

func TestHumanAndChild(t *testing.T) {
	human := seqStep("approve", "")
	human.Executor = "human"
	child := seqStep("child", "")
	child.Executor, child.ExecutorConfig = "pipeline", map[string]any{"pipeline": "order-intake"}
	tests := []struct {
		name        string
		mode        string
		step        pipeline.Step
		decision    *task.Decision
		child       string
		err         *task.Error
		wantStatus  string
		wantConf    float64
		wantSummary string
		wantTokens  int64
	}{
		{name: "approve", mode: task.ModeHuman, step: human, decision: &task.Decision{Decision: task.Approve, By: "alice"},
			wantStatus: task.StatusCompleted, wantConf: 1, wantSummary: "Approved by alice"},
		{name: "reject escalates", mode: task.ModeHuman, step: human, decision: &task.Decision{Decision: task.Reject, By: "bob", Comment: "too risky"},
			wantStatus: task.StatusEscalated, wantConf: 0, wantSummary: "Rejected by bob"},
		{name: "child completed with output", mode: task.ModeChild, step: child,
			child:      `{"output":{"confidence":0.85,"summary":"order ok","next_step_context":"n"},"run_id":"c1","status":"completed","usage":{"input_tokens":7,"output_tokens":3,"cost_usd":0}}`,
			wantStatus: task.StatusCompleted, wantConf: 0.85, wantSummary: "order ok", wantTokens: 10},
		{name: "child completed without output", mode: task.ModeChild, step: child,
			child:      `{"output":null,"run_id":"c1","status":"completed"}`,
			wantStatus: task.StatusCompleted, wantConf: 1, wantSummary: "Sub-pipeline 'order-intake' completed"},
		{name: "child failed", mode: task.ModeChild, step: child,
			err:        &task.Error{Error: "Stepline.Failed", Cause: "step broke"},
			wantStatus: task.StatusEscalated, wantConf: 0, wantSummary: "Sub-pipeline 'order-intake' failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, ``)
			req := newRequest(t, tc.mode, tc.step)
			req.Decision, req.Error = tc.decision, tc.err
			if tc.child != "" {
				req.Child = json.RawMessage(tc.child)
			}
			resp, err := e.h.Respond(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			out := decodeMap(t, resp.Output)
			if resp.Status != tc.wantStatus || out["confidence"] != tc.wantConf || out["summary"] != tc.wantSummary {
				t.Fatalf("got %q %v %q, want %q %v %q", resp.Status, out["confidence"], out["summary"], tc.wantStatus, tc.wantConf, tc.wantSummary)
			}
			if out["proceed"] != true {
				t.Errorf("proceed = %v, want true", out["proceed"])
			}
			if got := resp.Usage.InputTokens + resp.Usage.OutputTokens; got != tc.wantTokens {
				t.Errorf("tokens = %d, want %d", got, tc.wantTokens)
			}
			if recs := stepRecords(t, e.st, tc.step.Name); len(recs) != 1 || string(recs[0].Status) != tc.wantStatus {
				t.Errorf("records = %+v", recs)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	type hit struct {
		body  map[string]any
		token string
	}
	var (
		mu   sync.Mutex
		hits []hit
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		hits = append(hits, hit{m, r.Header.Get("Authorization")})
		mu.Unlock()
	}))
	defer srv.Close()
	webhook := &pipeline.FailureWebhook{URL: srv.URL + "/hook", Method: "POST",
		Headers: map[string]string{"Authorization": "Bearer ${HOOK_TOKEN}"},
		Payload: map[string]any{"step": "{{ step_failure.step }}", "why": "{{ step_failure.summary }}", "status": "{{ step_failure.status }}", "svc": "{{ labels.service }}"}}
	lambdaCause := `{"errorMessage":"step \"guarded\": scripted timeout","errorType":"ExecutorTimeout"}`
	tests := []struct {
		name      string
		stage     pipeline.Stage
		policy    string
		wantFlag  string
		wantHits  int
		wantRun   store.RunStatus
		recordedN int // attempts recorded before the failure Task
	}{
		{"sent in production, run continues", pipeline.StageProduction, pipeline.FailureContinue, FlagFailureWebhookSent, 1, store.RunRunning, 2},
		{"muted in testing, run fails", pipeline.StageTesting, pipeline.FailureAbort, FlagFailureWebhookMuted, 0, store.RunFailed, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			hits = nil
			mu.Unlock()
			e := newEnv(t, ``)
			e.h.Secrets = secret.ResolverFunc(func(_ context.Context, name string) (string, error) {
				if name == "HOOK_TOKEN" {
					return "s3cret-value", nil
				}
				return "", secret.Missing(name)
			})
			st := pipeline.Step{Name: "guarded", Executor: "scripted", OnFailure: pipeline.OnFailure{Policy: tc.policy, Webhook: webhook}}
			for i := 1; i <= tc.recordedN; i++ {
				if err := e.st.PutStep(context.Background(), store.StepRecord{RunID: "run-1", Name: "guarded", Attempt: i, Status: store.StepFailed,
					StartedAt: testStart, FinishedAt: testStart}); err != nil {
					t.Fatal(err)
				}
			}
			req := newRequest(t, task.ModeFailure, st)
			req.Pipeline.Stage = tc.stage
			req.Error = &task.Error{Error: "ExecutorTimeout", Cause: lambdaCause}
			req.Usage = task.Usage{InputTokens: 3}
			resp, err := e.h.Respond(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			wantSummary := `ExecutorTimeout: step "guarded": scripted timeout`
			out := decodeMap(t, resp.Output)
			if resp.Status != task.StatusFailed || out["summary"] != wantSummary || out["failed"] != true || out["confidence"] != 0.0 || out["next_step_context"] != "" {
				t.Fatalf("response %q %v", resp.Status, out)
			}
			if _, ok := resp.Steps["guarded"]; !ok || resp.Usage.InputTokens != 3 || !strings.Contains(resp.Reason, wantSummary) {
				t.Errorf("steps %v usage %+v reason %q", resp.Steps, resp.Usage, resp.Reason)
			}
			recs := stepRecords(t, e.st, "guarded")
			last := recs[len(recs)-1]
			if last.Attempt != tc.recordedN+1 || last.Status != store.StepFailed || !slices.Contains(last.Flags, tc.wantFlag) || last.Error != wantSummary {
				t.Errorf("failure record = %+v", last)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(hits) != tc.wantHits {
				t.Fatalf("webhook hits = %d, want %d", len(hits), tc.wantHits)
			}
			if tc.wantHits == 1 {
				h := hits[0]
				if h.token != "Bearer s3cret-value" || h.body["step"] != "guarded" || h.body["why"] != wantSummary || h.body["status"] != "failed" || h.body["svc"] != "api" {
					t.Errorf("webhook got %+v", h)
				}
			}
			if got := getRun(t, e.st).Status; got != tc.wantRun {
				t.Errorf("run status = %q, want %q", got, tc.wantRun)
			}
		})
	}
}
