package steprun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/pricing"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telemetry"
)

// Record flags the handler adds.
const (
	FlagVerifierFailed       = "verifier_failed"
	FlagVerifierSkipped      = "verifier_not_triggered"
	FlagLoopConverged        = "loop_converged"
	FlagLoopExhausted        = "loop_exhausted"
	FlagBudgetExceeded       = "budget_exceeded"
	FlagProceedOnLow         = "proceeded_on_low_confidence"
	FlagFailureOutcome       = "failure_outcome"
	FlagFailureWebhookSent   = "failure_webhook_sent"
	FlagFailureWebhookMuted  = "failure_webhook_muted_testing"
	FlagFailureWebhookFailed = "failure_webhook_failed"
	FlagBranchLost           = "branch_lost"
	// FlagNotificationMuted, followed by ":<action>:<channel>", marks a
	// notification of a testing pipeline's run-ending step that was
	// written to the log instead of sent.
	FlagNotificationMuted = "notification_muted"
)

// unit is one executable piece: a sequential step, a parallel branch or a
// fan-out item.
type unit struct {
	name     string // the step or branch name, for messages and current_step
	key      string // the executor's step key: "triage", "fan/0"
	record   string // the record name: "triage", "group/branch", "fan/0"
	executor string
	config   map[string]any
	prompt   string
	timeout  int
	verifier *pipeline.Verifier
	loop     *pipeline.LoopUntil
	item     *fanItem
	agent    *agent.Resolved // an agent step's resolved agent; nil: one model call
	literal  bool            // prompt is text to use as it is, not a template
}

// stepUsage is what a step's calls consumed. cost is nil when a call could
// not be priced.
type stepUsage struct {
	in, out int64
	cost    *float64
	calls   int
}

func (u *stepUsage) add(in, out int64, cost float64, priced bool) {
	u.addCalls(1, in, out, cost, priced)
}

// addCalls adds n calls that used in and out tokens and cost in all.
func (u *stepUsage) addCalls(n int, in, out int64, cost float64, priced bool) {
	first := u.calls == 0
	u.calls += n
	u.in += in
	u.out += out
	switch {
	case !priced:
		u.cost = nil
	case first:
		c := cost
		u.cost = &c
	case u.cost != nil:
		c := *u.cost + cost
		u.cost = &c
	}
}

func (u stepUsage) task() task.Usage {
	var c float64
	if u.cost != nil {
		c = *u.cost
	}
	return task.Usage{InputTokens: u.in, OutputTokens: u.out, CostUSD: c}
}

// MaxAnswerBytes bounds a step's answer as the next steps see it, its
// artifacts stored apart (llmoutput.ParseOptions.MaxAnswerBytes): the
// answer and its verifier's must fit a step record's output
// (store.MaxOutputBytes) with the executor's fields. A longer answer is
// rejected and asked again, never recorded half.
const MaxAnswerBytes = 48 << 10

// result is the outcome of executing a unit.
type result struct {
	out       *llmoutput.Output
	primary   float64
	verifier  *float64
	effective float64
	verOut    json.RawMessage
	prompt    string
	raw       string
	model     string
	provider  string
	usage     stepUsage
	flags     []string
	agent     *agentRun // an agent step's loops
	// promptHash is the content hash of the unit's prompt template
	// (store.PromptHash), recorded for its calibration bucket.
	promptHash string
}

// call asks an executor for an LLMOutput answer through the runner.
func (t *taskRun) call(ctx context.Context, exec, key string, cfg map[string]any, prompt string, timeout int, res *result) (*llmoutput.Output, error) {
	p, err := t.h.Executors.Provider(pipeline.ExecutorCall{
		Executor: exec,
		Step:     key,
		Config:   cfg,
		Stage:    string(t.req.Pipeline.Stage),
		Timeout:  time.Duration(timeout) * time.Second,
	})
	if err != nil {
		return nil, err
	}
	msgs := []llmoutput.Message{{Role: llmoutput.RoleUser, Content: prompt}}
	schema := t.h.schema
	if exec == pipeline.ExecWebhook || exec == pipeline.ExecNotify {
		// Asking a webhook again delivers it again: its answer is judged once.
		schema = t.h.delivery
	}
	rr, err := t.h.runner.Complete(ctx, p, msgs, schema)
	if rr.Attempts > 0 {
		cost, priced := t.h.price(rr.Completion.Provider, rr.Completion.Model, rr.Usage)
		res.usage.add(rr.Usage.InputTokens, rr.Usage.OutputTokens, cost, priced)
	}
	if err != nil {
		return nil, err
	}
	if !rr.Success {
		res.raw = rr.RawContent
		return nil, rr.Err()
	}
	for _, f := range rr.Flags {
		if recordedParseFlag(f) && !slices.Contains(res.flags, f) {
			res.flags = append(res.flags, f)
		}
	}
	out := rr.Data
	return &out, nil
}

