package local

import (
	"bytes"
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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/schedule"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/webui"
)

// Server is the local HTTP front door over a Runner: webhook intake,
// manual runs, run queries and approval links.
//
//	POST /webhook?source=alertmanager|generic   normalize, route, dedup, start (202)
//	POST /pipelines/{name}/run                   start a run of a pipeline (202; also .../runs)
//	GET  /pipelines                              the loaded pipelines
//	GET  /pipelines/{name}                       one, resolved, with its file's YAML
//	POST /reload                                 load the pipeline files again (also SIGHUP)
//	GET  /schedules                              schedule: pipelines and their next fire
//	GET  /runs[?pipeline=&status=&team=&stage=&limit=&offset=]  runs, newest first
//	GET  /runs/{id}                              a run with its steps
//	POST /runs/{id}/rerun                        rerun it from {"from_step"} (202)
//	GET  /runs/{id}/feedback                     the run's feedback: {"feedback": …|null}
//	POST /runs/{id}/feedback                     upsert it: {outcome, notes} (400 otherwise)
//	GET  /runs/{id}/steps/{step}/feedback        a step's feedback ({step} may hold "/")
//	POST /runs/{id}/steps/{step}/feedback        upsert it
//	GET  /approvals/{token}                      the approval page of a signed link
//	POST /approvals/{token}                      decide it
//	POST /telegram/{bot}                         a Telegram bot's webhook (ChatConfig)
//	POST /slack/{app}                            a Slack app's request URL (ChatConfig)
//	GET  /health                                 liveness, version, active runs, limits
//	GET  /metrics                                Prometheus metrics (the admin token when tokens are set)
//	GET  /ui/…, POST /ui/…                       the web UI (package webui): its own login, same tokens
//
// Pipelines with a schedule: fire from the server once StartSchedules is
// called (package schedule): the
// latest tick since the last check, at most one catch-up after downtime
// (a tick at most ServerConfig.ScheduleGrace old), each tick claimed in
// the store so that it fires once across processes and restarts.
// Scheduled runs have source "scheduler" and the schedule's team; they
// start in any stage, are never deduplicated, and count against MaxRuns
// (a tick that finds no room is logged and skipped).
//
// # Who may do what
//
// Without tokens every request is served to anyone; the caller decides
// where that is safe (stepline serve only binds loopback then). With tokens
// (team → bearer token, see [inbound.Tokens]) every request but GET /health
// and the approval links needs "Authorization: Bearer <token>" naming a
// team; a missing token and a wrong one get the same 401 with a
// WWW-Authenticate header. The approval links need none: the signed link is
// the credential. Nor do the chat routes: a Telegram webhook checks its
// secret token, a Slack request URL its signature. A team sees only the runs recorded with its team (GET
// /runs lists them, GET /runs/{id} of another team's run is 404, as for a
// run that does not exist); the runs it starts, by webhook or by name, are
// recorded with its team. The token of [inbound.AdminTeam] sees every run
// (?team= picks one team's) and may start any pipeline; its runs are
// recorded as team "admin". POST /reload needs the admin token when
// tokens are configured; a rerun is recorded with the team of the run it
// reruns, and only a caller who sees that run may rerun it.
//
// # Limits
//
// Request bodies are read up to [MaxBodyBytes] (webhooks, manual runs) or
// [MaxApprovalBodyBytes] (a decision); a longer body is answered 413, a body
// that stalls past the read timeout 408. [Server.HTTPServer] returns an
// http.Server bounded by [HTTPLimits], so that slow or idle clients cannot
// hold connections open.
type Server struct {
	runner    *Runner
	intake    *inbound.Intake
	approvals *approval.Service
	limiter   *inbound.Counter
	tokens    inbound.Tokens
	limits    HTTPLimits
	log       *slog.Logger

	dir       string           // pipeline files
	project   *project.Project // nil: each file's
	version   string
	maxRuns   int
	sched     *schedule.Scheduler
	schedOnce sync.Once
	clock     schedule.Clock

	reloadMu sync.Mutex // one reload at a time

	chat map[string]http.Handler // "/telegram/{bot}", "/slack/{app}"
	ui   *webui.Handler          // the web UI, under /ui/

	mu     sync.Mutex
	loaded *loaded         // the pipelines in force
	ctx    context.Context // runs started by requests live on this, not on the request
	wg     sync.WaitGroup
}

