package local

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// Server is the local HTTP front door over a Runner: webhook intake,
// manual runs, run queries and approval links.
//
//	POST /webhook?source=alertmanager|generic   normalize, route, dedup, start (202)
//	POST /pipelines/{name}/runs                  start a run of a pipeline (202)
//	GET  /runs[?pipeline=&status=&limit=]        runs, newest first
//	GET  /runs/{id}                              a run with its steps
//	GET  /approvals/{token}                      the approval page of a signed link
//	POST /approvals/{token}                      decide it
//	GET  /health                                 liveness and active runs
type Server struct {
	runner    *Runner
	intake    *intake.Intake
	approvals *approval.Service
	limiter   *intake.Counter
	log       *slog.Logger

	mu       sync.Mutex
	machines map[string]*asl.StateMachine // compiled, by pipeline name
	ctx      context.Context              // runs started by requests live on this, not on the request
	wg       sync.WaitGroup
}

// ServerConfig wires a Server.
type ServerConfig struct {
	Runner       *Runner
	PipelinesDir string        // pipeline files, routed in file-name order
	Tokens       intake.Tokens // per-team webhook bearer tokens; empty: none required
	MaxRuns      int           // runs driven at once; more answer 429
	Signer       *approval.Signer
	Logger       *slog.Logger
}

// NewServer loads and compiles the pipelines and builds the server. Runs
// it starts live on ctx: cancel it to stop them at their next checkpoint.
func NewServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	maxRuns := cfg.MaxRuns
	if maxRuns <= 0 {
		maxRuns = intake.DefaultMaxRuns
	}
	s := &Server{runner: cfg.Runner, log: log, ctx: ctx, limiter: intake.NewCounter(maxRuns), machines: map[string]*asl.StateMachine{}}
	files, err := filepath.Glob(filepath.Join(cfg.PipelinesDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var loaded []*pipeline.Pipeline
	for _, f := range files {
		sm, name, _, err := cfg.Runner.Compile(f)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", f, err)
		}
		s.machines[name] = sm
	}
	loaded, err = intake.LoadPipelines(cfg.PipelinesDir)
	if err != nil {
		return nil, err
	}
	router, err := intake.NewRouter(loaded)
	if err != nil {
		return nil, err
	}
	s.intake, err = intake.New(intake.Config{
		Router: router, Store: cfg.Runner.Store, Starter: s, Limiter: s.limiter,
		Tokens: cfg.Tokens, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	if cfg.Signer != nil {
		s.approvals = &approval.Service{
			Store: cfg.Runner.Store, Signer: cfg.Signer, Logger: log,
			Complete: func(ctx context.Context, token string, d task.Decision) error {
				s.wg.Add(1)
				go func() { // the run goes on after the page answers
					defer s.wg.Done()
					if _, err := cfg.Runner.Complete(s.ctx, token, d); err != nil {
						s.log.Error("continue run after approval", "err", err)
					}
				}()
				return nil
			},
		}
	}
	return s, nil
}

// Start implements intake.Starter: the run is driven in the background.
func (s *Server) Start(_ context.Context, p *pipeline.Pipeline, runID string, trigger intake.Context) error {
	s.mu.Lock()
	sm := s.machines[p.Name]
	s.mu.Unlock()
	if sm == nil {
		return fmt.Errorf("pipeline %q is not compiled", p.Name)
	}
	b, err := json.Marshal(trigger)
	if err != nil {
		return err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.limiter.Release(runID)
		o, err := s.runner.Start(s.ctx, sm, p.Name, b, runID)
		if err != nil {
			s.log.Error("run", "run", runID, "pipeline", p.Name, "err", err)
			return
		}
		s.log.Info("run settled", "run", runID, "pipeline", p.Name, "status", o.Status, "reason", o.Reason)
	}()
	return nil
}

// Wait blocks until every run this server drives has settled or stopped.
func (s *Server) Wait() { s.wg.Wait() }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/health":
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "active_runs": s.limiter.Active()})
	case path == "/webhook" && r.Method == http.MethodPost:
		source := r.URL.Query().Get("source")
		if source == "" {
			source = r.Header.Get("X-Pipeline-Source")
		}
		s.accept(w, r, intake.Request{Source: source, Query: r.URL.Query(), Bearer: intake.BearerToken(r.Header.Get("Authorization"))})
	case strings.HasPrefix(path, "/pipelines/") && strings.HasSuffix(path, "/runs") && r.Method == http.MethodPost:
		name := strings.TrimSuffix(strings.TrimPrefix(path, "/pipelines/"), "/runs")
		s.accept(w, r, intake.Request{Source: "generic", Manual: true, PipelineName: name, Query: r.URL.Query(), Bearer: intake.BearerToken(r.Header.Get("Authorization"))})
	case path == "/runs" && r.Method == http.MethodGet:
		s.listRuns(w, r)
	case strings.HasPrefix(path, "/runs/") && r.Method == http.MethodGet:
		s.getRun(w, r, strings.TrimPrefix(path, "/runs/"))
	case strings.HasPrefix(r.URL.Path, "/approvals/") && s.approvals != nil:
		s.approvals.ServeHTTP(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
	}
}

func (s *Server) accept(w http.ResponseWriter, r *http.Request, req intake.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, intake.MaxBodyBytes+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "read body: " + err.Error()})
		return
	}
	req.Body = body
	d, err := s.intake.Accept(r.Context(), req)
	if err != nil {
		status := intake.HTTPStatus(err)
		resp := map[string]any{"error": err.Error()}
		var over *intake.OverloadedError
		if errors.As(err, &over) {
			resp = map[string]any{"status": "overloaded", "active_runs": over.Active, "max_concurrent_runs": over.Max}
		}
		writeJSON(w, status, resp)
		return
	}
	writeJSON(w, http.StatusAccepted, d.Response())
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 50
	if _, err := fmt.Sscan(q.Get("limit"), &limit); err != nil || limit < 1 || limit > 200 {
		limit = 50
	}
	runs, err := s.runner.Store.ListRuns(r.Context(), store.RunFilter{Pipeline: q.Get("pipeline"), Status: store.RunStatus(q.Get("status")), Limit: limit})
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs})
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, id string) {
	run, steps, err := s.runner.Store.GetRunWithSteps(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no run " + id})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run, "steps": steps})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// LoadOrCreateKey returns the approval signing key kept in the state
// directory, creating a random one the first time.
func LoadOrCreateKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, "approval.key")
	if b, err := os.ReadFile(path); err == nil && len(b) >= approval.MinKeyBytes {
		return b, nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, key, 0o600); err != nil {
		return nil, fmt.Errorf("save approval key: %w", err)
	}
	return key, nil
}
