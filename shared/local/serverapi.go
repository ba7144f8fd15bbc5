package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/rerun"
	"github.com/stepline/stepline/shared/schedule"
	"github.com/stepline/stepline/shared/store"
)

// Bounds of GET /runs, as the reference API has them.
const (
	DefaultRunsLimit = 50
	MaxRunsLimit     = 200
)

// loaded is one load of the pipeline files: what a reload swaps whole.
type loaded struct {
	machines  map[string]*asl.StateMachine // compiled, by pipeline name
	pipelines map[string]*pipeline.Pipeline
	files     map[string]string // pipeline name → its file
	order     []string          // names, in file-name (routing) order
	router    *intake.Router
	entries   []schedule.Entry
}

// load compiles every pipeline file of the server's directory. Any file
// that does not compile fails the whole load.
func (s *Server) load() (*loaded, error) {
	l := &loaded{machines: map[string]*asl.StateMachine{}, pipelines: map[string]*pipeline.Pipeline{}, files: map[string]string{}}
	files, err := filepath.Glob(filepath.Join(s.dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		sm, name, _, err := s.runner.Compile(f)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", f, err)
		}
		l.machines[name], l.files[name] = sm, f
	}
	ps, err := intake.LoadPipelinesIn(s.dir, s.project)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		l.pipelines[p.Name] = p
		l.order = append(l.order, p.Name)
		if sc := p.Schedule; sc != nil && sc.Cron != "" {
			e, err := schedule.NewEntry(p.Name, sc.Cron, sc.TimeZone)
			if err != nil {
				return nil, err
			}
			l.entries = append(l.entries, e)
		}
	}
	if l.router, err = intake.NewRouter(ps); err != nil {
		return nil, err
	}
	return l, nil
}

// current returns the pipelines in force.
func (s *Server) current() *loaded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}

// Reload loads the pipeline files again and puts them in force: routing,
// manual runs, reruns and schedules. When any file fails to load, the
// pipelines in force stay and the error is returned. Runs under way go on
// with the state machine they started with. It returns the number of
// pipelines loaded.
func (s *Server) Reload() (int, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	l, err := s.load()
	if err != nil {
		s.log.Error("reload", "err", err)
		return 0, err
	}
	s.mu.Lock()
	s.loaded = l
	s.mu.Unlock()
	s.intake.SetRouter(l.router)
	s.sched.SetEntries(l.entries)
	s.log.Info("pipelines reloaded", "pipelines", len(l.order), "schedules", len(l.entries))
	return len(l.order), nil
}

func (s *Server) serveReload(w http.ResponseWriter, c caller) {
	if len(s.tokens) > 0 && c.team != intake.AdminTeam {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "forbidden: only the admin token may reload"})
		return
	}
	n, err := s.Reload()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"status": "error", "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "reloaded", "pipelines_loaded": n})
}

func (s *Server) health(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "version": s.version,
		"active_runs": s.limiter.Active(), "max_concurrent_runs": s.maxRuns,
		"limits": map[string]any{
			"max_body_bytes":        MaxBodyBytes,
			"max_runs_limit":        MaxRunsLimit,
			"max_runs_offset":       store.MaxRunOffset,
			"max_rerun_input_bytes": rerun.MaxInputBytes,
			"read_timeout_seconds":  s.limits.ReadTimeout.Seconds(),
		},
	})
}

// listPipelines answers the loaded pipelines in routing order.
func (s *Server) listPipelines(w http.ResponseWriter) {
	l := s.current()
	out := make([]map[string]any, 0, len(l.order))
	for _, name := range l.order {
		p := l.pipelines[name]
		tags := p.Tags
		if tags == nil {
			tags = []string{}
		}
		out = append(out, map[string]any{
			"name": p.Name, "description": p.Description, "version": p.Version, "stage": p.Stage, "tags": tags,
			"schedule": p.Schedule != nil && p.Schedule.Cron != "",
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"pipelines": out})
}

// getPipeline answers one pipeline, resolved (library steps merged,
// defaults applied), with the YAML of its file.
func (s *Server) getPipeline(w http.ResponseWriter, name string) {
	l := s.current()
	p, ok := l.pipelines[name]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no pipeline %q", name)})
		return
	}
	raw, err := os.ReadFile(l.files[name])
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "read pipeline file: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "config": p, "yaml": string(raw)})
}

// queryInt reads a whole-number query parameter in lo..hi, def when absent.
func queryInt(v string, def, lo, hi int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

// listRuns lists the runs c may see: a team's own, or, for everyone else,
// all runs or those of ?team=.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, c caller) {
	q := r.URL.Query()
	limit, ok := queryInt(q.Get("limit"), DefaultRunsLimit, 1, MaxRunsLimit)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("limit=%q: want a whole number from 1 to %d", q.Get("limit"), MaxRunsLimit)})
		return
	}
	offset, ok := queryInt(q.Get("offset"), 0, 0, store.MaxRunOffset)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("offset=%q: want a whole number from 0 to %d", q.Get("offset"), store.MaxRunOffset)})
		return
	}
	f := store.RunFilter{Pipeline: q.Get("pipeline"), Status: store.RunStatus(q.Get("status")), Team: q.Get("team"),
		Stage: q.Get("stage"), Limit: limit, Offset: offset}
	answer := func(runs []store.Run) {
		out := make([]map[string]any, len(runs))
		for i, run := range runs {
			out[i] = runView(run)
		}
		writeJSON(w, http.StatusOK, map[string]any{"runs": out, "limit": limit, "offset": offset})
	}
	if !c.all {
		if f.Team != "" && f.Team != c.team {
			answer(nil) // another team's: none of them is visible
			return
		}
		f.Team = c.team
	}
	found, err := s.runner.Store.ListRuns(r.Context(), f)
	if errors.Is(err, store.ErrInvalid) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	answer(found)
}