// Bounds of the HTTP server. A request's headers must arrive within
// ReadHeaderTimeout and the whole request within ReadTimeout; its answer
// must be written within WriteTimeout of the headers' end. No API handler
// streams or waits on a run (runs and approved runs go on in the
// background), so WriteTimeout only has to cover reading the body and one
// store query; the web UI's live view of a run, which streams, moves its
// own write deadline before each event (webui.MaxStreamTime bounds it).
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, headers and body: a body
	// of MaxBodyBytes must come at 35 KB/s or more.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer. It is longer than ReadTimeout, which it includes.
	WriteTimeout = 60 * time.Second
	// IdleTimeout closes a kept-alive connection no request has used for
	// that long.
	IdleTimeout = 120 * time.Second
	// MaxHeaderBytes bounds a request's header lines (Go's server allows a
	// little more, 4 KiB, and answers 431 beyond).
	MaxHeaderBytes = 64 << 10
	// MaxBodyBytes bounds the body of a webhook or a manual run.
	MaxBodyBytes = inbound.MaxBodyBytes
	// MaxApprovalBodyBytes bounds the body of a decision posted to an
	// approval link (a short form or {decision, by}).
	MaxApprovalBodyBytes = 16 << 10
)

// HTTPLimits bound the connections of the http.Server that
// [Server.HTTPServer] returns. A zero field takes the constant of the same
// name.
type HTTPLimits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
}

// withDefaults fills l's zero fields.
func (l HTTPLimits) withDefaults() HTTPLimits {
	or := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	l.ReadHeaderTimeout = or(l.ReadHeaderTimeout, ReadHeaderTimeout)
	l.ReadTimeout = or(l.ReadTimeout, ReadTimeout)
	l.WriteTimeout = or(l.WriteTimeout, WriteTimeout)
	l.IdleTimeout = or(l.IdleTimeout, IdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = MaxHeaderBytes
	}
	return l
}

// ServerConfig wires a Server.
type ServerConfig struct {
	Runner       *Runner
	PipelinesDir string // pipeline files, routed in file-name order
	// Tokens are the teams' bearer tokens; empty: no request is
	// authenticated. Every token must name a team (Tokens.CheckTeams).
	Tokens  inbound.Tokens
	MaxRuns int // runs driven at once; more answer 429
	Signer  *approval.Signer
	HTTP    HTTPLimits // bounds of HTTPServer's connections
	// ApprovalPoll is how often the server looks for human steps whose
	// approval expired (Runner.ExpireApprovals), besides at each expiry it
	// knows of; 0 means DefaultApprovalPoll.
	ApprovalPoll time.Duration
	Logger       *slog.Logger
	// Version is what GET /health reports as the version.
	Version string
	// ScheduleClock is the clock schedules fire by; nil: the system
	// clock. ScheduleGrace is how old a missed tick may be and still fire
	// once (schedule.DefaultGrace when 0).
	ScheduleClock schedule.Clock
	ScheduleGrace time.Duration
	// Chat takes the approvals decided in chat channels (see ChatConfig);
	// the zero value takes none.
	Chat ChatConfig
}

// ChatConfig is how a Server takes the decisions made with the buttons of
// chat approval requests (package approval's Router sends them): each
// Telegram bot of Routes by long polling, or, when its channel names a
// webhook_secret, at POST /telegram/{bot} (bot: the name of its token's
// secret); each Slack app at POST /slack/{app} (app: the name of its
// signing secret's secret), its request URL.
type ChatConfig struct {
	Routes  approval.Routes
	Secrets secret.Resolver // resolves the bots' tokens and secrets
	HTTP    *http.Client    // Bot API and response_url calls; nil: a client with a timeout over PollWait
	// TelegramAPI is the Bot API's base URL; "": telegram.DefaultAPI.
	TelegramAPI string
	// SlackResponseURL is what a Slack response_url must start with; "":
	// approval.DefaultSlackResponseURL.
	SlackResponseURL string
	// PollWait is each getUpdates long poll's wait; 0: approval.PollWait.
	PollWait time.Duration
	// BaseURL starts the approval page links of edited messages.
	BaseURL string
}

// DefaultApprovalPoll is how often a server looks for expired approvals:
// an approval another process created expires at most this late.
const DefaultApprovalPoll = time.Second

