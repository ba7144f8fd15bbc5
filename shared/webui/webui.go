package webui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Store is what the UI reads and writes of the run store.
type Store interface {
	ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error)
	GetRun(ctx context.Context, id string) (store.Run, error)
	GetRunWithSteps(ctx context.Context, id string) (store.Run, []store.StepRecord, error)
	GetApproval(ctx context.Context, id string) (store.Approval, error)
	// PendingApprovals: the undecided approvals of waiting runs, the
	// earliest to expire first, at most limit.
	PendingApprovals(ctx context.Context, limit int) ([]store.Approval, error)
	// RunApprovals: a run's approvals, oldest first.
	RunApprovals(ctx context.Context, runID string) ([]store.Approval, error)
	GetRunFeedback(ctx context.Context, runID string) (*store.Feedback, error)
	GetStepFeedback(ctx context.Context, runID, step string) (*store.Feedback, error)
	PutRunFeedback(ctx context.Context, runID string, f store.Feedback) error
	PutStepFeedback(ctx context.Context, runID, step string, f store.Feedback) error
}

// Pipeline is a loaded pipeline as the UI shows it.
type Pipeline struct {
	Name        string
	Description string
	Stage       string
	Version     string
	Tags        []string
	Schedule    string // its cron, "" without one
	File        string
	Machine     *asl.StateMachine // compiled; nil: not compiled
}

// Agent is an agent profile as the UI shows it.
type Agent struct {
	Name          string
	Description   string
	Version       string
	Model         string
	Fallbacks     []string
	ThinkingLevel string
	Tools         []Tool
	Path          string
}

// Tool is an agent's grant on one MCP server: every tool of it when
// Tools is empty.
type Tool struct {
	Server string
	Tools  []string
}

// Config wires a Handler. Only Store is required.
type Config struct {
	Store Store
	// History returns a run's execution history (the run log and which
	// states of the graph it entered); nil: none.
	History func(ctx context.Context, runID string) ([]store.HistoryEvent, error)
	// Pipelines returns the pipelines in force, in routing order.
	Pipelines func() []Pipeline
	// Source returns the YAML of a pipeline's file and its validation
	// problems as the compiler reports them ("" when none).
	Source func(name string) (yaml []byte, problems string, err error)
	// Agents returns the project's agent profiles and the project's
	// problems ("" when none).
	Agents func() ([]Agent, string)
	// Start starts a run of a pipeline by name with event (a generic
	// JSON payload) on behalf of the holder of bearer ("" without
	// tokens), as POST /pipelines/{name}/run does; it returns the run's
	// ID. Nil: the UI offers no "run now".
	Start func(ctx context.Context, pipeline, bearer string, event []byte) (runID string, err error)
	// Approvals decides approvals; nil: the UI shows them without
	// buttons.
	Approvals *approval.Service
	// Tokens are the teams' tokens; empty: everyone is served.
	Tokens inbound.Tokens
	// Prefix is where the UI is mounted (DefaultPrefix when empty).
	Prefix string
	// ConsoleURL, when set, links a run to its page elsewhere (the Step
	// Functions console), given its ID; "" for none.
	ConsoleURL func(runID string) string
	// Poll is how often a live view looks at the store (DefaultPoll
	// when 0).
	Poll   time.Duration
	Logger *slog.Logger
	Now    func() time.Time
}

// Defaults and bounds.
const (
	DefaultPrefix = "/ui"
	DefaultPoll   = 500 * time.Millisecond
	// SessionTTL is how long a login lasts.
	SessionTTL = 12 * time.Hour
	// MaxStreams bounds the live views served at once; more are answered
	// 503 (the page then falls back to a reload).
	MaxStreams = 64
	// MaxStreamTime bounds one live view; the browser reconnects.
	MaxStreamTime = 30 * time.Minute
	// MaxFormBytes bounds a form's body (a run's event is within it).
	MaxFormBytes = inbound.MaxBodyBytes + 16<<10
	// MaxLogEvents bounds the run log a page shows (the latest ones).
	MaxLogEvents = 300
	// MaxTextBytes bounds a prompt, reply or JSON block as shown; the
	// record has the rest.
	MaxTextBytes = 64 << 10
)

// cookie names.
const (
	sessionCookie = "stepline_session"
)

