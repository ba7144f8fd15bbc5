package inbound

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
)

// Decision statuses.
const (
	StatusAccepted       = "accepted"        // a run was started
	StatusDeduplicated   = "deduplicated"    // a run for the same event exists; RunID names it
	StatusSkippedTesting = "skipped_testing" // the pipeline is in stage testing; nothing started
)

// MaxBodyBytes bounds a payload. An HTTP layer reads at most
// MaxBodyBytes+1 bytes and passes them on; Accept refuses anything longer
// with ErrTooLarge.
const MaxBodyBytes = 1 << 20

// Dedup is a deduplication policy.
type Dedup struct {
	Enabled bool
	Window  time.Duration // a run started less than Window ago dedups; a running one always
}

// DefaultDedupWindow is the window of the default policy. Dedup is on by
// default; a pipeline's trigger.dedup overrides the service policy field
// by field.
const DefaultDedupWindow = pipeline.DefaultDedupWindowSeconds * time.Second

// Store is what Accept needs of the run store.
type Store interface {
	ClaimDedup(ctx context.Context, pipeline, fingerprint, runID string, window time.Duration, now time.Time) (existing string, claimed bool, err error)
	ReleaseDedup(ctx context.Context, pipeline, fingerprint, runID string) error
	CreateRun(ctx context.Context, r store.Run) error
	UpdateRun(ctx context.Context, id string, u store.RunUpdate) error
}

// Starter starts runs: locally in the engine, on AWS with Step Functions
// StartExecution.
type Starter interface {
	// Start starts run runID of p with trigger as its event and returns
	// once the run is under way; the run must not end when ctx (the
	// request's) does. The run record already exists, status running. An
	// error means the run did not start; Accept then marks it failed.
	Start(ctx context.Context, p *pipeline.Pipeline, runID string, trigger Context) error
}

// Config wires an Intake.
type Config struct {
	Router  *Router // required
	Store   Store   // required
	Starter Starter // required
	Limiter Limiter // nil: no cap
	Tokens  Tokens  // empty: webhooks are not authenticated
	Dedup   *Dedup  // nil: enabled, DefaultDedupWindow
	Logger  *slog.Logger
	Now     func() time.Time // nil: time.Now
	RunID   func() string    // nil: NewRunID
}

// Intake accepts events and starts runs. Safe for concurrent use.
type Intake struct {
	router  atomic.Pointer[Router]
	store   Store
	starter Starter
	limiter Limiter
	tokens  Tokens
	dedup   Dedup
	log     *slog.Logger
	now     func() time.Time
	runID   func() string
}

// New returns an Intake. Errors: a missing Router, Store or Starter, and
// tokens that fail Tokens.Check.
func New(cfg Config) (*Intake, error) {
	switch {
	case cfg.Router == nil:
		return nil, errors.New("new intake: no router")
	case cfg.Store == nil:
		return nil, errors.New("new intake: no store")
	case cfg.Starter == nil:
		return nil, errors.New("new intake: no starter")
	}
	if err := cfg.Tokens.Check(); err != nil {
		return nil, fmt.Errorf("new intake: %w", err)
	}
	in := &Intake{
		store: cfg.Store, starter: cfg.Starter, limiter: cfg.Limiter, tokens: cfg.Tokens,
		dedup: Dedup{Enabled: true, Window: DefaultDedupWindow}, log: cfg.Logger, now: cfg.Now, runID: cfg.RunID,
	}
	in.router.Store(cfg.Router)
	if cfg.Dedup != nil {
		in.dedup = *cfg.Dedup
	}
	if in.log == nil {
		in.log = slog.Default()
	}
	if in.now == nil {
		in.now = time.Now
	}
	if in.runID == nil {
		in.runID = NewRunID
	}
	return in, nil
}

// SetRouter replaces the router (a reload). Requests under way finish with
// the router they started with.
func (in *Intake) SetRouter(r *Router) {
	if r != nil {
		in.router.Store(r)
	}
}

// Router returns the current router.
func (in *Intake) Router() *Router { return in.router.Load() }