// NewServer loads and compiles the pipelines and builds the server. Runs
// it starts live on ctx: cancel it to stop them at their next checkpoint.
// Until then, the server also times out human steps whose approval expired
// (Runner.ExpireApprovals), in its own runs and those of other processes.
func NewServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	maxRuns := cfg.MaxRuns
	if maxRuns <= 0 {
		maxRuns = inbound.DefaultMaxRuns
	}
	if len(cfg.Tokens) > 0 {
		if err := cfg.Tokens.CheckTeams(); err != nil {
			return nil, fmt.Errorf("tokens: %w", err)
		}
	}
	s := &Server{
		runner: cfg.Runner, log: log, ctx: ctx, limiter: inbound.NewCounter(maxRuns),
		tokens: cfg.Tokens, limits: cfg.HTTP.withDefaults(), dir: cfg.PipelinesDir, project: cfg.Runner.project,
		version: cfg.Version, maxRuns: maxRuns, clock: cfg.ScheduleClock,
	}
	if s.clock == nil {
		s.clock = engine.SystemClock{}
	}
	l, err := s.load()
	if err != nil {
		return nil, err
	}
	s.loaded = l
	s.intake, err = inbound.New(inbound.Config{
		Router: l.router, Store: cfg.Runner.Store, Starter: s, Limiter: s.limiter,
		Tokens: cfg.Tokens, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	s.sched, err = schedule.New(schedule.Config{
		Store: cfg.Runner.Store, Fire: s.fire, Clock: s.clock, Grace: cfg.ScheduleGrace,
		RunID: inbound.NewRunID, Logger: log,
	}, l.entries)
	if err != nil {
		return nil, err
	}
	if cfg.Signer != nil {
		s.approvals = &approval.Service{
			Store: cfg.Runner.Store, Signer: cfg.Signer, Logger: log, Feedback: cfg.Runner.Store,
			Complete: func(ctx context.Context, token string, d task.Decision) error {
				s.wg.Add(1)
				go func() { // the run goes on after the page answers
					defer s.wg.Done()
					o, err := cfg.Runner.Complete(s.ctx, token, d)
					switch {
					case err == nil:
						s.log.Info("run settled", "run", o.RunID, "pipeline", o.Pipeline, "status", o.Status, "reason", o.Reason)
					case errors.Is(err, engine.ErrTaskDoesNotExist):
						// A decision sent again (approval.ResendAfter)
						// whose run went on.
						s.log.Debug("continue run after approval: the run went on", "err", err)
					case err != nil:
						s.log.Error("continue run after approval", "err", err)
					}
				}()
				return nil
			},
		}
	}
	if err := s.startChat(ctx, cfg.Chat, cfg.Signer); err != nil {
		return nil, err
	}
	if s.ui, err = s.newUI(); err != nil {
		return nil, err
	}
	poll := cfg.ApprovalPoll
	if poll <= 0 {
		poll = DefaultApprovalPoll
	}
	s.wg.Add(1)
	go s.expireApprovals(poll)
	return s, nil
}

// StartSchedules starts firing the pipelines' schedules, until the
// server's context ends. Call it once the runs a previous process left
// have been swept (the sweep would take a run the scheduler just started
// for one of them); later calls do nothing.
func (s *Server) StartSchedules() {
	s.schedOnce.Do(func() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = s.sched.Run(s.ctx) // ends with the server's context
		}()
	})
}

// expireApprovals times out the human steps whose approval expires, until
// the server's context ends: at each expiry it knows of, and every poll
// for approvals that other processes create.
func (s *Server) expireApprovals(poll time.Duration) {
	defer s.wg.Done()
	for {
		fired, next, err := s.runner.ExpireApprovals(s.ctx)
		if s.ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Error("time out expired approvals", "err", err)
		}
		for _, o := range fired {
			s.log.Info("approval timed out", "run", o.RunID, "pipeline", o.Pipeline, "status", o.Status, "reason", o.Reason)
		}
		wait := poll
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Start implements inbound.Starter: the run is driven in the background.
func (s *Server) Start(_ context.Context, p *pipeline.Pipeline, runID string, trigger inbound.Context) error {
	s.mu.Lock()
	sm := s.loaded.machines[p.Name]
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

// HTTPServer returns an http.Server serving s within the configured
// HTTPLimits.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.limits.ReadHeaderTimeout,
		ReadTimeout:       s.limits.ReadTimeout,
		WriteTimeout:      s.limits.WriteTimeout,
		IdleTimeout:       s.limits.IdleTimeout,
		MaxHeaderBytes:    s.limits.MaxHeaderBytes,
	}
}

// caller is who a request comes from: a team, or anyone at all (no tokens
// configured, or the admin token).
type caller struct {
	team string
	all  bool
}

// sees reports whether the caller may see a run recorded with team.
func (c caller) sees(team string) bool { return c.all || c.team == team }