// recordedParseFlag reports whether a flag of the accepted reply goes on
// the step record: the reply tried to set a field that is the executor's
// or the runner's. Repairs (fences, trailing commas) are not recorded.
func recordedParseFlag(f string) bool {
	return f == llmoutput.FlagReservedFieldIgnored || f == llmoutput.FlagExecutorFieldIgnored
}

func (h *Handler) price(provider, model string, u llmoutput.Usage) (float64, bool) {
	if h.Pricing == nil {
		return 0, false
	}
	return h.Pricing.Cost(provider, model, pricing.Usage(u))
}

// execute renders and runs a unit: primary, verifier, loop. The result
// holds what was spent and rendered also when an error is returned.
func (t *taskRun) execute(ctx context.Context, u unit) (result, error) {
	res := result{promptHash: promptHash(u.prompt)}
	iterations := 1
	if u.loop != nil {
		iterations = max(u.loop.MaxIterations, 1)
	}
	sc := scope{current: u.name, item: u.item}
	b := t.h.bindings(ctx, t.req, t.trig, sc)
	rctx := ctx // rendering stops at the step's timeout too
	if u.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, time.Duration(u.timeout)*time.Second)
		defer cancel()
	}
	var loopVars map[string]any
	if u.loop != nil {
		loopVars = map[string]any{"iteration": 1, "max_iterations": iterations, "prior_confidence": nil, "prior_output": nil}
		b["loop"] = loopVars
	}
	for i := 1; i <= iterations; i++ {
		if loopVars != nil {
			loopVars["iteration"] = i
			if res.out != nil {
				loopVars["prior_confidence"] = res.effective
				loopVars["prior_output"] = withConfidence(res.out.Map(), res.effective)
			}
		}
		prompt, err := t.h.render.render(rctx, u.name, "prompt_template", u.prompt, b)
		if err != nil {
			return res, err
		}
		res.prompt = prompt
		cfg, err := t.renderConfig(rctx, u.name, "executor_config", u.config, b)
		if err != nil {
			return res, err
		}
		var out *llmoutput.Output
		switch {
		case u.agent != nil:
			out, err = t.agentCall(ctx, u, cfg, prompt, &res)
		case cfg["agent"] != nil:
			err = fault.Errorf[fault.ConfigError]("step %q: executor_config.agent names %v, but the step carries no resolved agent: compile the pipeline with a Stepline that knows agents", u.name, cfg["agent"])
		default:
			out, err = t.call(ctx, u.executor, u.key, cfg, prompt, u.timeout, &res)
		}
		if err != nil {
			return res, err
		}
		res.out, res.primary, res.effective = out, out.Confidence, out.Confidence
		res.raw, res.model, res.provider = out.RawResponse, out.Model, out.Provider
		res.verifier, res.verOut = nil, nil
		if u.verifier != nil {
			t.verify(ctx, u, b, &res)
		}
		if u.loop == nil {
			break
		}
		if res.effective >= u.loop.Confidence {
			res.flags = append(res.flags, FlagLoopConverged+":"+strconv.Itoa(i))
			break
		}
		if i == iterations {
			res.flags = append(res.flags, FlagLoopExhausted+":"+strconv.Itoa(i))
		}
	}
	return res, nil
}

func withConfidence(m map[string]any, c float64) map[string]any {
	m["confidence"] = c
	return m
}