// NewRunID returns a new run ID: "run-" and 24 hex digits, the first 12
// the milliseconds since 1970 (UTC), the other 12 random (48 bits). IDs
// made later sort after earlier ones (to the millisecond), so that the
// local store's keys, which begin with the run ID, grow at their end: a
// step's records land in the pages the run's last step wrote, rather than
// in pages across the whole file (TestPagesPerStep in shared/local).
func NewRunID() string {
	return newRunID(time.Now())
}

func newRunID(now time.Time) string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return "run-" + hex.EncodeToString(b[:])
}

// Request is one inbound event.
type Request struct {
	// Source is the payload format: SourceAlertmanager or SourceGeneric.
	// Empty: the "source" query parameter. Ignored for manual runs, whose
	// body is always generic.
	Source string
	Body   []byte
	// Query holds strategy (alertmanager: most_severe | common_labels),
	// allow_testing (true starts testing pipelines) and source.
	Query  url.Values
	Bearer string // the bearer token, without "Bearer "
	// Manual marks a run asked for by name (POST /pipelines/{name}/run):
	// PipelineName is the pipeline (404 when unknown), the body is a generic
	// payload (may be empty), the stage gate is open, and a bearer token is
	// checked only when one is given.
	Manual       bool
	PipelineName string
	// Event, when set, is an event normalized already by a trusted
	// producer (an EventBridge trigger): it is routed, deduplicated and
	// gated as it is, with its team and raw payload, and no bearer token is
	// asked for. Body and Source are ignored.
	Event *Context
	// RunID, when set, is the ID the run takes (a scheduled fire's, claimed
	// with its tick before it is accepted); empty: a new one.
	RunID string
}

// Decision is what Accept did with an event.
type Decision struct {
	Status   string  // StatusAccepted, StatusDeduplicated or StatusSkippedTesting
	RunID    string  // the run handling the event: new when accepted, the existing one when deduplicated
	Pipeline string  // the pipeline chosen
	Stage    string  // its stage
	Context  Context // the normalized event (the run's trigger when accepted)
	Existing string  // deduplicated: the existing run (same as RunID)
	Reason   string  // deduplicated and skipped_testing: why, in words
}

// Response is the JSON body answering a webhook: status, run_id, source,
// pipeline, severity, summary, and reason when there is one.
func (d Decision) Response() map[string]any {
	m := map[string]any{
		"status":   d.Status,
		"pipeline": d.Pipeline,
		"source":   d.Context.Source,
		"severity": d.Context.Severity,
		"summary":  d.Context.Summary,
	}
	if d.RunID != "" {
		m["run_id"] = d.RunID
	}
	if d.Reason != "" {
		m["reason"] = d.Reason
	}
	return m
}