// authenticate returns the caller of r. Without tokens everyone is served;
// with tokens, a missing, malformed or unknown bearer token is refused
// alike.
func (s *Server) authenticate(r *http.Request) (caller, bool) {
	if len(s.tokens) == 0 {
		return caller{all: true}, true
	}
	team, ok := s.tokens.Team(inbound.BearerToken(r.Header.Get("Authorization")))
	if !ok {
		return caller{}, false
	}
	return caller{team: team, all: team == inbound.AdminTeam}, true
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	// Open to anyone: liveness, and the approval links, which are their
	// own credential.
	switch {
	case path == "/health" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.health(w)
		return
	case strings.HasPrefix(r.URL.Path, "/approvals/"):
		s.approval(w, r)
		return
	case path == webui.DefaultPrefix || strings.HasPrefix(path, webui.DefaultPrefix+"/"):
		// The web UI authenticates its own way: a login form and a
		// session cookie, with the same tokens.
		s.ui.ServeHTTP(w, r)
		return
	case strings.HasPrefix(path, "/telegram/") || strings.HasPrefix(path, "/slack/"):
		// Authenticated by the handler: Telegram's secret token, Slack's
		// signature.
		if h, ok := s.chat[path]; ok {
			h.ServeHTTP(w, r)
			return
		}
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
		return
	}
	c, ok := s.authenticate(r)
	if !ok {
		s.log.Info("request refused: no valid bearer token", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="stepline"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized: a valid bearer token is required"})
		return
	}
	bearer := inbound.BearerToken(r.Header.Get("Authorization"))
	switch {
	case path == "/webhook":
		if !allow(w, r, http.MethodPost) {
			return
		}
		source := r.URL.Query().Get("source")
		if source == "" {
			source = r.Header.Get("X-Pipeline-Source")
		}
		s.accept(w, r, inbound.Request{Source: source, Query: r.URL.Query(), Bearer: bearer})
	case strings.HasPrefix(path, "/pipelines/") && (strings.HasSuffix(path, "/runs") || strings.HasSuffix(path, "/run")):
		if !allow(w, r, http.MethodPost) {
			return
		}
		name := strings.TrimPrefix(path, "/pipelines/")
		name = strings.TrimSuffix(strings.TrimSuffix(name, "/runs"), "/run")
		s.accept(w, r, inbound.Request{Source: "generic", Manual: true, PipelineName: name, Query: r.URL.Query(), Bearer: bearer})
	case path == "/pipelines":
		if allow(w, r, http.MethodGet) {
			s.listPipelines(w)
		}
	case strings.HasPrefix(path, "/pipelines/"):
		if allow(w, r, http.MethodGet) {
			s.getPipeline(w, strings.TrimPrefix(path, "/pipelines/"))
		}
	case path == "/reload":
		if allow(w, r, http.MethodPost) {
			s.serveReload(w, c)
		}
	case path == "/schedules":
		if allow(w, r, http.MethodGet) {
			writeJSON(w, http.StatusOK, map[string]any{"schedules": s.sched.Upcoming(s.clock.Now())})
		}
	case path == "/runs":
		if allow(w, r, http.MethodGet) {
			s.listRuns(w, r, c)
		}
	case isFeedbackPath(path):
		runID, step, _ := feedbackPath(path)
		s.feedback(w, r, c, runID, step)
	case strings.HasPrefix(path, "/runs/") && strings.HasSuffix(path, "/rerun"):
		if allow(w, r, http.MethodPost) {
			s.rerun(w, r, c, strings.TrimSuffix(strings.TrimPrefix(path, "/runs/"), "/rerun"))
		}
	case strings.HasPrefix(path, "/runs/"):
		if allow(w, r, http.MethodGet) {
			s.getRun(w, r, c, strings.TrimPrefix(path, "/runs/"))
		}
	case path == "/metrics":
		if allow(w, r, http.MethodGet, http.MethodHead) {
			s.serveMetrics(w, r, c)
		}
	case path == "/health":
		allow(w, r, http.MethodGet, http.MethodHead)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
	}
}

// allow reports whether r's method is one of methods, answering 405
// otherwise.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	if slices.Contains(methods, r.Method) {
		return true
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use " + strings.Join(methods, " or ")})
	return false
}