// Handler serves the UI under its prefix.
type Handler struct {
	cfg     Config
	prefix  string
	key     []byte // signs sessions and CSRF tokens; new per process
	log     *slog.Logger
	pages   map[string]pageTemplate
	static  http.Handler
	streams chan struct{}
	csrf    *http.CrossOriginProtection
	mux     *http.ServeMux
	now     func() time.Time
}

// New builds the UI's handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("web UI: no store")
	}
	if len(cfg.Tokens) > 0 {
		if err := cfg.Tokens.CheckTeams(); err != nil {
			return nil, fmt.Errorf("web UI: tokens: %w", err)
		}
	}
	h := &Handler{cfg: cfg, prefix: strings.TrimRight(cfg.Prefix, "/"), log: cfg.Logger, now: cfg.Now,
		streams: make(chan struct{}, MaxStreams), csrf: http.NewCrossOriginProtection()}
	if h.prefix == "" {
		h.prefix = DefaultPrefix
	}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.cfg.Poll <= 0 {
		h.cfg.Poll = DefaultPoll
	}
	h.key = make([]byte, 32)
	if _, err := rand.Read(h.key); err != nil {
		return nil, fmt.Errorf("web UI: session key: %w", err)
	}
	var err error
	if h.pages, err = parseTemplates(h.prefix); err != nil {
		return nil, err
	}
	sub, _ := fs.Sub(staticFS, "static")
	h.static = http.StripPrefix(h.prefix+"/static/", http.FileServerFS(sub))
	h.routes()
	return h, nil
}

// Prefix is where the handler is mounted.
func (h *Handler) Prefix() string { return h.prefix }

func (h *Handler) routes() {
	m := http.NewServeMux()
	p := h.prefix
	m.HandleFunc("GET "+p+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, p+"/runs", http.StatusSeeOther)
	})
	m.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, p+"/runs", http.StatusSeeOther)
	})
	m.HandleFunc("GET "+p+"/login", h.loginPage)
	m.HandleFunc("POST "+p+"/login", h.login)
	m.HandleFunc("POST "+p+"/logout", h.logout)
	m.Handle("GET "+p+"/static/", h.staticFiles())
	m.HandleFunc("GET "+p+"/runs", h.authed(h.runsPage))
	m.HandleFunc("GET "+p+"/runs/{id}", h.authed(h.runPage))
	m.HandleFunc("GET "+p+"/runs/{id}/events", h.authed(h.runEvents))
	m.HandleFunc("POST "+p+"/runs/{id}/feedback", h.authed(h.postFeedback))
	m.HandleFunc("GET "+p+"/approvals", h.authed(h.approvalsPage))
	m.HandleFunc("POST "+p+"/approvals/{id}", h.authed(h.decide))
	m.HandleFunc("GET "+p+"/pipelines", h.authed(h.pipelinesPage))
	m.HandleFunc("GET "+p+"/pipelines/{name}", h.authed(h.pipelinePage))
	m.HandleFunc("POST "+p+"/pipelines/{name}/run", h.authed(h.runNow))
	m.HandleFunc("GET "+p+"/agents", h.authed(h.agentsPage))
	h.mux = m
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if err := h.csrf.Check(r); err != nil {
		h.fail(w, r, http.StatusForbidden, "Cross-origin request refused", "This form can only be sent from Stepline's own pages.")
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) staticFiles() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.static.ServeHTTP(w, r)
	})
}

// viewer is who a request comes from.
type viewer struct {
	Team  string // "" without tokens
	All   bool   // sees every team's runs
	Open  bool   // no tokens configured
	CSRF  string // the form token of the session ("": no forms)
	Login bool   // a session cookie authenticated it (Sign out is offered)
}

func (v viewer) sees(team string) bool { return v.All || v.Team == team }

// session values: base64url(team) "." expiry (unix) "." nonce "." mac.
func (h *Handler) sign(payload string) string {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("stepline ui session\x00"))
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (h *Handler) newSession(team string) (string, error) {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString([]byte(team)) + "." +
		strconv.FormatInt(h.now().Add(SessionTTL).Unix(), 10) + "." + hex.EncodeToString(nonce[:])
	return payload + "." + h.sign(payload), nil
}

