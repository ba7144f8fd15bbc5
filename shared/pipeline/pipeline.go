package pipeline

import (
	"fmt"
	"strings"
)

// Defaults of the pipeline format.
const (
	DefaultConfidenceThreshold = 0.75
	DefaultOnLowConfidence     = LowEscalate
	DefaultOnAbort             = "notify"
	DefaultRetryAttempts       = 3
	DefaultRetryDelaySeconds   = 1.0
	DefaultRetryBackoff        = BackoffExponential
	DefaultVetoFloor           = 0.60
	DefaultLoopMaxIterations   = 3
	DefaultMaxItems            = 20
	DefaultFanOutAs            = "item"
	DefaultWebhookTimeout      = 30
	DefaultDedupWindowSeconds  = 300
	DefaultScheduleSeverity    = "info"
	DefaultMaxResumeAgeSeconds = 3600
	DefaultBranchWeight        = 1.0
	// grounding: and deterministic_checks:.
	DefaultGroundingAgent         = "grounding-judge"
	DefaultGroundingExecutor      = ExecGateway
	DefaultGroundingTimeout       = 120
	DefaultGroundingMaxTraceChars = 1500
	DefaultCheckTimeout           = 30  // webhook and shell checks
	DefaultHumanCheckTimeout      = 300 // human checks
	DefaultWebhookCheckExpect     = "response.status_code < 400"
	DefaultShellCheckExpect       = "exit_code == 0"
	// calibration:.
	DefaultCalibrationBinWidth       = 0.1
	DefaultCalibrationNMin           = 20
	DefaultCalibrationOnUncalibrated = UncalibratedProceed
)

// What a calibrated step does when its bin is not validated
// (calibration.on_uncalibrated).
const (
	UncalibratedProceed  = "proceed"  // the trust stands
	UncalibratedEscalate = "escalate" // the trust is 0: the gate decides on_low_confidence
)

// Pos is a position in a pipeline file. Line and Col are 1-based; a zero
// Pos means the position is unknown.
type Pos struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.File == "":
		return fmt.Sprintf("%d:%d", p.Line, p.Col)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// IsValid reports whether the position is known.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Fields records where each key of a YAML mapping was written: key name to
// the position of its value. It lets checks point at one field of a node.
type Fields map[string]Pos

// Has reports whether the author wrote key.
func (f Fields) Has(key string) bool { _, ok := f[key]; return ok }

// Stage of a pipeline.
type Stage string

// Stages.
const (
	StageTesting    Stage = "testing"
	StageProduction Stage = "production"
)

// Workflow is the Step Functions workflow type a pipeline asks for.
type Workflow string

// Workflow types: auto (the default) lets the compiler choose Express when
// the pipeline can run as one (compiler.WorkflowOf), else Standard.
const (
	WorkflowAuto     Workflow = "auto"
	WorkflowStandard Workflow = "standard"
	WorkflowExpress  Workflow = "express"
)

// LowConfidence is what a step does when its effective confidence is below
// its threshold.
type LowConfidence string

// Low-confidence actions.
const (
	LowEscalate LowConfidence = "escalate"
	LowAbort    LowConfidence = "abort"
	LowProceed  LowConfidence = "proceed"
)

// Join combines the confidences of a group's branches.
type Join string

// Joins.
const (
	JoinAllMustPass     Join = "all_must_pass"    // the minimum
	JoinAnyMustPass     Join = "any_must_pass"    // the maximum
	JoinWeightedAverage Join = "weighted_average" // Σ c·w / Σ w
)

// Backoff of a retry policy.
type Backoff string

// Backoffs.
const (
	BackoffFixed       Backoff = "fixed"
	BackoffExponential Backoff = "exponential"
)

// Failure policies of on_failure.
const (
	FailureAbort    = "abort"
	FailureContinue = "continue"
)

// Executor names known to Stepline.
const (
	ExecGateway   = "gateway"
	ExecAnthropic = "anthropic"
	ExecBedrock   = "bedrock"
	ExecOpenClaw  = "openclaw" // an agent on an OpenClaw gateway (executors.openclaw)
	ExecWebhook   = "webhook"
	ExecNotify    = "notify"
	ExecHuman     = "human"
	ExecPipeline  = "pipeline"
	ExecScripted  = "scripted"
)

// Executors returns every executor name the format accepts, in a new
// slice the caller may change.
func Executors() []string {
	return []string{ExecGateway, ExecAnthropic, ExecBedrock, ExecOpenClaw, ExecWebhook, ExecNotify, ExecHuman, ExecPipeline, ExecScripted}
}

