package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/shared/schedule"
	"github.com/stepline/stepline/shared/store"
)

// runRequest is the manual-run request turned into method path on the
// IAM-authorized routes (a catch-all route: the path decides).
func runRequest(t *testing.T, method, path, query, body string) json.RawMessage {
	return apiRequest(t, "apigw-pipeline-run.json", func(ev *events.APIGatewayV2HTTPRequest) {
		ev.RequestContext.HTTP.Method, ev.RawPath, ev.RawQueryString, ev.Body = method, path, query, body
		ev.RouteKey, ev.PathParameters = "$default", nil
	})
}

func TestRunRoutes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, id := range []string{"r1", "r2", "r3"} {
		stage := store.StageProduction
		if id == "r2" {
			stage = store.StageTesting
		}
		if err := e.store.CreateRun(ctx, store.Run{ID: id, Pipeline: "rie-orders", Status: store.RunCompleted, Stage: stage, Team: "shop",
			Trigger: json.RawMessage(`{"source": "generic", "labels": {"event": "order.created"}, "fingerprint": "f"}`), StartedAt: at.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.store.PutStep(ctx, store.StepRecord{RunID: "r1", Name: "validate", Attempt: 1, Status: store.StepCompleted,
		Output: json.RawMessage(`{"confidence":0.9,"summary":"ok","next_step_context":""}`), StartedAt: at, FinishedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateRun(ctx, store.Run{ID: "busy", Pipeline: "rie-orders", Status: store.RunRunning, StartedAt: at}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, method, path, query, body string
		status                          int
		has                             string
	}{
		{"list", "GET", "/runs", "", "", 200, `"pipeline_name":"rie-orders"`},
		{"list by stage", "GET", "/runs", "stage=testing", "", 200, `"id":"r2"`},
		{"list past the end", "GET", "/runs", "offset=10", "", 200, `"runs":[]`},
		{"limit above 200", "GET", "/runs", "limit=201", "", 400, "limit"},
		{"negative offset", "GET", "/runs", "offset=-1", "", 400, "offset"},
		{"unknown stage", "GET", "/runs", "stage=staging", "", 400, "stage"},
		{"one run", "GET", "/runs/r1", "", "", 200, `"parsed_output"`},
		{"unknown run", "GET", "/runs/nope", "", "", 404, "no run nope"},
		{"list by POST", "POST", "/runs", "", "", 405, "use GET"},
		{"rerun unknown run", "POST", "/runs/nope/rerun", "", `{"from_step": "validate"}`, 404, "no run nope"},
		{"rerun unknown step", "POST", "/runs/r1/rerun", "", `{"from_step": "zz"}`, 422, `has no step \"zz\"`},
		{"rerun active run", "POST", "/runs/busy/rerun", "", `{"from_step": "validate"}`, 409, "still active"},
		{"rerun bad body", "POST", "/runs/r1/rerun", "", `{`, 400, "from_step"},
		{"rerun body too large", "POST", "/runs/r1/rerun", "", `{"x":"` + strings.Repeat("x", MaxRerunBodyBytes) + `"}`, 413, "too large"},
		{"rerun by GET", "GET", "/runs/r1/rerun", "", "", 405, "use POST"},
		{"rerun", "POST", "/runs/r1/rerun", "", `{"from_step": "validate"}`, 202, `"original_run_id":"r1"`},
		{"manual run, the reference's path", "POST", "/pipelines/rie-orders/run", "", `{}`, 202, `"status":"accepted"`},
		{"pipelines", "GET", "/pipelines", "", "", 200, `{"description":"Orders from the shop's generic webhook.","name":"rie-orders","schedule":false,"stage":"production","tags":[],"version":1}`},
		{"a pipeline", "GET", "/pipelines/rie-orders", "", "", 200, `"yaml":"# Routed by trigger.match`},
		{"an unknown pipeline", "GET", "/pipelines/nope", "", "", 404, "no pipeline nope"},
		{"a pipeline by POST", "POST", "/pipelines/rie-orders", "", "", 405, "use GET"},
		{"schedules", "GET", "/schedules", "", "", 200, `"schedules":[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.h.Handle(ctx, runRequest(t, tt.method, tt.path, tt.query, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp := out.(events.APIGatewayV2HTTPResponse)
			if resp.StatusCode != tt.status || !strings.Contains(resp.Body, tt.has) {
				t.Fatalf("%d %s, want %d with %s", resp.StatusCode, resp.Body, tt.status, tt.has)
			}
		})
	}
	// The rerun's execution: named after the new run, the rerun block in
	// its input; the new run recorded with source rerun.
	starts := e.starts.started()
	if len(starts) != 2 {
		t.Fatalf("%d executions started, want 2", len(starts))
	}
	var in struct {
		Trigger map[string]any `json:"trigger"`
		Rerun   struct {
			OriginalRunID string                     `json:"original_run_id"`
			FromStep      string                     `json:"from_step"`
			Steps         map[string]json.RawMessage `json:"steps"`
		} `json:"rerun"`
	}
	if err := json.Unmarshal([]byte(starts[0].Input), &in); err != nil {
		t.Fatal(err)
	}
	if in.Rerun.OriginalRunID != "r1" || in.Rerun.FromStep != "validate" || len(in.Rerun.Steps) != 0 || in.Trigger["source"] != "rerun" ||
		starts[0].StateMachineARN != testMachines["rie-orders"] {
		t.Errorf("rerun execution %s %s", starts[0].StateMachineARN, starts[0].Input)
	}
	run, err := e.store.GetRun(ctx, starts[0].Name)
	if err != nil || run.Source != "rerun" || run.Team != "shop" || run.Fingerprint != "" || run.Status != store.RunRunning {
		t.Errorf("rerun record %+v, %v", run, err)
	}
}

// TestSchedulesRoute: GET /schedules answers each deployed schedule's
// next fire after now, in its time zone.
func TestSchedulesRoute(t *testing.T) {
	e := newEnv(t)
	berlin, err := schedule.NewEntry("nightly", "0 3 * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	e.h.deployed.entries = []schedule.Entry{berlin}
	out, err := e.h.Handle(context.Background(), runRequest(t, "GET", "/schedules", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Schedules []schedule.Upcoming `json:"schedules"`
	}
	resp := out.(events.APIGatewayV2HTTPResponse)
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil || len(v.Schedules) != 1 {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	got := v.Schedules[0]
	loc, _ := time.LoadLocation("Europe/Berlin")
	next := got.NextRun.In(loc)
	if got.Pipeline != "nightly" || got.TimeZone != "Europe/Berlin" || next.Hour() != 3 || next.Minute() != 0 ||
		!got.NextRun.After(time.Now()) || got.NextRun.After(time.Now().Add(25*time.Hour)) {
		t.Errorf("schedule %+v", got)
	}
}