// readSession returns the team of a valid session cookie value.
func (h *Handler) readSession(v string) (string, bool) {
	if len(v) > 1024 {
		return "", false
	}
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return "", false
	}
	payload, mac := v[:i], v[i+1:]
	if !hmac.Equal([]byte(mac), []byte(h.sign(payload))) {
		return "", false
	}
	parts := strings.Split(payload, ".")
	if len(parts) != 3 {
		return "", false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !h.now().Before(time.Unix(exp, 0)) {
		return "", false
	}
	team, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return "", false
	}
	return string(team), true
}

// csrfToken is the form token of a session: a MAC of its cookie.
func (h *Handler) csrfToken(session string) string {
	return h.sign("csrf\x00" + session)
}

func (h *Handler) setSession(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: value, Path: h.prefix + "/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
}

// identify returns the request's viewer. Without tokens everyone is a
// viewer of everything; a session cookie is made for the CSRF token.
// With tokens a valid session cookie, or an Authorization bearer token,
// is needed.
func (h *Handler) identify(w http.ResponseWriter, r *http.Request) (viewer, bool) {
	c, _ := r.Cookie(sessionCookie)
	if len(h.cfg.Tokens) == 0 {
		if c == nil || !h.validOpen(c.Value) {
			v, err := h.newSession("")
			if err != nil {
				return viewer{}, false
			}
			h.setSession(w, r, v, int(SessionTTL/time.Second))
			c = &http.Cookie{Value: v}
		}
		return viewer{All: true, Open: true, CSRF: h.csrfToken(c.Value)}, true
	}
	if c != nil {
		if team, ok := h.readSession(c.Value); ok {
			if _, known := h.cfg.Tokens[team]; known {
				return viewer{Team: team, All: team == inbound.AdminTeam, CSRF: h.csrfToken(c.Value), Login: true}, true
			}
		}
	}
	if team, ok := h.cfg.Tokens.Team(inbound.BearerToken(r.Header.Get("Authorization"))); ok {
		// A script with the API's token: no session, no forms.
		return viewer{Team: team, All: team == inbound.AdminTeam}, true
	}
	return viewer{}, false
}

func (h *Handler) validOpen(v string) bool {
	team, ok := h.readSession(v)
	return ok && team == ""
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, v viewer)

// authed serves f to an identified viewer; others are sent to the login
// form (pages) or answered 401 (a POST, a live view). A POST must carry
// the session's CSRF token.
func (h *Handler) authed(f handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		v, ok := h.identify(w, r)
		if !ok {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/events") && r.URL.Query().Get("partial") == "" {
				http.Redirect(w, r, h.prefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			h.fail(w, r, http.StatusUnauthorized, "Sign in", "Sign in with your team's token first.")
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
			if err := r.ParseForm(); err != nil {
				h.fail(w, r, http.StatusBadRequest, "Bad request", "The form could not be read (too large?).")
				return
			}
			if v.CSRF == "" || !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(v.CSRF)) {
				h.fail(w, r, http.StatusForbidden, "Form expired", "The form's security token does not match your session: reload the page and try again.")
				return
			}
		}
		f(w, r, v)
	}
}

// next is where a login goes: a path of the UI, nothing else.
func (h *Handler) next(s string) string {
	if strings.HasPrefix(s, h.prefix+"/") && !strings.HasPrefix(s, "//") && !strings.ContainsAny(s, "\\\r\n") {
		return s
	}
	return h.prefix + "/runs"
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if len(h.cfg.Tokens) == 0 {
		http.Redirect(w, r, h.next(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, "login", page{Title: "Sign in", Data: map[string]string{"Next": h.next(r.URL.Query().Get("next"))}})
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return
	}
	next := h.next(r.PostForm.Get("next"))
	if len(h.cfg.Tokens) == 0 {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	team, ok := h.cfg.Tokens.Team(strings.TrimSpace(r.PostForm.Get("token")))
	if !ok {
		h.log.Info("web UI login refused", "remote", r.RemoteAddr)
		h.render(w, r, http.StatusUnauthorized, "login", page{Title: "Sign in", Error: "That token is not valid.",
			Data: map[string]string{"Next": next}})
		return
	}
	v, err := h.newSession(team)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, "Error", "No session could be made.")
		return
	}
	h.setSession(w, r, v, int(SessionTTL/time.Second))
	h.log.Info("web UI login", "team", team, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	h.setSession(w, r, "", -1)
	http.Redirect(w, r, h.prefix+"/login", http.StatusSeeOther)
}
