package steprun

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/pricing"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

func TestStepDecisions(t *testing.T) {
	verifier := func(strategy string, floor float64) *pipeline.Verifier {
		return &pipeline.Verifier{Executor: "scripted", Mode: pipeline.ModeCritic, CombinationStrategy: strategy,
			VetoFloor: floor, Trigger: pipeline.VerifierTrigger{ConfidenceBelow: 1}}
	}
	tests := []struct {
		name       string
		responses  string
		edit       func(*pipeline.Step, *task.Request)
		wantStatus string
		wantErr    string // fault name when the step returns an error
		wantConf   float64
		wantReason string // substring
		wantFlag   string
		wantRun    store.RunStatus
		check      func(t *testing.T, e *env, resp task.Response)
	}{
		{
			name:       "completed",
			responses:  `triage: [{confidence: 0.9, summary: all good, next_step_context: ctx, service: api, empty: null}]`,
			wantStatus: task.StatusCompleted, wantConf: 0.9, wantRun: store.RunRunning,
			check: func(t *testing.T, e *env, resp task.Response) {
				out := decodeMap(t, resp.Output)
				if out["service"] != "api" {
					t.Errorf("extra field service = %v, want api", out["service"])
				}
				// An explicit null stays: later steps test it with "is none".
				if v, ok := out["empty"]; !ok || v != nil {
					t.Errorf("top-level null not kept as null in compact output: %s", resp.Output)
				}
				if _, ok := out["raw_response"]; ok {
					t.Errorf("raw_response in compact output: %s", resp.Output)
				}
				if string(resp.Steps["triage"]) != string(resp.Output) {
					t.Errorf("Steps[triage] = %s, want the output", resp.Steps["triage"])
				}
				rec := stepRecords(t, e.st, "triage")[0]
				if rec.Prompt != "Triage critical for api" || rec.RawResponse == "" || rec.Model != "test-model" {
					t.Errorf("record prompt %q raw %q model %q", rec.Prompt, rec.RawResponse, rec.Model)
				}
			},
		},
		{
			name:       "stopped",
			responses:  `triage: [{confidence: 0.9, summary: nothing to do, next_step_context: "", proceed: false, proceed_reason: already fixed}]`,
			wantStatus: task.StatusStopped, wantConf: 0.9, wantReason: "already fixed", wantRun: store.RunStopped,
		},
		{
			// The reference contract accepts a stop without a reason: one
			// model call, no re-ask; the summary is the stop's reason.
			name:       "stopped without a reason",
			responses:  `triage: [{confidence: 0.9, summary: nothing to do, next_step_context: "", proceed: false}, {confidence: 0.9, summary: re-asked, next_step_context: ""}]`,
			wantStatus: task.StatusStopped, wantConf: 0.9, wantReason: "nothing to do", wantRun: store.RunStopped,
			check: func(t *testing.T, e *env, resp task.Response) {
				if n := len(e.prov.reqs); n != 1 {
					t.Errorf("%d model calls, want 1 (no re-ask)", n)
				}
				if resp.Reason != "nothing to do" {
					t.Errorf("reason %q, want the summary", resp.Reason)
				}
			},
		},
		{
			name:       "escalated",
			responses:  `triage: [{confidence: 0.4, summary: unsure, next_step_context: ""}]`,
			wantStatus: task.StatusEscalated, wantConf: 0.4, wantReason: `step "triage" escalated: confidence 0.4 is below the threshold 0.75`, wantRun: store.RunEscalated,
		},
		{
			name:       "escalation comes before proceed false",
			responses:  `triage: [{confidence: 0.4, summary: unsure, next_step_context: "", proceed: false, proceed_reason: stop}]`,
			wantStatus: task.StatusEscalated, wantConf: 0.4, wantRun: store.RunEscalated,
		},
		{
			name:       "aborted",
			responses:  `triage: [{confidence: 0.4, summary: unsure, next_step_context: ""}]`,
			edit:       func(s *pipeline.Step, _ *task.Request) { s.OnLowConfidence = pipeline.LowAbort },
			wantStatus: task.StatusAborted, wantConf: 0.4, wantReason: "aborted", wantRun: store.RunAborted,
		},
		{
			name:       "proceed on low confidence",
			responses:  `triage: [{confidence: 0.4, summary: unsure, next_step_context: ""}]`,
			edit:       func(s *pipeline.Step, _ *task.Request) { s.OnLowConfidence = pipeline.LowProceed },
			wantStatus: task.StatusCompleted, wantConf: 0.4, wantFlag: FlagProceedOnLow, wantRun: store.RunRunning,
		},
		{
			name:       "proceed on low confidence then proceed false stops",
			responses:  `triage: [{confidence: 0.4, summary: unsure, next_step_context: "", proceed: false, proceed_reason: halt}]`,
			edit:       func(s *pipeline.Step, _ *task.Request) { s.OnLowConfidence = pipeline.LowProceed },
			wantStatus: task.StatusStopped, wantConf: 0.4, wantReason: "halt", wantRun: store.RunStopped,
		},
		{
			name:      "executor timeout is returned typed and recorded",
			responses: `triage: [{error: timeout}]`,
			wantErr:   fault.NameExecutorTimeout, wantRun: store.RunRunning,
			check: func(t *testing.T, e *env, _ task.Response) {
				recs := stepRecords(t, e.st, "triage")
				if len(recs) != 1 || recs[0].Status != store.StepFailed || !strings.Contains(recs[0].Error, "timeout") {
					t.Fatalf("records = %+v, want one failed attempt with the error", recs)
				}
				if recs[0].Prompt == "" {
					t.Errorf("failed attempt has no prompt")
				}
			},
		},
		{
			name:      "invalid output after re-asks",
			responses: `triage: ["not json", "still not", "{\"confidence\": 2, \"summary\": \"x\", \"next_step_context\": \"\"}"]`,
			wantErr:   fault.NameInvalidOutput,
			check: func(t *testing.T, e *env, _ task.Response) {
				rec := stepRecords(t, e.st, "triage")[0]
				if rec.Status != store.StepFailed || rec.RawResponse == "" {
					t.Errorf("record status %s raw %q, want failed with the last reply", rec.Status, rec.RawResponse)
				}
			},
		},
		{
			name:       "re-ask recovers",
			responses:  `triage: ["not json", {confidence: 0.8, summary: fine, next_step_context: ""}]`,
			wantStatus: task.StatusCompleted, wantConf: 0.8,
		},
		{
			name: "verifier minimum",
			responses: `triage: [{confidence: 0.9, summary: sure, next_step_context: ""}]
triage:verifier: [{confidence: 0.6, summary: doubtful, next_step_context: ""}]`,
			edit:       func(s *pipeline.Step, _ *task.Request) { s.Verifier = verifier(pipeline.CombineMinimum, 0.6) },
			wantStatus: task.StatusEscalated, wantConf: 0.6,
			check: func(t *testing.T, e *env, _ task.Response) {
				rec := stepRecords(t, e.st, "triage")[0]
				if *rec.PrimaryConfidence != 0.9 || *rec.VerifierConfidence != 0.6 || *rec.EffectiveConfidence != 0.6 {
					t.Errorf("confidences %v/%v/%v, want 0.9/0.6/0.6", *rec.PrimaryConfidence, *rec.VerifierConfidence, *rec.EffectiveConfidence)
				}
				reqs := e.prov.reqs
				last := reqs[len(reqs)-1].Messages
				if !strings.Contains(last[len(last)-1].Content, "Triage critical for api") || !strings.Contains(last[len(last)-1].Content, `"summary":"sure"`) {
					t.Errorf("critic prompt lacks the primary prompt and answer: %q", last[len(last)-1].Content)
				}
			},
		},
		{
			name: "verifier never raises confidence",
			responses: `triage: [{confidence: 0.8, summary: sure, next_step_context: ""}]
triage:verifier: [{confidence: 0.99, summary: great, next_step_context: ""}]`,
			edit:       func(s *pipeline.Step, _ *task.Request) { s.Verifier = verifier(pipeline.CombineMinimum, 0.6) },
			wantStatus: task.StatusCompleted, wantConf: 0.8,
		},
		{
			name: "verifier veto above the floor keeps primary",
			responses: `triage: [{confidence: 0.9, summary: sure, next_step_context: ""}]
triage:verifier: [{confidence: 0.7, summary: ok, next_step_context: ""}]`,
			edit:       func(s *pipeline.Step, _ *task.Request) { s.Verifier = verifier(pipeline.CombineVeto, 0.6) },
			wantStatus: task.StatusCompleted, wantConf: 0.9,
		},
		{
			name: "verifier veto below the floor",
			responses: `triage: [{confidence: 0.9, summary: sure, next_step_context: ""}]
triage:verifier: [{confidence: 0.55, summary: no, next_step_context: ""}]`,
			edit:       func(s *pipeline.Step, _ *task.Request) { s.Verifier = verifier(pipeline.CombineVeto, 0.6) },
			wantStatus: task.StatusEscalated, wantConf: 0.55,
		},
		{
			name: "verifier failure is a warning",
			responses: `triage: [{confidence: 0.9, summary: sure, next_step_context: ""}]
triage:verifier: [{error: "http 500"}]`,
			edit:       func(s *pipeline.Step, _ *task.Request) { s.Verifier = verifier(pipeline.CombineMinimum, 0.6) },
			wantStatus: task.StatusCompleted, wantConf: 0.9, wantFlag: FlagVerifierFailed,
		},
		{
			name:      "verifier not triggered at confidence 1",
			responses: `triage: [{confidence: 1, summary: sure, next_step_context: ""}]`,
			edit: func(s *pipeline.Step, _ *task.Request) {
				s.Verifier = verifier(pipeline.CombineMinimum, 0.6)
			},
			wantStatus: task.StatusCompleted, wantConf: 1,
			check: func(t *testing.T, e *env, _ task.Response) {
				if rec := stepRecords(t, e.st, "triage")[0]; rec.VerifierConfidence != nil || slices.Contains(rec.Flags, FlagVerifierFailed) {
					t.Errorf("verifier ran: %+v", rec)
				}
			},
		},
		{
			name: "independent verifier reruns the prompt blind",
			responses: `triage: [{confidence: 0.9, summary: sure, next_step_context: ""}]
triage:verifier: [{confidence: 0.8, summary: mine, next_step_context: ""}]`,
			edit: func(s *pipeline.Step, _ *task.Request) {
				s.Verifier = verifier(pipeline.CombineMinimum, 0.6)
				s.Verifier.Mode = pipeline.ModeIndependent
			},
			wantStatus: task.StatusCompleted, wantConf: 0.8,
			check: func(t *testing.T, e *env, _ task.Response) {
				last := e.prov.reqs[len(e.prov.reqs)-1].Messages
				if got := last[len(last)-1].Content; got != "Triage critical for api" {
					t.Errorf("independent verifier prompt = %q, want the primary prompt", got)
				}
			},
		},
		{
			name:      "loop_until converges",
			responses: `triage: [{confidence: 0.5, summary: first, next_step_context: ""}, {confidence: 0.95, summary: second, next_step_context: ""}]`,
			edit: func(s *pipeline.Step, _ *task.Request) {
				s.LoopUntil = &pipeline.LoopUntil{Confidence: 0.9, MaxIterations: 3}
				s.PromptTemplate = "try {{ loop.iteration }}/{{ loop.max_iterations }} prior {{ loop.prior_confidence }} {{ loop.prior_output.summary }}"
			},
			wantStatus: task.StatusCompleted, wantConf: 0.95, wantFlag: FlagLoopConverged + ":2",
			check: func(t *testing.T, e *env, _ task.Response) {
				if rec := stepRecords(t, e.st, "triage")[0]; rec.Prompt != "try 2/3 prior 0.5 first" {
					t.Errorf("second iteration prompt = %q", rec.Prompt)
				}
			},
		},
		{
			name:      "loop_until exhausts then gates",
			responses: `triage: [{confidence: 0.5, summary: first, next_step_context: ""}, {confidence: 0.7, summary: second, next_step_context: ""}]`,
			edit: func(s *pipeline.Step, _ *task.Request) {
				s.LoopUntil = &pipeline.LoopUntil{Confidence: 0.9, MaxIterations: 2}
			},
			wantStatus: task.StatusEscalated, wantConf: 0.7, wantFlag: FlagLoopExhausted + ":2",
		},
		{
			name:      "token budget exceeded",
			responses: `triage: [{confidence: 0.9, summary: fine, next_step_context: ""}]`,
			edit: func(_ *pipeline.Step, r *task.Request) {
				r.Pipeline.Budget = &pipeline.Budget{MaxTokens: ptr(int64(50000))}
				r.Usage = task.Usage{InputTokens: 50000, OutputTokens: 8500}
			},
			wantStatus: task.StatusAborted, wantConf: 0.9, wantFlag: FlagBudgetExceeded, wantRun: store.RunAborted,
			wantReason: "Token budget exceeded: 60,000 tokens used (limit: 50,000)",
			check: func(t *testing.T, e *env, resp task.Response) {
				if resp.Usage.InputTokens != 51000 || resp.Usage.OutputTokens != 9000 {
					t.Errorf("usage = %+v, want the run totals after the step", resp.Usage)
				}
			},
		},
		{
			name:      "cost budget exceeded",
			responses: `triage: [{confidence: 0.9, summary: fine, next_step_context: ""}]`,
			edit: func(_ *pipeline.Step, r *task.Request) {
				r.Pipeline.Budget = &pipeline.Budget{MaxUSD: ptr(0.01)}
				r.Usage = task.Usage{CostUSD: 0.009}
			},
			wantStatus: task.StatusAborted, wantConf: 0.9, wantRun: store.RunAborted,
			wantReason: "Cost budget exceeded: $0.0125 used (limit: $0.0100)",
			check: func(t *testing.T, e *env, resp task.Response) {
				rec := stepRecords(t, e.st, "triage")[0]
				if rec.CostUSD == nil || *rec.CostUSD != 0.0035 {
					t.Errorf("record cost = %v, want 0.0035", rec.CostUSD)
				}
			},
		},
		{
			name:      "template error names step, field and line",
			responses: `triage: []`,
			edit: func(s *pipeline.Step, _ *task.Request) {
				s.PromptTemplate = "line one\n{{ steps.never_ran.summary }}"
			},
			wantErr: fault.NameTemplateError,
			check: func(t *testing.T, e *env, _ task.Response) {
				rec := stepRecords(t, e.st, "triage")[0]
				for _, want := range []string{`step "triage"`, "prompt_template", "line 2", "never_ran"} {
					if !strings.Contains(rec.Error, want) {
						t.Errorf("error %q lacks %q", rec.Error, want)
					}
				}
			},
		},
		{
			name:      "template syntax error",
			responses: `triage: []`,
			edit:      func(s *pipeline.Step, _ *task.Request) { s.PromptTemplate = "ok\n\n{% if %}x{% endif %}" },
			wantErr:   fault.NameTemplateError,
			check: func(t *testing.T, e *env, _ task.Response) {
				if rec := stepRecords(t, e.st, "triage")[0]; !strings.Contains(rec.Error, "line 3") {
					t.Errorf("error %q does not name line 3", rec.Error)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.responses)
			e.prov.usage = llmoutput.Usage{InputTokens: 1000, OutputTokens: 500}
			tbl, err := pricing.New([]pricing.Entry{{Provider: "test", ModelPrefix: "test-model", InputPerMTok: 2, OutputPerMTok: 3}})
			if err != nil {
				t.Fatal(err)
			}
			e.h.Pricing = tbl
			st := seqStep("triage", "Triage {{ severity }} for {{ service }}")
			req := newRequest(t, task.ModeStep, nil)
			req.Pipeline.Include = []string{"severity", "labels.service"}
			if tc.edit != nil {
				tc.edit(&st, &req)
			}
			req.Step = mustJSON(t, st)
			resp, err := e.h.Respond(context.Background(), req)
			if tc.wantErr != "" {
				if err == nil || fault.Name(err) != tc.wantErr {
					t.Fatalf("err = %v (%s), want %s", err, fault.Name(err), tc.wantErr)
				}
			} else {
				if err != nil {
					t.Fatalf("Handle: %v", err)
				}
				if resp.Status != tc.wantStatus {
					t.Fatalf("status = %q (reason %q), want %q", resp.Status, resp.Reason, tc.wantStatus)
				}
				if got := decodeMap(t, resp.Output)["confidence"]; got != tc.wantConf {
					t.Errorf("output confidence = %v, want %v", got, tc.wantConf)
				}
				if !strings.Contains(resp.Reason, tc.wantReason) {
					t.Errorf("reason = %q, want it to contain %q", resp.Reason, tc.wantReason)
				}
				recs := stepRecords(t, e.st, "triage")
				if len(recs) != 1 {
					t.Fatalf("%d records, want 1", len(recs))
				}
				if rec := recs[0]; rec.EffectiveConfidence == nil || *rec.EffectiveConfidence != tc.wantConf {
					t.Errorf("recorded effective confidence = %v, want %v", rec.EffectiveConfidence, tc.wantConf)
				}
				if tc.wantFlag != "" && !slices.Contains(recs[0].Flags, tc.wantFlag) {
					t.Errorf("flags = %v, want %q", recs[0].Flags, tc.wantFlag)
				}
			}
			if tc.wantRun != "" {
				if got := getRun(t, e.st); got.Status != tc.wantRun {
					t.Errorf("run status = %q, want %q", got.Status, tc.wantRun)
				} else if tc.wantRun.Terminal() && got.Reason != resp.Reason {
					t.Errorf("run reason = %q, want %q", got.Reason, resp.Reason)
				}
			}
			if tc.check != nil {
				tc.check(t, e, resp)
			}
		})
	}
}