// Pipeline is a parsed pipeline file.
type Pipeline struct {
	Pos            Pos       `json:"-"`
	Fields         Fields    `json:"-"`
	Name           string    `json:"name,omitempty"`
	Description    string    `json:"description,omitempty"`
	Tags           []string  `json:"tags,omitempty"`
	Version        int       `json:"version,omitempty"`
	Stage          Stage     `json:"stage,omitempty"`
	Workflow       Workflow  `json:"workflow,omitempty"` // auto when not written
	Vars           []Var     `json:"vars,omitempty"`     // in file order
	Trigger        *Trigger  `json:"trigger,omitempty"`
	ContextInclude []Include `json:"context_include,omitempty"`
	Steps          []Node    `json:"steps,omitempty"`
	Notifications  []Action  `json:"notifications,omitempty"` // in file order
	Durable        *Durable  `json:"durable,omitempty"`
	Budget         *Budget   `json:"budget,omitempty"`
	Schedule       *Schedule `json:"schedule,omitempty"`
	// Readiness is advisory (package readiness reads it); the compiled
	// state machine never carries it.
	Readiness *Readiness `json:"readiness,omitempty"`
	// Config is the fingerprint of the state machine compiled from the
	// pipeline (task.Pipeline.Config), set by compiler.Lower; "" before.
	Config string `json:"-"`
}

// Var is one entry of vars.
type Var struct {
	Pos   Pos    `json:"-"`
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// Include is one context_template.include path.
type Include struct {
	Pos  Pos    `json:"-"`
	Path string `json:"path,omitempty"`
}

// Leaf is the name an include is exposed under: its last dotted segment.
func (i Include) Leaf() string {
	if n := strings.LastIndexByte(i.Path, '.'); n >= 0 {
		return i.Path[n+1:]
	}
	return i.Path
}

// Trigger selects the events that start the pipeline.
type Trigger struct {
	Pos   Pos     `json:"-"`
	Match []Match `json:"match,omitempty"` // in file order; all must hold
	Dedup *Dedup  `json:"dedup,omitempty"`
}

// Match is one condition of trigger.match.
type Match struct {
	Pos   Pos    `json:"-"`
	Field string `json:"field,omitempty"`
	Op    string `json:"op,omitempty"`    // eq ne in not_in regex gt gte lt lte
	Value any    `json:"value,omitempty"` // string, float64, bool, nil, or []any for in/not_in
}

// MatchOps returns the trigger.match operators, in a new slice the caller
// may change.
func MatchOps() []string {
	return []string{"eq", "ne", "in", "not_in", "regex", "gt", "gte", "lt", "lte"}
}

// Dedup overrides the deduplication of triggered runs.
type Dedup struct {
	Pos           Pos   `json:"-"`
	Enabled       *bool `json:"enabled,omitempty"`        // nil: the service default
	WindowSeconds *int  `json:"window_seconds,omitempty"` // nil: the service default
}

// Action is one entry of notifications: what to send when Name fires.
type Action struct {
	Pos     Pos            `json:"-"`
	Name    string         `json:"name,omitempty"`
	Notices []Notification `json:"notices,omitempty"`
}

// Notification channels.
const (
	ChannelLog     = "log"
	ChannelWebhook = "webhook"
	ChannelSlack   = "slack"
	ChannelSNS     = "sns"
	// ChannelTelegram sends with the Bot API's sendMessage (HTML) as
	// config.bot_token to config.chat_id.
	ChannelTelegram = "telegram"
	// ChannelMSTeams posts {"text"} to a Microsoft Teams incoming webhook.
	ChannelMSTeams = "msteams"
)

// Notification is one message sent when an action fires.
type Notification struct {
	Pos      Pos            `json:"-"`
	Channel  string         `json:"channel,omitempty"`
	Template string         `json:"template,omitempty"`
	Config   map[string]any `json:"config,omitempty"`
}

// Durable is the pipeline's resume policy. A nil *Durable means runs are
// not resumed automatically.
type Durable struct {
	Pos                 Pos    `json:"-"`
	OnInterrupted       string `json:"on_interrupted,omitempty"`         // rerun | escalate
	MaxResumeAgeSeconds *int   `json:"max_resume_age_seconds,omitempty"` // nil: DefaultMaxResumeAgeSeconds
}

// Budget bounds a run's usage; a nil limit is unbounded.
type Budget struct {
	Pos               Pos      `json:"-"`
	MaxTokens         *int64   `json:"max_tokens,omitempty"`
	MaxUSD            *float64 `json:"max_usd,omitempty"`
	IncludeApproxCost bool     `json:"include_approx_cost,omitempty"`
}

// Schedule starts the pipeline on a cron schedule.
type Schedule struct {
	Pos      Pos               `json:"-"`
	Fields   Fields            `json:"-"`
	Cron     string            `json:"cron,omitempty"`
	TimeZone string            `json:"timezone,omitempty"` // IANA name; empty: UTC
	Summary  string            `json:"summary,omitempty"`
	Severity string            `json:"severity,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Team     string            `json:"team,omitempty"`
}
