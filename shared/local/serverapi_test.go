package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/runview"
	"github.com/stepline/stepline/shared/store"
)

// stillClock is a schedule clock stopped at one instant: the scheduler
// checks once, at start, and then waits until the server stops.
type stillClock struct{ now time.Time }

func (c stillClock) Now() time.Time { return c.now }
func (c stillClock) Sleep(ctx context.Context, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// serveScenario serves the pipelines of dir (see openScenario) with
// scripted replies, tokens (nil: none) and a schedule clock.
func serveScenario(t *testing.T, dir string, responses *executor.Responses, tokens inbound.Tokens, clock stillClock) (string, *Server, *Runner) {
	t.Helper()
	r := reopen(t, dir, responses)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := NewServer(ctx, ServerConfig{
		Runner: r, PipelinesDir: dir, Tokens: tokens, MaxRuns: 100, Version: "test-1",
		Signer:        &approval.Signer{Key: []byte("0123456789abcdef0123456789abcdef")},
		ScheduleClock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.StartSchedules()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	go func() { _ = hs.Serve(ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = hs.Close()
			cancel()
			srv.Wait()
		})
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String(), srv, r
}

func decode(t *testing.T, a httpAnswer, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(a.body), v); err != nil {
		t.Fatalf("answer %d %q: %v", a.status, a.body, err)
	}
}

// waitRun polls GET /runs/{id} until the run has ended.
func waitRun(t *testing.T, base, token, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		a := do(t, "GET", base+"/runs/"+id, token, "", "")
		if a.status == http.StatusOK {
			var v map[string]any
			decode(t, a, &v)
			if st, _ := v["status"].(string); store.RunStatus(st).Terminal() {
				return v
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s did not end", id)
	return nil
}

const rerunResponses = "a: [%s, %s]\nb1: [%s, %s]\nb2: [%s, %s]\nc: [%s, %s]\nd: [%s, %s]\n"

func scriptedRerunReplies(t *testing.T) *executor.Responses {
	t.Helper()
	var args []any
	for _, s := range []string{"a", "b1", "b2", "c", "d"} {
		args = append(args, reply(0.9, s+" first", ""), reply(0.9, s+" second", ""))
	}
	rs, err := executor.ParseResponses("r.yaml", []byte(fmt.Sprintf(rerunResponses, args...)))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestServerRerun: a run started by name, rerun from c over HTTP: 202
// with the reference's fields, the reused records flagged; and the
// errors, each a clear 4xx.
func TestServerRerun(t *testing.T) {
	r0, dir, _ := openScenario(t, map[string]string{"p.yaml": "stage: production\n" + rerunPipeline}, "")
	r0.Close()
	base, _, _ := serveScenario(t, dir, scriptedRerunReplies(t), testTokens, stillClock{now: time.Now()})

	a := do(t, "POST", base+"/pipelines/p/run", tokCheckout, "application/json", `{"summary": "by hand"}`)
	if a.status != http.StatusAccepted {
		t.Fatalf("manual run: %d %s", a.status, a.body)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	decode(t, a, &started)
	first := waitRun(t, base, tokCheckout, started.RunID)
	if first["status"] != "completed" || first["pipeline_name"] != "p" || first["team"] != "checkout" {
		t.Fatalf("first run %v", first)
	}

	a = do(t, "POST", base+"/runs/"+started.RunID+"/rerun", tokCheckout, "application/json", `{"from_step": "c"}`)
	if a.status != http.StatusAccepted {
		t.Fatalf("rerun: %d %s", a.status, a.body)
	}
	var rr struct {
		Status, RunID, OriginalRunID, FromStep string
		PriorStepsLoaded                       int `json:"prior_steps_loaded"`
	}
	var raw map[string]any
	decode(t, a, &raw)
	rr.Status, rr.RunID, _ = raw["status"].(string), raw["run_id"].(string), 0
	rr.OriginalRunID, rr.FromStep = raw["original_run_id"].(string), raw["from_step"].(string)
	if rr.Status != "accepted" || rr.OriginalRunID != started.RunID || rr.FromStep != "c" || raw["prior_steps_loaded"] != float64(4) {
		t.Fatalf("rerun answer %v", raw)
	}
	second := waitRun(t, base, tokCheckout, rr.RunID)
	if second["status"] != "completed" || second["source"] != "rerun" || second["team"] != "checkout" {
		t.Fatalf("rerun %v", second)
	}
	var reused, ran []string
	for _, s := range second["steps"].([]any) {
		st := s.(map[string]any)
		flags, _ := st["flags"].([]any)
		if slices.Contains(flags, any(store.FlagReused)) {
			reused = append(reused, st["name"].(string))
		} else {
			ran = append(ran, st["name"].(string))
		}
		if st["parsed_output"] == nil || st["executed_at"] == nil {
			t.Errorf("step view %v", st)
		}
	}
	slices.Sort(reused)
	if strings.Join(reused, ",") != "a,g,g/b1,g/b2" || strings.Join(ran, ",") != "c,d" {
		t.Errorf("reused %v, ran %v", reused, ran)
	}

	tests := []struct {
		name, token, path, body string
		want                    int
		msg                     string
	}{
		{"unknown run", tokCheckout, "/runs/run-ghost/rerun", `{"from_step": "c"}`, 404, "no run run-ghost"},
		{"another team's run", tokPayments, "/runs/" + started.RunID + "/rerun", `{"from_step": "c"}`, 404, "no run"},
		{"unknown step", tokCheckout, "/runs/" + started.RunID + "/rerun", `{"from_step": "zz"}`, 422, `has no step \"zz\"`},
		{"a group", tokCheckout, "/runs/" + started.RunID + "/rerun", `{"from_step": "g"}`, 422, "not a sequential step"},
		{"empty step", tokCheckout, "/runs/" + started.RunID + "/rerun", `{"from_step": ""}`, 422, "from_step is empty"},
		{"not JSON", tokCheckout, "/runs/" + started.RunID + "/rerun", `from_step=c`, 400, "want {"},
		{"body too large", tokCheckout, "/runs/" + started.RunID + "/rerun", `{"x": "` + strings.Repeat("x", MaxRerunBodyBytes) + `"}`, 413, "too large"},
		{"no token", "", "/runs/" + started.RunID + "/rerun", `{"from_step": "c"}`, 401, "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := do(t, "POST", base+tt.path, tt.token, "application/json", tt.body)
			if a.status != tt.want || !strings.Contains(a.body, tt.msg) {
				t.Fatalf("%d %s, want %d with %q", a.status, a.body, tt.want, tt.msg)
			}
		})
	}
	if a := do(t, "GET", base+"/runs/"+started.RunID+"/rerun", tokCheckout, "", ""); a.status != http.StatusMethodNotAllowed {
		t.Errorf("GET of rerun: %d", a.status)
	}
}

// TestServerQueries: GET /runs's filters and bounds, GET /pipelines,
// GET /pipelines/{name}, GET /health, POST /reload.
func TestServerQueries(t *testing.T) {
	base, srv := startServer(t, testTokens, HTTPLimits{})
	ctx := context.Background()
	for i := range 5 {
		stage := store.StageProduction
		if i%2 == 1 {
			stage = store.StageTesting
		}
		err := srv.runner.Store.CreateRun(ctx, store.Run{ID: fmt.Sprintf("q%d", i), Pipeline: "orders", Status: store.RunCompleted,
			Team: "checkout", Stage: stage, StartedAt: time.Date(2026, 2, 1, 0, i, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
	}
	list := func(query string) (int, []string, string) {
		a := do(t, "GET", base+"/runs"+query, tokCheckout, "", "")
		if a.status != http.StatusOK {
			return a.status, nil, a.body
		}
		var v struct {
			Runs []map[string]any `json:"runs"`
		}
		decode(t, a, &v)
		var ids []string
		for _, r := range v.Runs {
			if r["pipeline_name"] != r["pipeline"] || r["triggered_at"] != r["started_at"] {
				t.Errorf("summary %v lacks the reference's names", r)
			}
			ids = append(ids, r["id"].(string))
		}
		return a.status, ids, a.body
	}
	tests := []struct {
		query  string
		status int
		ids    string
	}{
		{"?stage=production&pipeline=orders", 200, "q4,q2,q0"},
		{"?stage=testing", 200, "q3,q1"},
		{"?limit=2", 200, "q4,q3"},
		{"?limit=2&offset=2", 200, "q2,q1"},
		{"?limit=2&offset=4", 200, "q0,run-checkout"},
		{"?offset=6", 200, ""},
		{"?limit=200", 200, "q4,q3,q2,q1,q0,run-checkout"},
		{"?limit=201", 400, ""},
		{"?limit=0", 400, ""},
		{"?limit=x", 400, ""},
		{"?offset=-1", 400, ""},
		{fmt.Sprintf("?offset=%d", store.MaxRunOffset), 200, ""},
		{fmt.Sprintf("?offset=%d", store.MaxRunOffset+1), 400, ""},
		{"?stage=staging", 400, ""},
		{"?status=done", 400, ""},
	}
	for _, tt := range tests {
		status, ids, body := list(tt.query)
		if status != tt.status || strings.Join(ids, ",") != tt.ids {
			t.Errorf("GET /runs%s = %d %v (%s), want %d [%s]", tt.query, status, ids, body, tt.status, tt.ids)
		}
	}

	a := do(t, "GET", base+"/pipelines", tokPayments, "", "")
	var ps struct {
		Pipelines []map[string]any `json:"pipelines"`
	}
	decode(t, a, &ps)
	if a.status != 200 || len(ps.Pipelines) != 1 || ps.Pipelines[0]["name"] != "orders" || ps.Pipelines[0]["stage"] != "production" {
		t.Errorf("GET /pipelines: %d %s", a.status, a.body)
	}
	a = do(t, "GET", base+"/pipelines/orders", tokPayments, "", "")
	var one map[string]any
	decode(t, a, &one)
	if a.status != 200 || one["yaml"] != ordersPipeline || one["config"].(map[string]any)["name"] != "orders" {
		t.Errorf("GET /pipelines/orders: %d %s", a.status, a.body)
	}
	if a := do(t, "GET", base+"/pipelines/ghost", tokPayments, "", ""); a.status != 404 {
		t.Errorf("GET /pipelines/ghost: %d", a.status)
	}
	if a := do(t, "GET", base+"/pipelines", "", "", ""); a.status != 401 {
		t.Errorf("GET /pipelines without a token: %d", a.status)
	}

	a = do(t, "GET", base+"/health", "", "", "")
	var h map[string]any
	decode(t, a, &h)
	if h["status"] != "ok" || h["max_concurrent_runs"] != float64(1000) || h["limits"].(map[string]any)["max_runs_limit"] != float64(runview.MaxLimit) {
		t.Errorf("health %v", h)
	}
	if _, ok := h["version"]; !ok {
		t.Errorf("health without a version: %v", h)
	}

	if a := do(t, "POST", base+"/reload", tokCheckout, "", ""); a.status != http.StatusForbidden {
		t.Errorf("reload by a team: %d %s", a.status, a.body)
	}
	a = do(t, "POST", base+"/reload", tokAdmin, "", "")
	if a.status != 200 || !strings.Contains(a.body, `"pipelines_loaded": 1`) || !strings.Contains(a.body, `"reloaded"`) {
		t.Errorf("reload by the admin: %d %s", a.status, a.body)
	}
}

// TestServerReload: a new file is served after a reload; a broken one
// fails the reload (500) and leaves the pipelines in force.
func TestServerReload(t *testing.T) {
	r0, dir, _ := openScenario(t, map[string]string{"p.yaml": rerunPipeline}, "")
	r0.Close()
	base, srv, _ := serveScenario(t, dir, scriptedRerunReplies(t), nil, stillClock{now: time.Now()})
	writeText(t, filepath.Join(dir, "q.yaml"), "name: q\nschedule: {cron: \"0 9 * * *\", timezone: Europe/Berlin}\nsteps:\n  - {name: a, executor: scripted}\n")
	if a := do(t, "GET", base+"/pipelines/q", "", "", ""); a.status != 404 {
		t.Fatalf("q before the reload: %d", a.status)
	}
	if n, err := srv.Reload(); err != nil || n != 2 {
		t.Fatalf("reload: %d, %v", n, err)
	}
	if a := do(t, "GET", base+"/pipelines/q", "", "", ""); a.status != 200 {
		t.Fatalf("q after the reload: %d", a.status)
	}
	a := do(t, "GET", base+"/schedules", "", "", "")
	if a.status != 200 || !strings.Contains(a.body, `"pipeline": "q"`) || !strings.Contains(a.body, `"timezone": "Europe/Berlin"`) {
		t.Fatalf("schedules after the reload: %s", a.body)
	}
	writeText(t, filepath.Join(dir, "r.yaml"), "name: r\nsteps:\n  - {name: a, executor: nope}\n")
	a = do(t, "POST", base+"/reload", "", "", "")
	if a.status != 500 || !strings.Contains(a.body, "r.yaml") {
		t.Fatalf("broken reload: %d %s", a.status, a.body)
	}
	if a := do(t, "GET", base+"/pipelines/q", "", "", ""); a.status != 200 {
		t.Fatalf("q after a failed reload: %d", a.status)
	}
}

// TestServerSchedules: a schedule fires once for its latest tick within
// the grace when the server starts, not again when a second server
// starts on the same state; GET /schedules shows the next fire in the
// pipeline's time zone.
func TestServerSchedules(t *testing.T) {
	pipelineYAML := "name: nightly\nschedule: {cron: \"0 * * * *\", summary: hourly check, team: sre, labels: {kind: cron}}\nsteps:\n  - {name: a, executor: scripted}\n" +
		"" // testing stage: schedules fire in any stage
	r0, dir, _ := openScenario(t, map[string]string{"nightly.yaml": pipelineYAML}, "")
	r0.Close()
	replies, err := executor.ParseResponses("r.yaml", []byte("a: ["+reply(0.9, "one", "")+", "+reply(0.9, "two", "")+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 2, 12, 4, 30, 0, time.UTC) // 4.5 minutes after the 12:00 tick
	base, _, r := serveScenario(t, dir, replies, nil, stillClock{now: now})
	var runs []store.Run
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		runs, err = r.Store.ListRuns(context.Background(), store.RunFilter{Pipeline: "nightly"})
		if err == nil && len(runs) == 1 && runs[0].Status.Terminal() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(runs) != 1 || runs[0].Source != "scheduler" || runs[0].Team != "sre" || runs[0].Status != store.RunCompleted {
		t.Fatalf("scheduled runs %+v", runs)
	}
	full, err := r.Store.GetRun(context.Background(), runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var trig map[string]any
	_ = json.Unmarshal(full.Trigger, &trig)
	if trig["summary"] != "hourly check" || trig["metadata"].(map[string]any)["scheduled_time"] != "2026-03-02T12:00:00Z" {
		t.Errorf("trigger %s", full.Trigger)
	}
	a := do(t, "GET", base+"/schedules", "", "", "")
	var v struct {
		Schedules []struct {
			Pipeline, Cron, Timezone string
			NextRun                  time.Time `json:"next_run"`
		} `json:"schedules"`
	}
	decode(t, a, &v)
	if len(v.Schedules) != 1 || v.Schedules[0].Pipeline != "nightly" || v.Schedules[0].Timezone != "UTC" ||
		!v.Schedules[0].NextRun.Equal(time.Date(2026, 3, 2, 13, 0, 0, 0, time.UTC)) {
		t.Errorf("schedules %s", a.body)
	}

	// Another server over the same state, a minute later: the tick is
	// claimed, nothing fires again.
	serveScenario(t, dir, replies, nil, stillClock{now: now.Add(time.Minute)})
	time.Sleep(300 * time.Millisecond)
	runs, err = r.Store.ListRuns(context.Background(), store.RunFilter{Pipeline: "nightly"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("after a second server: %d runs, %v", len(runs), err)
	}
}