// Accept authenticates, normalizes, routes, gates, deduplicates and starts
// one event; see the package documentation for the order. Errors map to
// HTTP statuses with HTTPStatus; the message never holds the bearer token.
func (in *Intake) Accept(ctx context.Context, req Request) (Decision, error) {
	const op = "accept event"
	received := in.now()

	var team string
	var err error
	if req.Event == nil {
		if team, err = in.authenticate(req); err != nil {
			return Decision{}, err
		}
	}
	if len(req.Body) > MaxBodyBytes {
		return Decision{}, fmt.Errorf("%s: %w: %d bytes, limit %d", op, ErrTooLarge, len(req.Body), MaxBodyBytes)
	}
	allowTesting := req.Manual
	if s := req.Query.Get("allow_testing"); s != "" && !req.Manual {
		if allowTesting, err = strconv.ParseBool(s); err != nil {
			return Decision{}, badRequest(op, "allow_testing=%q is not true or false", s)
		}
	}

	var c Context
	if req.Event != nil {
		c = *req.Event
		if c.ReceivedAt.IsZero() {
			c.ReceivedAt = received
		}
	} else {
		if c, err = in.normalize(req, received); err != nil {
			return Decision{}, err
		}
		c.Team = team
	}

	router := in.router.Load()
	var p *pipeline.Pipeline
	if req.Manual {
		var ok bool
		if p, ok = router.Pipeline(req.PipelineName); !ok {
			return Decision{}, fmt.Errorf("%s: %w: %q", op, ErrNotFound, req.PipelineName)
		}
		c.Pipeline = p.Name
	} else if p, err = router.Route(c); err != nil {
		return Decision{}, err
	}
	d := Decision{Pipeline: p.Name, Stage: string(stageOf(p)), Context: c}

	if stageOf(p) != pipeline.StageProduction && !allowTesting {
		d.Status = StatusSkippedTesting
		d.Reason = fmt.Sprintf("pipeline %q is in stage testing: webhooks start it only with allow_testing=true", p.Name)
		in.log.InfoContext(ctx, "event skipped: pipeline in testing", "pipeline", p.Name, "source", c.Source, "team", c.Team)
		return d, nil
	}

	trigger, err := in.encodeTrigger(&c)
	if err != nil {
		return Decision{}, err
	}
	if err := CheckNumbers(trigger); err != nil {
		return Decision{}, fmt.Errorf("%s: %w: %w", op, ErrBadRequest, err)
	}
	if c.Fingerprint != "" {
		// An idempotency key or fingerprint the store cannot hold is the
		// sender's to fix, refused before anything is claimed or recorded.
		if err := store.CheckName("fingerprint", c.Fingerprint); err != nil {
			return Decision{}, fmt.Errorf("%s: %w: %w", op, ErrBadRequest, err)
		}
	}
	d.Context = c

	runID := req.RunID
	if runID == "" {
		runID = in.runID()
	}
	if in.limiter != nil {
		if err := in.limiter.Admit(ctx, runID); err != nil {
			return Decision{}, fmt.Errorf("%s: %w", op, err)
		}
	}
	release := func() {
		if in.limiter != nil {
			in.limiter.Release(runID)
		}
	}

	claimedKey := false
	scope := dedupScope(p.Name, c.Team)
	if dd := in.dedupFor(p); dd.Enabled && c.Fingerprint != "" {
		existing, claimed, err := in.store.ClaimDedup(ctx, scope, c.Fingerprint, runID, dd.Window, received)
		if err != nil {
			release()
			return Decision{}, fmt.Errorf("%s: %w", op, err)
		}
		if !claimed {
			release()
			d.Status, d.RunID, d.Existing = StatusDeduplicated, existing, existing
			d.Reason = fmt.Sprintf("run %s of pipeline %q handles fingerprint %q", existing, p.Name, c.Fingerprint)
			in.log.InfoContext(ctx, "event deduplicated", "pipeline", p.Name, "run", existing, "fingerprint", c.Fingerprint, "team", c.Team)
			return d, nil
		}
		claimedKey = true
	}
	// A run that never starts gives its dedup claim up, so that the
	// sender's retry of the same event is not deduplicated against it.
	unclaim := func() {
		if !claimedKey {
			return
		}
		if err := in.store.ReleaseDedup(context.WithoutCancel(ctx), scope, c.Fingerprint, runID); err != nil {
			in.log.ErrorContext(ctx, "release dedup claim", "run", runID, "error", err.Error())
		}
	}

	run := store.Run{
		ID: runID, Pipeline: p.Name, Status: store.RunRunning, Stage: d.Stage,
		Source: c.Source, Team: c.Team, Trigger: trigger, Fingerprint: c.Fingerprint, StartedAt: received,
		ConfigFingerprint: p.Config,
	}
	if err := in.store.CreateRun(ctx, run); err != nil {
		release()
		unclaim()
		return Decision{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := in.starter.Start(ctx, p, runID, c); err != nil {
		release()
		unclaim()
		done := in.now()
		// The request's context may be the reason Start failed; the record
		// must still be closed.
		uerr := in.store.UpdateRun(context.WithoutCancel(ctx), runID, store.RunUpdate{
			Status: store.RunFailed, Reason: "start: " + err.Error(), CompletedAt: &done,
		})
		if uerr != nil {
			in.log.ErrorContext(ctx, "mark unstarted run failed", "run", runID, "error", uerr.Error())
		}
		return Decision{}, fmt.Errorf("%s: start run %s of %q: %w", op, runID, p.Name, err)
	}
	d.Status, d.RunID = StatusAccepted, runID
	in.log.InfoContext(ctx, "run accepted", "pipeline", p.Name, "run", runID, "source", c.Source,
		"severity", c.Severity, "team", c.Team, "fingerprint", c.Fingerprint, "stage", d.Stage, "manual", req.Manual)
	return d, nil
}

func (in *Intake) authenticate(req Request) (string, error) {
	if len(in.tokens) == 0 || (req.Manual && req.Bearer == "") {
		return "", nil
	}
	if req.Bearer == "" {
		return "", fmt.Errorf("accept event: %w: no bearer token", ErrUnauthorized)
	}
	team, ok := in.tokens.Team(req.Bearer)
	if !ok {
		return "", fmt.Errorf("accept event: %w: unknown bearer token", ErrUnauthorized)
	}
	return team, nil
}

func (in *Intake) normalize(req Request, now time.Time) (Context, error) {
	if req.Manual {
		body := req.Body
		if len(body) == 0 {
			body = []byte("{}")
		}
		return normalizeGeneric("normalize manual run payload", body, now, SourceManual)
	}
	source := req.Source
	if source == "" {
		source = req.Query.Get("source")
	}
	switch source {
	case SourceAlertmanager:
		return NormalizeAlertmanager(req.Body, req.Query.Get("strategy"), now)
	case SourceGeneric:
		return NormalizeGeneric(req.Body, now)
	case "":
		return Context{}, badRequest("accept event", "no source: pass ?source=%s or ?source=%s", SourceAlertmanager, SourceGeneric)
	}
	return Context{}, badRequest("accept event", "unknown source %q: use %s or %s", source, SourceAlertmanager, SourceGeneric)
}

// encodeTrigger encodes c as the run's trigger. When it exceeds
// store.MaxTriggerBytes (a Step Functions payload is at most 256 KiB), the
// raw payload is dropped and metadata.raw_omitted set; when that is not
// enough the event is refused with ErrTooLarge.
func (in *Intake) encodeTrigger(c *Context) (json.RawMessage, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode trigger: %w", err)
	}
	if len(b) <= store.MaxTriggerBytes {
		return b, nil
	}
	c.Raw = nil
	md := make(map[string]any, len(c.Metadata)+1)
	for k, v := range c.Metadata {
		md[k] = v
	}
	md["raw_omitted"] = true
	c.Metadata = md
	if b, err = json.Marshal(c); err != nil {
		return nil, fmt.Errorf("encode trigger: %w", err)
	}
	if len(b) > store.MaxTriggerBytes {
		return nil, fmt.Errorf("encode trigger: %w: the normalized event is %d bytes without the raw payload, limit %d", ErrTooLarge, len(b), store.MaxTriggerBytes)
	}
	return b, nil
}

// dedupScope is the name a dedup claim is made under: the pipeline's,
// and for a team's event "<pipeline>#<team>" (a pipeline's name holds no
// "#"), so that one team's events never deduplicate against another
// team's runs: a team cannot suppress another's events by sending their
// idempotency keys first, nor learn its run IDs.
func dedupScope(pipeline, team string) string {
	if team == "" {
		return pipeline
	}
	return pipeline + "#" + team
}

// dedupFor is p's policy: its trigger.dedup fields over the defaults.
func (in *Intake) dedupFor(p *pipeline.Pipeline) Dedup {
	d := in.dedup
	if p.Trigger != nil && p.Trigger.Dedup != nil {
		if e := p.Trigger.Dedup.Enabled; e != nil {
			d.Enabled = *e
		}
		if w := p.Trigger.Dedup.WindowSeconds; w != nil {
			d.Window = time.Duration(*w) * time.Second
		}
	}
	if d.Window < 0 {
		d.Window = 0
	}
	return d
}

// stageOf is p's stage; anything but production is testing.
func stageOf(p *pipeline.Pipeline) pipeline.Stage {
	if p.Stage == pipeline.StageProduction {
		return pipeline.StageProduction
	}
	return pipeline.StageTesting
}
