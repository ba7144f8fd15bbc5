package steprun

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

func panel(join pipeline.Join) pipeline.Parallel {
	return pipeline.Parallel{Name: "panel", Join: join,
		Gate: pipeline.Gate{ConfidenceThreshold: 0.5, OnLowConfidence: pipeline.LowEscalate, OnAbort: "notify"},
		Branches: []*pipeline.Branch{
			{Name: "a", Executor: "scripted", PromptTemplate: "a", Weight: 2},
			{Name: "b-two", Executor: "scripted", PromptTemplate: "b", Weight: 1},
			{Name: "c", Executor: "scripted", PromptTemplate: "c", Weight: 1},
		}}
}

// runBranches runs every branch of a parallel group through the handler,
// as the Parallel state does, and returns their responses.
func runBranches(t *testing.T, e *env, p pipeline.Parallel) []task.Response {
	t.Helper()
	var out []task.Response
	for _, b := range p.Branches {
		req := newRequest(t, task.ModeBranch, b)
		req.Group = p.Name
		resp, err := e.h.Respond(context.Background(), req)
		if err != nil {
			t.Fatalf("branch %s: %v", b.Name, err)
		}
		out = append(out, resp)
	}
	return out
}

func TestParallelJoins(t *testing.T) {
	const replies = `a: [{confidence: 0.9, summary: a ok, next_step_context: "", proceed: false, proceed_reason: ignored}]
b-two: [{confidence: 0.6, summary: b ok, next_step_context: ""}]
c: [{error: "http 500"}]`
	tests := []struct {
		join       pipeline.Join
		want       float64
		wantStatus string
	}{
		{pipeline.JoinAllMustPass, 0, task.StatusEscalated},
		{pipeline.JoinAnyMustPass, 0.9, task.StatusCompleted},
		{pipeline.JoinWeightedAverage, (0.9*2 + 0.6*1 + 0) / 4, task.StatusCompleted},
	}
	for _, tc := range tests {
		t.Run(string(tc.join), func(t *testing.T) {
			e := newEnv(t, replies)
			p := panel(tc.join)
			branches := runBranches(t, e, p)
			if branches[2].Status != task.StatusFailed {
				t.Fatalf("branch c status = %q, want failed", branches[2].Status)
			}
			c := decodeMap(t, branches[2].Output)
			if c["confidence"] != 0.0 || c["failed"] != true || !strings.Contains(c["summary"].(string), "ExecutorUnavailable") {
				t.Errorf("failed branch output = %v", c)
			}
			req := newRequest(t, task.ModeJoin, p)
			req.Group = "panel"
			req.Branches = branches
			req.Usage = task.Usage{InputTokens: 10}
			resp, err := e.h.Respond(context.Background(), req)
			if err != nil {
				t.Fatalf("join: %v", err)
			}
			got := decodeMap(t, resp.Output)["confidence"].(float64)
			if math.Abs(got-tc.want) > 1e-9 || resp.Status != tc.wantStatus {
				t.Fatalf("join = %v %q, want %v %q", got, resp.Status, tc.want, tc.wantStatus)
			}
			for _, k := range []string{"panel", "a", "b-two", "c"} {
				if _, ok := resp.Steps[k]; !ok {
					t.Errorf("Steps lacks %q: %v", k, resp.Steps)
				}
			}
			if resp.Usage.InputTokens != 10 {
				t.Errorf("usage = %+v, want the request's totals plus branch usage", resp.Usage)
			}
			for _, name := range []string{"panel", "panel/a", "panel/b-two", "panel/c"} {
				if len(stepRecords(t, e.st, name)) != 1 {
					t.Errorf("no single record for %q", name)
				}
			}
		})
	}
}