// runView is a run as the API answers it: its fields, and the reference
// API's names for the same facts (pipeline_name, triggered_at,
// normalised_context).
func runView(run store.Run) map[string]any {
	m := toMap(run)
	m["pipeline_name"] = run.Pipeline
	m["triggered_at"] = run.StartedAt
	if _, ok := m["completed_at"]; !ok {
		m["completed_at"] = nil
	}
	if len(run.Trigger) > 0 {
		m["normalised_context"] = run.Trigger
	}
	return m
}

// stepView is a step record as the API answers it, with the reference
// API's names: parsed_output, executed_at.
func stepView(rec store.StepRecord) map[string]any {
	m := toMap(rec)
	if len(rec.Output) > 0 {
		m["parsed_output"] = rec.Output
	}
	m["executed_at"] = rec.FinishedAt
	return m
}

func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	return m
}

// getRun answers a run with its steps; another team's run is answered as
// a run that does not exist.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request, c caller, id string) {
	run, steps, err := s.runner.Store.GetRunWithSteps(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.sees(run.Team)) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no run " + id})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	views := make([]map[string]any, len(steps))
	for i, rec := range steps {
		views[i] = stepView(rec)
	}
	out := runView(run)
	out["run"], out["steps"] = run, views
	writeJSON(w, http.StatusOK, out)
}

// MaxRerunBodyBytes bounds the body of POST /runs/{id}/rerun.
const MaxRerunBodyBytes = 16 << 10

// rerun starts a rerun of run id from the body's from_step.
func (s *Server) rerun(w http.ResponseWriter, r *http.Request, c caller, id string) {
	body, ok := readBody(w, r, MaxRerunBodyBytes)
	if !ok {
		return
	}
	var req struct {
		FromStep *string `json:"from_step"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body: want {\"from_step\": \"<step>\"}: " + err.Error()})
			return
		}
	}
	from := ""
	if req.FromStep != nil {
		if from = *req.FromStep; from == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "from_step is empty: name a sequential step, or leave it out to rerun from the first"})
			return
		}
	}
	orig, err := s.runner.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.sees(orig.Team)) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no run " + id})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	l := s.current()
	p, sm := l.pipelines[orig.Pipeline], l.machines[orig.Pipeline]
	if p == nil || sm == nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": fmt.Sprintf("run %s is of pipeline %q, which is not loaded", id, orig.Pipeline)})
		return
	}
	newID := intake.NewRunID()
	if err := s.limiter.Admit(r.Context(), newID); err != nil {
		var over *intake.OverloadedError
		if errors.As(err, &over) {
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"status": "overloaded", "active_runs": over.Active, "max_concurrent_runs": over.Max})
			return
		}
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	plan, err := s.runner.PrepareRerun(r.Context(), p, id, from, newID)
	if err != nil {
		s.limiter.Release(newID)
		writeJSON(w, rerun.HTTPStatus(err), map[string]string{"error": err.Error()})
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.limiter.Release(newID)
		o, err := s.runner.StartRerun(s.ctx, sm, orig.Pipeline, plan)
		if err != nil {
			s.log.Error("rerun", "run", newID, "original", id, "err", err)
			s.failUnstarted(newID, err)
			return
		}
		s.log.Info("rerun settled", "run", newID, "original", id, "from", plan.FromStep, "status", o.Status)
	}()
	writeJSON(w, http.StatusAccepted, map[string]any{
		"status": "accepted", "run_id": newID, "original_run_id": id, "from_step": plan.FromStep,
		"prior_steps_loaded": len(plan.Reused),
	})
}

// failUnstarted closes the record of a run whose start failed.
func (s *Server) failUnstarted(runID string, cause error) {
	now := time.Now().UTC()
	err := s.runner.Store.UpdateRun(context.WithoutCancel(s.ctx), runID, store.RunUpdate{Status: store.RunFailed, Reason: "start: " + cause.Error(), CompletedAt: &now})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		s.log.Error("mark unstarted run failed", "run", runID, "err", err)
	}
}

// fire starts the run of a schedule's tick, as EventBridge Scheduler does
// on AWS: source "scheduler", the schedule's summary, severity, labels
// and team, received at the tick.
func (s *Server) fire(ctx context.Context, e schedule.Entry, tick time.Time, runID string) error {
	p := s.current().pipelines[e.Pipeline]
	if p == nil || p.Schedule == nil {
		return fmt.Errorf("pipeline %q is not loaded with a schedule", e.Pipeline)
	}
	sc := p.Schedule
	tz := sc.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	event := intake.Context{
		Source: "scheduler", Pipeline: p.Name, Severity: sc.Severity, Summary: sc.Summary, Labels: sc.Labels, Team: sc.Team,
		Metadata:   map[string]any{"cron": sc.Cron, "timezone": tz, "scheduled_time": tick.UTC().Format(time.RFC3339)},
		ReceivedAt: tick,
	}
	_, err := s.intake.Accept(ctx, intake.Request{Manual: true, PipelineName: p.Name, Event: &event, RunID: runID})
	return err
}
