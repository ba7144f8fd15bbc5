package steprun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"go.opentelemetry.io/otel/trace"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/internal/jsonstr"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/metrics"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/pricing"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telemetry"
)

// Store is the part of store.Store the handler writes to.
type Store interface {
	CreateRun(ctx context.Context, r store.Run) error
	UpdateRun(ctx context.Context, id string, u store.RunUpdate) error
	PutStep(ctx context.Context, rec store.StepRecord) error
	ListSteps(ctx context.Context, runID string) ([]store.StepRecord, error)
	AddUsage(ctx context.Context, runID, key string, u store.Usage) error
	CreateApproval(ctx context.Context, a store.Approval) error
}

var _ Store = (store.Store)(nil)

// Providers hands out the executor of a call (satisfied by
// *executor.Registry).
type Providers interface {
	Provider(call pipeline.ExecutorCall) (llmoutput.Provider, error)
}

// Defaults.
const (
	// DefaultApprovalTimeout is how long an approval stays open when the
	// human step sets no timeout_seconds.
	DefaultApprovalTimeout = 300 * time.Second
	// DefaultWebhookTimeout bounds a failure webhook without its own
	// timeout_seconds.
	DefaultWebhookTimeout = 30 * time.Second
	// maxSeenRuns bounds the set of runs known to exist.
	maxSeenRuns = 10000
)

// Handler runs the Tasks of compiled state machines. Set the fields, then
// call Handle from any number of goroutines; do not change the fields
// afterwards. Store and Executors are required; every other field is
// optional.
type Handler struct {
	Store     Store
	Executors Providers
	// Agents runs agent steps' models and tools. Nil: Executors, when it
	// provides them (an *executor.Registry does); else an agent step
	// fails with a ConfigError.
	Agents Agents
	// Runner asks for LLMOutput answers and re-asks on invalid ones. Nil:
	// a Runner whose Limits bound each answer at MaxAnswerBytes.
	Runner *llmoutput.Runner
	// Artifacts stores the artifacts outputs carry, the traces too large
	// for their record and the conversations of agent steps that outlive
	// one invocation. Nil: artifacts stay inline in the output, and such
	// agent steps fail with a ConfigError.
	Artifacts ArtifactStore
	// AgentInvocationBudget is how long one Task of an agent step that
	// outlives one invocation goes on calling the model before it hands
	// back. Zero: DefaultAgentInvocationBudget.
	AgentInvocationBudget time.Duration
	// Notifier tells approvers about a pending approval. Nil: a
	// LogNotifier over Logger.
	Notifier Notifier
	// Metrics, when set, receives each recorded step (CloudWatch embedded
	// metric format on AWS). A Task that the Lambda service retries after
	// it had recorded emits its metrics again.
	Metrics *metrics.EMF
	// Notifications fires the pipeline's notifications when a step ends
	// the run (escalated or failed: escalate; aborted: the step's
	// on_abort; stopped: stopped; budget exceeded: notify). nil: none are
	// sent.
	Notifications notify.Notifier
	// Pricing prices model calls. Nil: no call has a cost (cost unknown).
	Pricing *pricing.Table
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// HTTP sends failure webhooks and webhook checks, following a redirect
	// only within the request's origin (see MaxRedirects). Nil:
	// http.DefaultClient.
	HTTP *http.Client
	// Secrets resolves ${NAME} in failure webhooks and webhook checks.
	// Nil: none resolve.
	Secrets secret.Resolver
	// CheckReplies, when set, answers webhook and shell checks from
	// scripted replies (a run with --responses) instead of calling out.
	CheckReplies CheckReplies
	// ShellChecks lets shell checks run their commands (local runs). The
	// step Lambda leaves it false: a shell check there fails closed with
	// ErrShellNotHere (and cdk synth refuses pipelines that have one).
	ShellChecks bool
	// Logger receives warnings (verifier failures, webhook errors). Nil:
	// discarded.
	Logger *slog.Logger

	// maxConversation replaces MaxConversationBytes when set (tests).
	maxConversation int

	once   sync.Once
	render *renderer
	schema *llmoutput.OutputSchema // its Instruction is built on first use (a model or agent step)
	// delivery is the contract judged once, without a re-ask: the answer
	// of a webhook or notify step, whose every call delivers again.
	delivery *llmoutput.OutputSchema
	runner   *llmoutput.Runner
	log      *slog.Logger
	seenMu   sync.Mutex
	seen     map[string]struct{}
}