// approval serves an approval link; a decision's body is read here, so
// that one too longer than MaxApprovalBodyBytes is answered 413.
func (s *Server) approval(w http.ResponseWriter, r *http.Request) {
	if s.approvals == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
		return
	}
	if r.Method == http.MethodPost {
		body, ok := readBody(w, r, MaxApprovalBodyBytes)
		if !ok {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	s.approvals.ServeHTTP(w, r)
}

// readBody reads r's body, at most limit bytes. A longer body is answered
// 413, one that stalls past the server's read timeout 408, another read
// error 400; ok is false then.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, ok bool) {
	tooLarge := func() {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("request body too large: limit %d bytes", limit)})
	}
	if r.ContentLength > limit {
		tooLarge()
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var over *http.MaxBytesError
	switch {
	case err == nil:
		return body, true
	case errors.As(err, &over):
		tooLarge()
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeJSON(w, http.StatusRequestTimeout, map[string]string{"error": "the request body did not arrive in time"})
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "read body: " + err.Error()})
	}
	return nil, false
}

func (s *Server) accept(w http.ResponseWriter, r *http.Request, req inbound.Request) {
	body, ok := readBody(w, r, MaxBodyBytes)
	if !ok {
		return
	}
	req.Body = body
	d, err := s.intake.Accept(r.Context(), req)
	if err != nil {
		status := inbound.HTTPStatus(err)
		resp := map[string]any{"error": err.Error()}
		var over *inbound.OverloadedError
		if errors.As(err, &over) {
			resp = map[string]any{"status": "overloaded", "active_runs": over.Active, "max_concurrent_runs": over.Max}
		}
		writeJSON(w, status, resp)
		return
	}
	writeJSON(w, http.StatusAccepted, d.Response())
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

// newUI builds the web UI over the server's store, pipelines, project and
// approvals (package webui).
func (s *Server) newUI() (*webui.Handler, error) {
	return webui.New(webui.Config{
		Store: s.runner.Store, History: s.runner.History, Approvals: s.approvals, Tokens: s.tokens, Logger: s.log,
		Pipelines: func() []webui.Pipeline {
			l := s.current()
			out := make([]webui.Pipeline, 0, len(l.order))
			for _, name := range l.order {
				p := l.pipelines[name]
				wp := webui.Pipeline{Name: name, Description: p.Description, Stage: string(p.Stage), Tags: p.Tags,
					File: l.files[name], Machine: l.machines[name]}
				if p.Version != 0 {
					wp.Version = fmt.Sprint(p.Version)
				}
				if p.Schedule != nil {
					wp.Schedule = p.Schedule.Cron
				}
				out = append(out, wp)
			}
			return out
		},
		Source: func(name string) ([]byte, string, error) {
			file, ok := s.current().files[name]
			if !ok {
				return nil, "", fmt.Errorf("no pipeline %q", name)
			}
			src, err := os.ReadFile(file)
			if err != nil {
				return nil, "", fmt.Errorf("read pipeline file: %w", err)
			}
			// The file as it is now, checked without writing the definition
			// that runs resume with (Runner.Compile would).
			var diags compiler.Diagnostics
			if s.project != nil {
				_, _, diags, err = gate.CompileFileIn(file, s.project, settings.Defaults{})
			} else {
				_, _, diags, err = gate.CompileFile(file, settings.Defaults{})
			}
			var problems []string
			for _, d := range diags {
				problems = append(problems, d.String())
			}
			if err != nil && len(diags) == 0 {
				problems = append(problems, err.Error())
			}
			return src, strings.Join(problems, "\n"), nil
		},
		Agents: func() ([]webui.Agent, string) {
			p := s.project
			if p == nil {
				var err error
				if p, err = project.ForFile(filepath.Join(s.dir, "pipeline.yaml")); err != nil {
					return nil, err.Error()
				}
			}
			if p == nil {
				return nil, ""
			}
			var out []webui.Agent
			for _, name := range p.AgentNames() {
				l := p.Profiles[name]
				a := webui.Agent{Name: name, Description: l.Profile.Description, Version: l.Profile.Version, Model: l.Profile.Model,
					Fallbacks: l.Profile.ModelFallbacks, ThinkingLevel: l.Profile.ThinkingLevel, Path: l.Path}
				for _, g := range l.Profile.Tools {
					a.Tools = append(a.Tools, webui.Tool{Server: g.Server, Tools: g.Tools})
				}
				out = append(out, a)
			}
			return out, p.Diagnostics.String()
		},
		Start: func(ctx context.Context, name, bearer string, event []byte) (string, error) {
			d, err := s.intake.Accept(ctx, inbound.Request{Source: "generic", Manual: true, PipelineName: name, Body: event, Bearer: bearer})
			if err != nil {
				return "", err
			}
			return d.RunID, nil
		},
	})
}