func (t *taskRun) renderConfig(ctx context.Context, step, field string, cfg map[string]any, b map[string]any) (map[string]any, error) {
	if len(cfg) == 0 {
		return cfg, nil
	}
	v, err := t.h.render.renderValue(ctx, step, field, withoutURLs(cfg), b)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	for _, k := range urlKeys {
		if s, ok := cfg[k].(string); ok {
			if m[k], err = t.h.render.renderURL(ctx, step, field+"."+k, s, b); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// urlKeys are the executor_config keys that hold a URL, rendered with
// renderURL.
var urlKeys = []string{"url", "base_url"}

// withoutURLs returns cfg without its string urlKeys (cfg itself when it
// has none).
func withoutURLs(cfg map[string]any) map[string]any {
	has := false
	for _, k := range urlKeys {
		if _, ok := cfg[k].(string); ok {
			has = true
		}
	}
	if !has {
		return cfg
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		out[k] = v
	}
	for _, k := range urlKeys {
		if _, ok := cfg[k].(string); ok {
			delete(out, k)
		}
	}
	return out
}

// triggered reports whether a verifier runs on a primary confidence.
func triggered(v *pipeline.Verifier, primary float64) bool {
	tr := v.Trigger
	return tr.Always || (tr.ConfidenceAbove < primary && primary < tr.ConfidenceBelow)
}

// combine is the effective confidence; a verifier never raises it.
func combine(v *pipeline.Verifier, primary, verdict float64) float64 {
	if v.CombinationStrategy == pipeline.CombineVeto {
		if verdict < v.VetoFloor {
			return min(primary, verdict)
		}
		return primary
	}
	return min(primary, verdict)
}

// verify runs the verifier when its trigger fires. A verifier failure is a
// warning: the primary confidence stands.
func (t *taskRun) verify(ctx context.Context, u unit, b map[string]any, res *result) {
	v := u.verifier
	if !triggered(v, res.primary) {
		return
	}
	prompt := res.prompt
	if v.Mode != pipeline.ModeIndependent {
		answer, _ := compact(res.out, res.primary)
		prompt = criticPrompt(res.prompt, string(answer))
	}
	ctx, span := telemetry.Start(ctx, "verify "+u.record, trace.SpanKindInternal)
	defer func() { endVerify(span, t.req, u.record, res) }()
	fail := func(err error) {
		t.h.log.Warn("verifier failed", "run", t.req.Run.ID, "step", u.record, "error", err.Error())
		res.flags = append(res.flags, FlagVerifierFailed)
		res.verOut, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	cfg, err := t.renderConfig(ctx, u.name, "verifier.executor_config", v.ExecutorConfig, b)
	if err != nil {
		fail(err)
		return
	}
	out, err := t.call(ctx, v.Executor, u.key+":verifier", cfg, prompt, u.timeout, res)
	if err != nil {
		fail(err)
		return
	}
	vc := out.Confidence
	res.verifier = &vc
	res.verOut, _ = out.CompactJSON()
	res.effective = combine(v, res.primary, vc)
}

func criticPrompt(task, answer string) string {
	var b strings.Builder
	b.WriteString("You are a critic reviewing another agent's answer to a task. Check the answer against the task: ")
	b.WriteString("is it correct, supported and complete? Your confidence is your score for the answer, from 0 (wrong) to 1 (fully right); ")
	b.WriteString("summarise your verdict and explain it in reasoning.\n\n## Task given to the agent\n\n")
	b.WriteString(task)
	b.WriteString("\n\n## The agent's answer\n\n")
	b.WriteString(answer)
	return b.String()
}

// compact is an output as later steps see it: the effective confidence,
// no raw_response. An extra field the answer gave as null stays null, so
// that "steps.x.f is none" holds for it (and not for a field it never
// gave), as in the reference runner's context.
func compact(out *llmoutput.Output, confidence float64) (json.RawMessage, error) {
	o := *out
	o.Confidence = confidence
	o.RawResponse = ""
	var extra llmoutput.Extras
	for _, f := range out.Extra {
		if len(bytes.TrimSpace(f.Value)) == 0 {
			continue
		}
		extra = append(extra, f)
	}
	o.Extra = extra
	b, err := o.CompactJSON()
	if err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	return b, nil
}

// failedOutput is the output of a failed step or branch.
func failedOutput(summary string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"confidence": 0, "summary": summary, "next_step_context": "", llmoutput.FieldFailed: true})
	return b
}

// storeArtifacts writes an output's artifacts and replaces them by their
// references.
func (t *taskRun) storeArtifacts(ctx context.Context, record string, out *llmoutput.Output) error {
	if t.h.Artifacts == nil || len(out.Artifacts) == 0 {
		return nil
	}
	keys := make([]string, 0, len(out.Artifacts))
	for k := range out.Artifacts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	refs := make(map[string]string, len(keys))
	files := artifactFiles(keys)
	for _, k := range keys {
		// The reply named it: stored under one file name (ArtifactName),
		// referenced under the name the reply gave.
		ref, err := t.h.Artifacts.Put(ctx, t.req.Run.ID, record, files[k], out.Artifacts[k])
		if err != nil {
			return fmt.Errorf("store artifact %q of step %q: %w", k, record, err)
		}
		refs[k] = ref
	}
	out.Artifacts = refs
	return nil
}

// gate decides a step's status, in order: the confidence gate, proceed,
// then the budget.
func gate(name string, g pipeline.Gate, eff float64, out *llmoutput.Output, honourProceed bool) (status, reason string, flags []string) {
	return gateWith(name, g, eff, "confidence "+fmtConf(eff), "", out, honourProceed)
}

// gateWith is gate over value, which messages call what, and cause (a
// parenthesis after the threshold, or "") says what lowered it.
func gateWith(name string, g pipeline.Gate, value float64, what, cause string, out *llmoutput.Output, honourProceed bool) (status, reason string, flags []string) {
	if value < g.ConfidenceThreshold {
		why := fmt.Sprintf("%s is below the threshold %s%s", what, fmtConf(g.ConfidenceThreshold), cause)
		switch g.OnLowConfidence {
		case pipeline.LowProceed:
			flags = append(flags, FlagProceedOnLow)
		case pipeline.LowAbort:
			return task.StatusAborted, fmt.Sprintf("step %q aborted: %s: %s", name, why, out.Summary), nil
		default:
			return task.StatusEscalated, fmt.Sprintf("step %q escalated: %s: %s", name, why, out.Summary), nil
		}
	}
	if honourProceed && !out.Proceed {
		why := out.ProceedReason
		if why == "" {
			why = out.Summary
		}
		return task.StatusStopped, why, flags
	}
	return task.StatusCompleted, "", flags
}

func fmtConf(c float64) string { return strconv.FormatFloat(c, 'f', -1, 64) }

// overBudget returns why the run's totals exceed its budget, or "".
func overBudget(b *pipeline.Budget, totals task.Usage) string {
	if b == nil {
		return ""
	}
	if b.MaxTokens != nil {
		if used := totals.InputTokens + totals.OutputTokens; used > *b.MaxTokens {
			return fmt.Sprintf("Token budget exceeded: %s tokens used (limit: %s)", thousands(used), thousands(*b.MaxTokens))
		}
	}
	if b.MaxUSD != nil && totals.CostUSD > *b.MaxUSD {
		return fmt.Sprintf("Cost budget exceeded: $%.4f used (limit: $%.4f)", totals.CostUSD, *b.MaxUSD)
	}
	return ""
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// finish applies the budget to a completed step, records it, closes the
// run when the step ended it and builds the Response.
type outcome struct {
	name     string // Response.Step and the Steps key
	record   store.StepRecord
	status   string
	reason   string
	output   json.RawMessage
	usage    stepUsage
	extra    map[string]json.RawMessage // more Steps entries (branches)
	noBudget bool
	// stored, when set, is what finish adds to the run's stored usage in
	// place of usage: an agent step that outlived an invocation added
	// its model calls' usage as it made them.
	stored *stepUsage
}

func (t *taskRun) finish(ctx context.Context, o outcome) (task.Response, error) {
	totals := t.req.Usage.Add(o.usage.task())
	if o.status == task.StatusCompleted && !o.noBudget {
		if why := overBudget(t.req.Pipeline.Budget, totals); why != "" {
			o.status, o.reason = task.StatusAborted, why
			o.record.Flags = append(o.record.Flags, FlagBudgetExceeded)
			t.overBudget = true
		}
	}
	rec := o.record
	muted, notified := t.mutedNotices(ctx, o.status, o.reason, o.output)
	rec.Flags = append(rec.Flags, muted...)
	if err := t.putStep(ctx, rec); err != nil {
		return task.Response{}, err
	}
	add := o.usage
	if o.stored != nil {
		add = *o.stored
	}
	if err := t.addUsage(ctx, rec.Name+"#"+strconv.Itoa(max(rec.Attempt, 1)), add); err != nil {
		return task.Response{}, err
	}
	if err := t.endRun(ctx, o.status, o.reason, totals, o.output, notified); err != nil {
		return task.Response{}, err
	}
	steps := make(map[string]json.RawMessage, 1+len(o.extra))
	for k, v := range o.extra {
		steps[k] = v
	}
	steps[o.name] = o.output
	return task.Response{Status: o.status, Step: o.name, Output: o.output, Steps: steps, Usage: totals, Reason: o.reason}, nil
}

// baseRecord fills a record from a result.
func (t *taskRun) baseRecord(name, exec string, attempt int, started time.Time, res *result) store.StepRecord {
	end := t.h.now()
	rec := store.StepRecord{
		Name:         name,
		Index:        t.index(started),
		Attempt:      attempt,
		Executor:     exec,
		Prompt:       res.prompt,
		PromptHash:   res.promptHash,
		RawResponse:  res.raw,
		Model:        res.model,
		Provider:     res.provider,
		InputTokens:  res.usage.in,
		OutputTokens: res.usage.out,
		CostUSD:      res.usage.cost,
		Flags:        append([]string(nil), res.flags...),
		StartedAt:    started,
		FinishedAt:   end,
		DurationMS:   max(end.Sub(started).Milliseconds(), 0),
	}
	if res.out != nil {
		p, e := res.primary, res.effective
		rec.PrimaryConfidence, rec.VerifierConfidence, rec.EffectiveConfidence = &p, res.verifier, &e
		rec.VerifierOutput = res.verOut
	}
	return rec
}

// agentRecord is baseRecord with an agent step's agent, iterations and
// trace (see attachAgent).
func (t *taskRun) agentRecord(ctx context.Context, name, exec string, attempt int, started time.Time, res *result) (store.StepRecord, error) {
	rec := t.baseRecord(name, exec, attempt, started, res)
	return rec, t.attachAgent(ctx, &rec, res)
}

func decodeStep[T any](req *task.Request) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(req.Step, v); err != nil {
		return nil, fault.Errorf[fault.ConfigError]("step handler: %s request: step config: %v", req.Mode, err)
	}
	return v, nil
}

// maxCachedSteps bounds the decoded-step cache; a process sees a few
// distinct steps, the bound only guards against unbounded growth.
const maxCachedSteps = 4096

// seqSteps is the process's cache of decoded sequential steps, by the
// JSON text of their Task's step: a state machine sends the same text to
// every run of a step, and decoding it (json.Unmarshal into a
// pipeline.Step) was a fifth of a plain step's CPU in the handler. Only
// a shared step (see shared) is kept; the handler never changes a
// decoded step.
var seqSteps = struct {
	mu sync.RWMutex
	m  map[string]*pipeline.Step
}{m: make(map[string]*pipeline.Step)}

// decodeSeqStep is decodeStep[pipeline.Step] through seqSteps: the step
// a step Task's text decodes to, the same for the same text. An error
// is decodeStep's, and is never kept.
func decodeSeqStep(req *task.Request) (*pipeline.Step, error) {
	seqSteps.mu.RLock()
	st, ok := seqSteps.m[string(req.Step)]
	seqSteps.mu.RUnlock()
	if ok {
		return st, nil
	}
	st, err := decodeStep[pipeline.Step](req)
	if err != nil || !shared(st) {
		return st, err
	}
	seqSteps.mu.Lock()
	if len(seqSteps.m) >= maxCachedSteps {
		clear(seqSteps.m)
	}
	seqSteps.m[string(req.Step)] = st
	seqSteps.mu.Unlock()
	return st, nil
}

// shared reports whether a decoded step may serve every Task of its text:
// it holds nothing the handler hands on to code that could keep or change
// it (an agent, a verifier's or a loop's settings, a grounding judge,
// checks, calibration, a failure webhook, an executor_config that is
// empty but not absent: an empty config goes to the executor as it is,
// while a non-empty one is rendered into a copy first).
func shared(st *pipeline.Step) bool {
	return st.Name != "" && st.Agent == nil && st.Verifier == nil && st.LoopUntil == nil &&
		st.Grounding == nil && len(st.Checks) == 0 && st.Calibration == nil &&
		st.OnFailure.Webhook == nil && (st.ExecutorConfig == nil || len(st.ExecutorConfig) > 0)
}

// promptHashes is the process's cache of store.PromptHash by prompt
// template: a step's template is hashed (SHA-256, hex) once, not at
// every Task. Bounded as the template cache.
var promptHashes = struct {
	mu sync.RWMutex
	m  map[string]string
}{m: make(map[string]string)}

// promptHash is store.PromptHash(src) through promptHashes.
func promptHash(src string) string {
	promptHashes.mu.RLock()
	h, ok := promptHashes.m[src]
	promptHashes.mu.RUnlock()
	if ok {
		return h
	}
	h = store.PromptHash(src)
	promptHashes.mu.Lock()
	if len(promptHashes.m) >= maxCachedTemplates {
		clear(promptHashes.m)
	}
	promptHashes.m[src] = h
	promptHashes.mu.Unlock()
	return h
}

// stepUnit is a sequential step as a unit.
func stepUnit(st *pipeline.Step) unit {
	return unit{
		name: st.Name, key: st.Name, record: st.Name,
		executor: st.Executor, config: st.ExecutorConfig, prompt: st.PromptTemplate,
		timeout: st.TimeoutSeconds, verifier: st.Verifier, loop: st.LoopUntil,
		agent: st.Agent,
	}
}

// step runs a sequential step.
func (t *taskRun) step(ctx context.Context) (task.Response, error) {
	st, err := decodeSeqStep(t.req)
	if err != nil {
		return task.Response{}, err
	}
	if st.Name == "" {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step handler: step config has no name")
	}
	started := t.h.now()
	attempt := max(t.req.Attempt, 1)
	res, err := t.execute(ctx, stepUnit(st))
	if err != nil {
		return t.stepFailed(ctx, st, attempt, started, &res, err, res.usage)
	}
	return t.stepDone(ctx, st, attempt, started, &res, nil)
}

// stepFailed records a failed attempt of a sequential step (what it spent,
// and an agent step's loop so far), adds stored to the run's usage, and
// returns err, the fault the state machine's Retry and Catch see.
func (t *taskRun) stepFailed(ctx context.Context, st *pipeline.Step, attempt int, started time.Time, res *result, err error, stored stepUsage) (task.Response, error) {
	rec, aerr := t.agentRecord(ctx, st.Name, st.Executor, attempt, started, res)
	if aerr != nil {
		return task.Response{}, aerr
	}
	rec.Status, rec.Error = store.StepFailed, err.Error()
	if perr := t.putStep(ctx, rec); perr != nil {
		return task.Response{}, perr
	}
	if uerr := t.addUsage(ctx, st.Name+"#"+strconv.Itoa(attempt), stored); uerr != nil {
		return task.Response{}, uerr
	}
	return task.Response{}, err
}

// stepDone gates and records a sequential step's answer: its grounding
// judge and deterministic checks first (see settle). stored, when set,
// is what to add to the run's stored usage instead of the step's whole
// usage (a part was added already).
func (t *taskRun) stepDone(ctx context.Context, st *pipeline.Step, attempt int, started time.Time, res *result, stored *stepUsage) (task.Response, error) {
	if err := t.storeArtifacts(ctx, st.Name, res.out); err != nil {
		return task.Response{}, err
	}
	out, err := compact(res.out, res.effective)
	if err != nil {
		return task.Response{}, err
	}
	resp, err := t.settle(ctx, st, attempt, started, res, out, stored)
	if err != nil {
		return resp, err
	}
	resp.Agent = res.agent.summary()
	return resp, nil
}

// recordStatus is a Task's status (package task's words: completed,
// stopped, escalated, aborted, failed, waiting) as its step record's: the
// one place a status crosses from the contract to the store.
func recordStatus(status string) store.StepStatus { return store.StepStatus(status) }