func TestStepRetriedAttemptsAreRecordedOnce(t *testing.T) {
	e := newEnv(t, `triage: [{error: "http 502"}, {confidence: 0.9, summary: ok, next_step_context: ""}]`)
	st := seqStep("triage", "go")
	ctx := context.Background()
	req := newRequest(t, task.ModeStep, st)
	if _, err := e.h.Respond(ctx, req); fault.Name(err) != fault.NameExecutorUnavailable {
		t.Fatalf("attempt 1: err = %v, want ExecutorUnavailable", err)
	}
	req.Attempt = 2
	if resp, err := e.h.Respond(ctx, req); err != nil || resp.Status != task.StatusCompleted {
		t.Fatalf("attempt 2: %v %v", resp.Status, err)
	}
	recs := stepRecords(t, e.st, "triage")
	if len(recs) != 2 || recs[0].Status != store.StepFailed || recs[1].Status != store.StepCompleted || recs[1].Attempt != 2 {
		t.Fatalf("records = %+v", recs)
	}
}

func TestUnknownModeAndBadStep(t *testing.T) {
	e := newEnv(t, ``)
	tests := []struct {
		name string
		req  task.Request
	}{
		{"unknown mode", newRequest(t, "dance", seqStep("x", ""))},
		{"no step", func() task.Request { r := newRequest(t, task.ModeStep, nil); r.Step = nil; return r }()},
		{"malformed step", func() task.Request {
			r := newRequest(t, task.ModeStep, nil)
			r.Step = []byte(`{"name": 3}`)
			return r
		}()},
		{"no run", func() task.Request { r := newRequest(t, task.ModeStep, seqStep("x", "")); r.Run.ID = ""; return r }()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.h.Respond(context.Background(), tc.req)
			var ce *fault.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
		})
	}
}
