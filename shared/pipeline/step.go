package pipeline

import "github.com/stepline/stepline/shared/agent/spec"

// Node is an entry of a pipeline's steps: a *Step, a *Parallel or a *FanOut.
type Node interface {
	// NodeName is the step or group name.
	NodeName() string
	// Position is where the node starts in the file.
	Position() Pos
	node()
}

// Gate is the confidence gate shared by steps and groups.
type Gate struct {
	ConfidenceThreshold float64       `json:"confidence_threshold,omitempty"`
	OnLowConfidence     LowConfidence `json:"on_low_confidence,omitempty"`
	OnAbort             string        `json:"on_abort,omitempty"` // the notifications action fired when aborted
}

// Step is a sequential step.
type Step struct {
	Pos            Pos            `json:"-"`
	Fields         Fields         `json:"-"`
	Name           string         `json:"name,omitempty"`
	Executor       string         `json:"executor,omitempty"`
	ExecutorConfig map[string]any `json:"executor_config,omitempty"`
	PromptTemplate string         `json:"prompt_template,omitempty"`
	Gate
	TimeoutSeconds int        `json:"timeout_seconds,omitempty"` // 0: none set
	When           string     `json:"when,omitempty"`
	OnFailure      OnFailure  `json:"on_failure,omitempty"`
	Retry          *Retry     `json:"retry,omitempty"`
	Verifier       *Verifier  `json:"verifier,omitempty"`
	LoopUntil      *LoopUntil `json:"loop_until,omitempty"`
	// Agent is the agent the step runs (executor_config.agent), resolved
	// by the compiler from the project; nil for a single model call.
	Agent *spec.Resolved `json:"agent,omitempty"`
	// Grounding asks a judge agent whether the step's answer is borne
	// out by its tool trace (signal G); nil: no judge.
	Grounding *Grounding `json:"grounding,omitempty"`
	// Checks are the step's deterministic_checks, evaluated in order
	// after its answer (signal D); all must pass.
	Checks []*Check `json:"deterministic_checks,omitempty"`
	// Calibration looks the step's trust up in the labelled history of
	// its bucket (signal C); nil: none.
	Calibration *Calibration `json:"calibration,omitempty"`
}

// Calibration is a step's calibration: its past executions in the same
// configuration (the bucket: step, executor or agent, model, provider,
// prompt hash, agent version), binned by their trust in bins of BinWidth,
// with the labels people and checks gave them. A bin with at least NMin
// labelled executions is validated: its mean label is C. Enforce makes
// C replace the step's trust (and the gate's policy the trust vector);
// without it, C is only recorded.
type Calibration struct {
	Pos            Pos     `json:"-"`
	Fields         Fields  `json:"-"`
	Enforce        bool    `json:"enforce,omitempty"`
	BinWidth       float64 `json:"bin_width"`
	NMin           int     `json:"n_min"`
	OnUncalibrated string  `json:"on_uncalibrated"` // UncalibratedProceed or UncalibratedEscalate
}

// Grounding is a step's grounding judge: an agent that reads the
// rendered task, the step's answer and its tool trace and answers with
// the share of the answer's load-bearing claims the trace supports.
type Grounding struct {
	Pos            Pos            `json:"-"`
	Fields         Fields         `json:"-"`
	Agent          string         `json:"agent,omitempty"`    // the judge's profile
	Executor       string         `json:"executor,omitempty"` // carries a model written without a provider
	ExecutorConfig map[string]any `json:"executor_config,omitempty"`
	TimeoutSeconds int            `json:"timeout_seconds,omitempty"`
	// Enforce caps the step's combined trust at G when G is known.
	Enforce bool `json:"enforce,omitempty"`
	// MaxTraceChars cuts each trace event the judge reads.
	MaxTraceChars int `json:"max_trace_chars,omitempty"`
	// Judge is the judge agent resolved by the compiler from the project.
	Judge *spec.Resolved `json:"judge,omitempty"`
}

// Check kinds.
const (
	CheckWebhook = "webhook"
	CheckShell   = "shell"
	CheckHuman   = "human"
)

// CheckKinds lists the kinds of deterministic check.
func CheckKinds() []string {
	return []string{CheckWebhook, CheckShell, CheckHuman}
}