func TestJoinCountsLostBranch(t *testing.T) {
	e := newEnv(t, `a: [{confidence: 0.8, summary: ok, next_step_context: ""}]`)
	p := panel(pipeline.JoinAllMustPass)
	p.Branches = p.Branches[:2]
	a := runBranches(t, e, pipeline.Parallel{Name: "panel", Branches: p.Branches[:1]})[0]
	// Branch b-two's Task failed in the state machine: its Catch output.
	lost := task.Response{Status: task.StatusFailed, Step: "b-two",
		Output: json.RawMessage(`{"confidence":0,"failed":true,"next_step_context":"","summary":"States.Timeout: timed out"}`),
		Usage:  task.Usage{InputTokens: 5}}
	req := newRequest(t, task.ModeJoin, p)
	req.Branches = []task.Response{a, lost}
	resp, err := e.h.Respond(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != task.StatusEscalated || decodeMap(t, resp.Output)["confidence"] != 0.0 {
		t.Fatalf("join = %q %s", resp.Status, resp.Output)
	}
	if resp.Usage.InputTokens != 5 {
		t.Errorf("usage %+v, want branch usage added", resp.Usage)
	}
	recs := stepRecords(t, e.st, "panel/b-two")
	if len(recs) != 1 || recs[0].Status != store.StepFailed || recs[0].Flags[0] != FlagBranchLost || recs[0].Error != "States.Timeout: timed out" {
		t.Fatalf("lost branch records = %+v", recs)
	}
	if got := decodeMap(t, resp.Steps["b-two"])["failed"]; got != true {
		t.Errorf("Steps[b-two] = %s, want the failed output", resp.Steps["b-two"])
	}
}

func fanOut(onEmpty string) pipeline.FanOut {
	return pipeline.FanOut{Name: "each", Over: "{{ steps.discover.items }}", As: "thing", Executor: "scripted",
		PromptTemplate: "check {{ thing }} ({{ fan_out_index }}/{{ fan_out_total }}) item={{ item }}",
		Join:           pipeline.JoinAllMustPass, MaxItems: 5, OnEmpty: onEmpty,
		Gate: pipeline.Gate{ConfidenceThreshold: 0.75, OnLowConfidence: pipeline.LowEscalate}}
}

func TestFanOut(t *testing.T) {
	t.Run("items", func(t *testing.T) {
		e := newEnv(t, `each/0: [{confidence: 0.9, summary: x ok, next_step_context: ""}]
each/1: [{confidence: 0.8, summary: y ok, next_step_context: ""}]`)
		fo := fanOut(pipeline.EmptyAbort)
		var branches []task.Response
		for i, item := range []string{"x", "y"} {
			req := newRequest(t, task.ModeBranch, fo)
			req.Group, req.Item, req.Index, req.Total = "each", mustJSON(t, item), i, 2
			resp, err := e.h.Respond(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Step != "each/"+string(rune('0'+i)) {
				t.Errorf("branch step = %q", resp.Step)
			}
			branches = append(branches, resp)
		}
		if rec := stepRecords(t, e.st, "each/1")[0]; rec.Prompt != "check y (1/2) item=y" {
			t.Errorf("fan-out prompt = %q", rec.Prompt)
		}
		req := newRequest(t, task.ModeJoin, fo)
		req.Branches = branches
		resp, err := e.h.Respond(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != task.StatusCompleted || decodeMap(t, resp.Output)["confidence"] != 0.8 {
			t.Fatalf("join = %q %s", resp.Status, resp.Output)
		}
		if _, ok := resp.Steps["each/1"]; !ok {
			t.Errorf("Steps lacks each/1: %v", resp.Steps)
		}
	})
	tests := []struct {
		name       string
		onEmpty    string
		err        *task.Error
		wantStatus string
		wantConf   float64
		wantReason string
		wantRun    store.RunStatus
	}{
		{"empty complete", pipeline.EmptyComplete, nil, task.StatusCompleted, 1, "", store.RunRunning},
		{"empty skip", pipeline.EmptySkip, nil, task.StatusCompleted, 1, "", store.RunRunning},
		// The reference runner's status: failed, not aborted.
		{"empty abort", pipeline.EmptyAbort, nil, task.StatusFailed, 0, "no items (on_empty: abort)", store.RunFailed},
		{"too many items", pipeline.EmptyComplete, &task.Error{Error: "Stepline.TooManyItems", Cause: "7 items, more than max_items 5"},
			task.StatusFailed, 0, "7 items, more than max_items 5", store.RunFailed},
		{"not a list", pipeline.EmptyComplete, &task.Error{Error: "Stepline.NotAList", Cause: "over: {{ steps.discover.items }} is not a list"},
			task.StatusFailed, 0, "is not a list", store.RunFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, ``)
			req := newRequest(t, task.ModeJoin, fanOut(tc.onEmpty))
			req.Error = tc.err
			resp, err := e.h.Respond(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			out := decodeMap(t, resp.Output)
			if resp.Status != tc.wantStatus || out["confidence"] != tc.wantConf || !strings.Contains(resp.Reason, tc.wantReason) {
				t.Fatalf("join = %q %v reason %q, want %q %v %q", resp.Status, out["confidence"], resp.Reason, tc.wantStatus, tc.wantConf, tc.wantReason)
			}
			if tc.wantStatus == task.StatusCompleted && out["summary"] != "No items" {
				t.Errorf("summary = %v, want No items", out["summary"])
			}
			if got := getRun(t, e.st).Status; got != tc.wantRun {
				t.Errorf("run status = %q, want %q", got, tc.wantRun)
			}
		})
	}
}
