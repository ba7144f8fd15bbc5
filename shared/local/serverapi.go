package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/rerun"
	"github.com/stepline/stepline/shared/runview"
	"github.com/stepline/stepline/shared/schedule"
	"github.com/stepline/stepline/shared/store"
)

// loaded is one load of the pipeline files: what a reload swaps whole.
type loaded struct {
	machines  map[string]*asl.StateMachine // compiled, by pipeline name
	pipelines map[string]*pipeline.Pipeline
	files     map[string]string // pipeline name → its file
	order     []string          // names, in file-name (routing) order
	router    *inbound.Router
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
	if l.router, err = inbound.NewRouter(ps); err != nil {
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
	if len(s.tokens) > 0 && c.team != inbound.AdminTeam {
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
			"max_runs_limit":        runview.MaxLimit,
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

// listRuns lists the runs c may see: a team's own, or, for everyone else,
// all runs or those of ?team=.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, c caller) {
	f, err := runview.Filter(r.URL.Query())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if !c.all {
		if f.Team != "" && f.Team != c.team {
			writeJSON(w, http.StatusOK, runview.List(nil, f)) // another team's: none of them is visible
			return
		}
		f.Team = c.team
	}
	found, err := s.runner.Store.ListRuns(r.Context(), f)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, runview.List(found, f))
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
	writeJSON(w, http.StatusOK, runview.Detail(run, steps))
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
	newID := inbound.NewRunID()
	if err := s.limiter.Admit(r.Context(), newID); err != nil {
		var over *inbound.OverloadedError
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
	event := inbound.Context{
		Source: "scheduler", Pipeline: p.Name, Severity: sc.Severity, Summary: sc.Summary, Labels: sc.Labels, Team: sc.Team,
		Metadata:   map[string]any{"cron": sc.Cron, "timezone": tz, "scheduled_time": tick.UTC().Format(time.RFC3339)},
		ReceivedAt: tick,
	}
	_, err := s.intake.Accept(ctx, inbound.Request{Manual: true, PipelineName: p.Name, Event: &event, RunID: runID})
	return err
}