// Check is one deterministic check of a step: a webhook whose response
// must meet Expect, a shell command (local runs only) whose exit code and
// output must meet Expect, or a human who approves the step's answer.
type Check struct {
	Pos    Pos    `json:"-"`
	Fields Fields `json:"-"`
	Name   string `json:"name,omitempty"`
	Type   string `json:"type,omitempty"` // webhook | shell | human
	// webhook
	URL     string            `json:"url,omitempty"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Payload any               `json:"payload,omitempty"` // a mapping or a list, rendered leaf by leaf
	// shell
	Run string `json:"run,omitempty"`
	// human
	Message string `json:"message,omitempty"`
	// Expect is a when: expression over the check's result (webhook:
	// response; shell: result, exit_code); the kind's default when the
	// author wrote none. Human checks have none.
	Expect         string `json:"expect,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// HumanChecks reports whether any of the step's checks waits for a human.
func (s *Step) HumanChecks() bool {
	for _, c := range s.Checks {
		if c.Type == CheckHuman {
			return true
		}
	}
	return false
}

// OnFailure is what happens when a step fails (an executor error after its
// retries; not a low-confidence decision).
type OnFailure struct {
	Pos     Pos             `json:"-"`
	Policy  string          `json:"policy,omitempty"` // abort | continue
	Webhook *FailureWebhook `json:"webhook,omitempty"`
}

// FailureWebhook is sent when a step fails, before its policy applies.
type FailureWebhook struct {
	Pos            Pos               `json:"-"`
	Fields         Fields            `json:"-"`
	URL            string            `json:"url,omitempty"`
	Method         string            `json:"method,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Payload        map[string]any    `json:"payload,omitempty"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
}

// Retry retries executor errors. Attempts counts every try, the first one
// included.
type Retry struct {
	Pos          Pos     `json:"-"`
	Fields       Fields  `json:"-"`
	Attempts     int     `json:"attempts,omitempty"`
	Backoff      Backoff `json:"backoff,omitempty"`
	DelaySeconds float64 `json:"delay_seconds,omitempty"`
}

// Verifier asks a second executor for an opinion on a step's answer.
type Verifier struct {
	Pos                 Pos             `json:"-"`
	Fields              Fields          `json:"-"`
	Executor            string          `json:"executor,omitempty"`
	ExecutorConfig      map[string]any  `json:"executor_config,omitempty"`
	Mode                string          `json:"mode,omitempty"`                 // critic | independent
	CombinationStrategy string          `json:"combination_strategy,omitempty"` // minimum | veto
	VetoFloor           float64         `json:"veto_floor,omitempty"`
	Trigger             VerifierTrigger `json:"trigger,omitempty"`
}

// Verifier modes and combinations.
const (
	ModeCritic      = "critic"
	ModeIndependent = "independent"
	CombineMinimum  = "minimum"
	CombineVeto     = "veto"
)

// VerifierTrigger says when the verifier runs: always, or when the primary
// confidence lies strictly between ConfidenceAbove and ConfidenceBelow.
type VerifierTrigger struct {
	Always          bool    `json:"always,omitempty"`
	ConfidenceBelow float64 `json:"confidence_below,omitempty"`
	ConfidenceAbove float64 `json:"confidence_above,omitempty"`
}

// LoopUntil re-runs a step until its effective confidence reaches
// Confidence or MaxIterations runs are spent.
type LoopUntil struct {
	Pos           Pos     `json:"-"`
	Confidence    float64 `json:"confidence,omitempty"`
	MaxIterations int     `json:"max_iterations,omitempty"`
}

// Parallel runs its branches at once and joins their confidences.
type Parallel struct {
	Pos    Pos    `json:"-"`
	Fields Fields `json:"-"`
	Name   string `json:"name,omitempty"`
	Join   Join   `json:"join,omitempty"`
	Gate
	TimeoutSeconds int       `json:"timeout_seconds,omitempty"`
	When           string    `json:"when,omitempty"`
	Branches       []*Branch `json:"branches,omitempty"`
}

// Branch is one step of a parallel group.
type Branch struct {
	Pos            Pos            `json:"-"`
	Fields         Fields         `json:"-"`
	Name           string         `json:"name,omitempty"`
	Executor       string         `json:"executor,omitempty"`
	ExecutorConfig map[string]any `json:"executor_config,omitempty"`
	PromptTemplate string         `json:"prompt_template,omitempty"`
	TimeoutSeconds int            `json:"timeout_seconds,omitempty"`
	Weight         float64        `json:"weight,omitempty"`
	Verifier       *Verifier      `json:"verifier,omitempty"`
	Agent          *spec.Resolved `json:"agent,omitempty"` // as Step.Agent
}

// FanOut runs one branch per item of a list and joins their confidences.
type FanOut struct {
	Pos            Pos            `json:"-"`
	Fields         Fields         `json:"-"`
	Name           string         `json:"name,omitempty"`
	Over           string         `json:"over,omitempty"`
	As             string         `json:"as,omitempty"`
	Executor       string         `json:"executor,omitempty"`
	ExecutorConfig map[string]any `json:"executor_config,omitempty"`
	PromptTemplate string         `json:"prompt_template,omitempty"`
	TimeoutSeconds int            `json:"timeout_seconds,omitempty"`
	Join           Join           `json:"join,omitempty"`
	Gate
	MaxItems int            `json:"max_items,omitempty"`
	OnEmpty  string         `json:"on_empty,omitempty"` // complete | skip | abort
	When     string         `json:"when,omitempty"`
	Verifier *Verifier      `json:"verifier,omitempty"`
	Agent    *spec.Resolved `json:"agent,omitempty"` // as Step.Agent; every item runs it
}

// Fan-out on_empty values.
const (
	EmptyComplete = "complete"
	EmptySkip     = "skip"
	EmptyAbort    = "abort"
)

func (s *Step) NodeName() string     { return s.Name }
func (s *Parallel) NodeName() string { return s.Name }
func (s *FanOut) NodeName() string   { return s.Name }
func (s *Step) Position() Pos        { return s.Pos }
func (s *Parallel) Position() Pos    { return s.Pos }
func (s *FanOut) Position() Pos      { return s.Pos }
func (*Step) node()                  {}
func (*Parallel) node()              {}
func (*FanOut) node()                {}

// TemplateName is how a step name is written in templates and when:
// hyphens become underscores.
func TemplateName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}