func (h *Handler) init() {
	h.once.Do(func() {
		var nonce [8]byte
		_, _ = rand.Read(nonce[:])
		h.render = newRenderer(hex.EncodeToString(nonce[:]))
		h.schema = llmoutput.ContractSchema()
		h.delivery = llmoutput.ContractSchema()
		h.delivery.MaxRetries = 0
		h.runner = h.Runner
		if h.runner == nil {
			h.runner = &llmoutput.Runner{Limits: llmoutput.ParseOptions{MaxAnswerBytes: MaxAnswerBytes}}
		}
		h.log = h.Logger
		if h.log == nil {
			h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		h.seen = make(map[string]struct{})
	})
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// Handle runs one Task and answers what the Task gets: Respond's answer,
// except that, in a definition that catches it
// (task.Pipeline.RunEndedError), a deciding Task's answer that ends the
// run (see Ends) is returned as a *fault.RunEnded error holding it
// (EndedAnswer reads it back), which the state machine catches by its
// name and sends to the terminal state; a completed step goes straight
// on. An error that is a failure (not a *fault.RunEnded) is counted in
// the TaskErrors metric.
func (h *Handler) Handle(ctx context.Context, req task.Request) (task.Response, error) {
	resp, err := h.Respond(ctx, req)
	if err != nil {
		h.countError(req, err)
		return resp, err
	}
	if req.Pipeline.RunEndedError && Ends(req.Mode, resp.Status) {
		return task.Response{}, &fault.RunEnded{Msg: string(endedAnswer(resp))}
	}
	return resp, nil
}

// Respond runs one Task and returns the step function's answer whatever
// its status. See the package documentation for each mode.
func (h *Handler) Respond(ctx context.Context, req task.Request) (task.Response, error) {
	h.init()
	if h.Store == nil {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step handler: no store")
	}
	if req.Run.ID == "" {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step handler: request has no run ID")
	}
	if len(req.Step) == 0 {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step handler: request has no step")
	}
	ctx, span := telemetry.Start(ctx, req.Mode, trace.SpanKindInternal)
	resp, err := h.handle(ctx, req)
	endTask(span, req, resp, err)
	return resp, err
}

// handle runs one Task of a valid request.
func (h *Handler) handle(ctx context.Context, req task.Request) (task.Response, error) {
	trig := decodeTrigger(req.Trigger)
	if err := h.ensureRun(ctx, &req, trig); err != nil {
		return task.Response{}, err
	}
	t := &taskRun{h: h, req: &req, trig: trig}
	switch req.Mode {
	case task.ModeStep:
		return t.step(ctx)
	case task.ModeBranch:
		return t.branch(ctx)
	case task.ModeJoin:
		return t.join(ctx)
	case task.ModeFailure:
		return t.failure(ctx)
	case task.ModeApproval:
		return t.approval(ctx)
	case task.ModeHuman:
		return t.human(ctx)
	case task.ModeChild:
		return t.child(ctx)
	case task.ModeChildInput:
		return t.childInput(ctx)
	case task.ModeAgentTurns:
		return t.agentTurns(ctx)
	case task.ModeCheck:
		return t.check(ctx)
	case task.ModeFinish:
		return t.finishRun(ctx)
	}
	return task.Response{}, fault.Errorf[fault.ConfigError]("step handler: unknown mode %q", req.Mode)
}

// taskRun is one Handle call in progress.
type taskRun struct {
	h    *Handler
	req  *task.Request
	trig map[string]any
	// overBudget: the run's budget ended it at this Task (finish), which
	// its notifications call budget_exceeded.
	overBudget bool
}

func decodeTrigger(raw json.RawMessage) map[string]any {
	var m map[string]any
	if len(raw) > 0 {
		// Text Decode reads is what json.Unmarshal reads into m (an
		// object as m, any other value as nothing); anything else, as
		// before, whatever json.Unmarshal left in m.
		if v, err := jsonstr.Decode(raw); err == nil {
			m, _ = v.(map[string]any)
		} else {
			_ = json.Unmarshal(raw, &m)
		}
	}
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// ensureRun creates the run record the first time this process sees the
// run; an existing record is left alone.
func (h *Handler) ensureRun(ctx context.Context, req *task.Request, trig map[string]any) error {
	h.seenMu.Lock()
	_, ok := h.seen[req.Run.ID]
	h.seenMu.Unlock()
	if ok {
		return nil
	}
	r := store.Run{
		ID:          req.Run.ID,
		Pipeline:    req.Pipeline.Name,
		Status:      store.RunRunning,
		Stage:       string(req.Pipeline.Stage),
		ParentRunID: req.Run.ParentRunID,
		// The compiled definition the run runs, for readiness's
		// require_current_config.
		ConfigFingerprint: req.Pipeline.Config,
		StartedAt:         runStart(req.Run, h.now()),
	}
	if r.Stage != store.StageProduction {
		r.Stage = store.StageTesting
	}
	r.Source, _ = trig["source"].(string)
	r.Team, _ = trig["team"].(string)
	r.Fingerprint, _ = trig["fingerprint"].(string)
	if len(req.Trigger) > 0 && len(req.Trigger) <= store.MaxTriggerBytes && json.Valid(req.Trigger) {
		r.Trigger = req.Trigger
	}
	err := h.Store.CreateRun(ctx, r)
	if err != nil && !errors.Is(err, store.ErrExists) {
		return fmt.Errorf("create run %q: %w", r.ID, err)
	}
	h.seenMu.Lock()
	if len(h.seen) >= maxSeenRuns {
		clear(h.seen)
	}
	h.seen[req.Run.ID] = struct{}{}
	h.seenMu.Unlock()
	return nil
}

func runStart(r task.Run, now time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, r.StartedAt); err == nil {
		return t
	}
	return now
}

// index orders a record: milliseconds since the run started.
func (t *taskRun) index(at time.Time) int {
	start, err := time.Parse(time.RFC3339Nano, t.req.Run.StartedAt)
	if err != nil {
		return 0
	}
	return max(int(at.Sub(start).Milliseconds()), 0)
}

// putStep writes a record. A different record already at its key means a
// retried invocation recorded this attempt first; that one stands.
func (t *taskRun) putStep(ctx context.Context, rec store.StepRecord) error {
	rec.RunID = t.req.Run.ID
	if rec.Attempt < 1 {
		rec.Attempt = 1
	}
	err := t.h.Store.PutStep(ctx, rec)
	if errors.Is(err, store.ErrConflict) {
		return nil // recorded before: a retried Task
	}
	if err != nil {
		return fmt.Errorf("record step %q: %w", rec.Name, err)
	}
	if rec.Status != store.StepWaiting { // its finished record emits once
		t.emit(rec)
		observe(ctx, t.req.Pipeline.Name, rec)
	}
	return nil
}

// emit writes a recorded step's metrics.
func (t *taskRun) emit(rec store.StepRecord) {
	m := t.h.Metrics
	if m == nil {
		return
	}
	p := t.req.Pipeline.Name
	if rec.EffectiveConfidence != nil {
		_ = m.Put(map[string]string{"Pipeline": p, "Step": rec.Name}, metrics.Metric{Name: metrics.StepConfidence, Unit: "None", Value: *rec.EffectiveConfidence})
	}
	ms := []metrics.Metric{
		{Name: metrics.InputTokens, Unit: "Count", Value: float64(rec.InputTokens)},
		{Name: metrics.OutputTokens, Unit: "Count", Value: float64(rec.OutputTokens)},
		{Name: metrics.Steps, Unit: "Count", Value: 1},
		{Name: metrics.StepDuration, Unit: "Milliseconds", Value: float64(rec.DurationMS)},
	}
	if rec.CostUSD != nil {
		ms = append(ms, metrics.Metric{Name: metrics.CostUSD, Unit: "None", Value: *rec.CostUSD})
	}
	dims, sets := map[string]string{"Pipeline": p}, [][]string{{"Pipeline"}}
	if rec.Executor != "" && rec.Model != "" { // a model step: also by executor and model
		dims["Executor"], dims["Model"] = rec.Executor, rec.Model
		sets = append(sets, []string{"Pipeline", "Executor", "Model"})
	}
	_ = m.PutSets(dims, sets, ms...)
}

// addUsage adds a step's usage to the run's stored totals, once per key.
func (t *taskRun) addUsage(ctx context.Context, key string, u stepUsage) error {
	if u.in == 0 && u.out == 0 && u.cost == nil {
		return nil
	}
	err := t.h.Store.AddUsage(ctx, t.req.Run.ID, key, store.Usage{InputTokens: u.in, OutputTokens: u.out, CostUSD: u.cost})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("add usage of %q: %w", key, err)
	}
	return nil
}

// endRun closes the run when a step ended it and, when this call is the one
// that closed it (a retried Task finds it closed) and notified is false,
// fires the pipeline's notifications for the outcome.
func (t *taskRun) endRun(ctx context.Context, status, reason string, totals task.Usage, final json.RawMessage, notified bool) error {
	var rs store.RunStatus
	switch status {
	case task.StatusStopped:
		rs = store.RunStopped
	case task.StatusEscalated:
		rs = store.RunEscalated
	case task.StatusAborted:
		rs = store.RunAborted
	case task.StatusFailed:
		rs = store.RunFailed
	default:
		return nil
	}
	now := t.h.now()
	cost := totals.CostUSD
	u := store.Usage{InputTokens: totals.InputTokens, OutputTokens: totals.OutputTokens, CostUSD: &cost}
	if len(final) > store.MaxFinalOutputBytes {
		final = nil
	}
	err := t.h.Store.UpdateRun(ctx, t.req.Run.ID, store.RunUpdate{Status: rs, Reason: reason, CompletedAt: &now, FinalOutput: final, Usage: &u})
	if errors.Is(err, store.ErrConflict) {
		return nil // closed before: notified then
	}
	if err != nil {
		return fmt.Errorf("end run %q: %w", t.req.Run.ID, err)
	}
	t.countRun(rs)
	if !notified {
		t.notify(ctx, status, reason, final)
	}
	return nil
}

// endsRun reports whether a step status ends the run.
func endsRun(status string) bool {
	switch status {
	case task.StatusStopped, task.StatusEscalated, task.StatusAborted, task.StatusFailed:
		return true
	}
	return false
}

// mutedNotices fires, in a pipeline of stage testing, the notifications a
// run-ending status calls for before the step's record is written, and
// returns the record's flags naming each muted delivery
// (notification_muted:<action>:<channel>) and whether it fired. Every
// delivery of a testing pipeline is muted — logged, never sent — so the
// record can carry them and a retried Task that logs them again costs
// nothing. In production it does nothing: endRun notifies once the run
// is closed.
func (t *taskRun) mutedNotices(ctx context.Context, status, reason string, output json.RawMessage) ([]string, bool) {
	if t.req.Pipeline.Stage == pipeline.StageProduction || !endsRun(status) {
		return nil, false
	}
	var flags []string
	for _, d := range t.notify(ctx, status, reason, output) {
		if d.Muted {
			flags = append(flags, FlagNotificationMuted+":"+d.Action+":"+d.Channel)
		}
	}
	return flags, true
}

// notify fires the notifications of the action a run-ending status calls
// for and returns the deliveries. Deliveries are logged; a failed one
// never fails the step.
func (t *taskRun) notify(ctx context.Context, status, reason string, output json.RawMessage) []notify.Delivery {
	if t.h.Notifications == nil || len(t.req.Pipeline.Notifications) == 0 {
		return nil
	}
	var cfg struct {
		Name                string   `json:"name"`
		OnAbort             string   `json:"on_abort"`
		ConfidenceThreshold *float64 `json:"confidence_threshold"`
	}
	_ = json.Unmarshal(t.req.Step, &cfg)
	var out struct {
		Confidence    *float64 `json:"confidence"`
		Summary       string   `json:"summary"`
		ProceedReason string   `json:"proceed_reason"`
		Reasoning     struct {
			Contradicts any `json:"contradicts"`
		} `json:"reasoning"`
	}
	_ = json.Unmarshal(output, &out)
	action := notify.Action(status, cfg.OnAbort)
	escalation := status
	switch {
	case t.overBudget:
		action, escalation = notify.ActionNotify, notify.EscalationBudgetExceeded
	case (status == task.StatusEscalated || status == task.StatusAborted) && out.Confidence != nil && cfg.ConfidenceThreshold != nil && *out.Confidence < *cfg.ConfidenceThreshold:
		escalation = notify.EscalationLowConfidence
	}
	summary := out.Summary
	if summary == "" {
		summary = reason
	}
	deliveries := t.h.Notifications.Fire(ctx, t.req.Pipeline, action, notify.Context{
		RunID:               t.req.Run.ID,
		CurrentStep:         cfg.Name,
		Status:              status,
		Trigger:             t.req.Trigger,
		Steps:               t.req.Steps,
		EscalationReason:    escalation,
		Confidence:          out.Confidence,
		ConfidenceThreshold: cfg.ConfidenceThreshold,
		StepSummary:         summary,
		Contradicts:         out.Reasoning.Contradicts,
		ProceedReason:       out.ProceedReason,
	})
	notify.LogDeliveries(ctx, t.h.log, deliveries)
	return deliveries
}

// setRunStatus moves a run between running and waiting.
func (t *taskRun) setRunStatus(ctx context.Context, s store.RunStatus) error {
	err := t.h.Store.UpdateRun(ctx, t.req.Run.ID, store.RunUpdate{Status: s})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("update run %q: %w", t.req.Run.ID, err)
	}
	return nil
}

// Lambda adapts Handle to the Lambda runtime: a failed Task's error is
// surfaced as its fault type, so that the runtime reports the fault's name
// (the ASL error name Retry and Catch match) as errorType. A
// *fault.RunEnded is reported under fault.NameRunEnded, which is not a Go
// type name (the runtime takes an error's type name unless the error is
// a messages.InvokeResponse_Error), with the answer as its message: the
// same name and message the local engine derives (engine.ErrorName).
func (h *Handler) Lambda() func(context.Context, task.Request) (task.Response, error) {
	return func(ctx context.Context, req task.Request) (task.Response, error) {
		resp, err := h.Handle(ctx, req)
		if err != nil {
			return task.Response{}, lambdaError(err)
		}
		return resp, nil
	}
}

// lambdaError is err as the Lambda runtime should report it.
func lambdaError(err error) error {
	var ended *fault.RunEnded
	if errors.As(err, &ended) {
		return messages.InvokeResponse_Error{Type: fault.NameRunEnded, Message: ended.Msg}
	}
	return fault.Surface(err)
}
