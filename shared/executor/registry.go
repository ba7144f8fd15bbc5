package executor

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/stepline/stepline/shared/agent/mcp"
	"github.com/stepline/stepline/shared/awsrest"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/internal/origin"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/secret"
)

// Executor names, as pipelines write them (package pipeline's, which
// define them).
const (
	Gateway   = pipeline.ExecGateway
	Anthropic = pipeline.ExecAnthropic
	Bedrock   = pipeline.ExecBedrock
	Webhook   = pipeline.ExecWebhook
	Notify    = pipeline.ExecNotify
	Scripted  = pipeline.ExecScripted
	Human     = pipeline.ExecHuman
	Pipeline  = pipeline.ExecPipeline
	OpenClaw  = pipeline.ExecOpenClaw
)

// Stages a pipeline runs in (package pipeline's).
const (
	StageTesting    = string(pipeline.StageTesting)
	StageProduction = string(pipeline.StageProduction)
)

// Defaults and limits.
const (
	DefaultModelTimeout    = 10 * time.Minute // gateway, anthropic, bedrock without timeout_seconds
	DefaultDeliveryTimeout = 30 * time.Second // webhook, notify without timeout_seconds
	DefaultMaxRetryWait    = 20 * time.Second // longest Retry-After waited inside one call
	MaxBodyBytes           = 8 << 20          // response bytes read
	MaxRawBytes            = 64 << 10         // response bytes kept for audit
)

// scripts reports whether the executor is answered from scripted replies
// when a registry has them.
func scripts(name string) bool {
	switch name {
	case Gateway, Anthropic, Bedrock, Webhook, Notify, Scripted:
		return true
	}
	return false
}

// ConverseAPI is the Bedrock runtime call the bedrock executor makes
// (satisfied by *awsrest.BedrockRuntime).
type ConverseAPI interface {
	// Converse sends a Converse request body (JSON) for the model with the
	// given id, inference profile or ARN, and returns the answer's body.
	// An error answer of the service is an *awsrest.ResponseError; an
	// answer too large to read wraps awsrest.ErrBodyTooLarge; other errors
	// are transport and context errors.
	Converse(ctx context.Context, modelID string, body []byte) ([]byte, error)
}

var _ ConverseAPI = (*awsrest.BedrockRuntime)(nil)

// Every executor with a provider is an llmoutput.Provider.
var (
	_ llmoutput.Provider = (*gateway)(nil)
	_ llmoutput.Provider = (*anthropic)(nil)
	_ llmoutput.Provider = (*bedrock)(nil)
	_ llmoutput.Provider = (*webhook)(nil)
	_ llmoutput.Provider = (*notify)(nil)
	_ llmoutput.Provider = (*scripted)(nil)
)

// Deps is what a Registry needs from its process. Every field is optional.
type Deps struct {
	// HTTP sends every HTTP executor's requests (and MCP servers'), through
	// a copy that follows redirects only within a request's origin (see
	// MaxRedirects): a redirect elsewhere fails the call with an
	// ExecutorRejected. Nil: a fresh client without an overall timeout
	// (calls have their own deadlines).
	HTTP *http.Client
	// Secrets resolves ${NAME}. Nil: every reference is a missing secret.
	Secrets secret.Resolver
	// Bedrock is the Bedrock runtime client. Nil: bedrock steps fail with
	// a ConfigError.
	Bedrock ConverseAPI
	// Defaults are the values executor configs fall back on (the
	// gateway's OPENAI_BASE_URL), read from the environment by main.
	Defaults settings.Defaults
	// Responses, when set, answers every model, webhook and notify call
	// from scripted replies instead of the network (offline runs).
	Responses *Responses
	// Logger receives one debug line per call. Nil: nothing is logged.
	Logger *slog.Logger
	// MaxRetryWait is the longest Retry-After a call waits out itself
	// before retrying once. Zero: DefaultMaxRetryWait; negative: never.
	MaxRetryWait time.Duration
	// MCPStdio lets agent steps start stdio MCP servers (commands): local
	// runs only. Off (AWS): such a server is a ConfigError.
	MCPStdio bool
	// Environ is the environment stdio MCP servers start with (main
	// passes os.Environ()), before each server's own env.
	Environ []string
	// OpenClawIdentityFiles lets openclaw steps read their device
	// identity from the directory the step names (local runs; Home is
	// what ~ stands for in it). Off (AWS): from the secrets the step
	// names, OPENCLAW_DEVICE and OPENCLAW_DEVICE_AUTH.
	OpenClawIdentityFiles bool
	Home                  string
	// TraceParent gives the W3C traceparent a remote agent request
	// carries (the step Lambda derives it from the invocation's X-Ray
	// trace); nil, or "": a new trace per request.
	TraceParent func(ctx context.Context) string
	// RemotePing is how often a remote runtime's connection is pinged
	// (an unanswered ping is a dropped connection). Zero:
	// DefaultRemotePing; negative: never.
	RemotePing time.Duration
	// Now and Sleep are the clock (for Retry-After dates) and the wait
	// (for Retry-After); nil: the real ones.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Call is one step's use of an executor (defined in package pipeline, so
// that the step runner names it without linking this package).
type Call = pipeline.ExecutorCall

// Registry hands out a Provider per call. Build one per process; it is safe
// for concurrent use.
type Registry struct {
	deps  Deps
	log   *slog.Logger
	tools *mcp.Client // the MCP sessions of agent steps, closed by Close
}

// NewRegistry returns a registry over deps.
func NewRegistry(deps Deps) *Registry {
	if deps.HTTP == nil {
		deps.HTTP = &http.Client{}
	}
	deps.HTTP = origin.Client(deps.HTTP)
	if deps.MaxRetryWait == 0 {
		deps.MaxRetryWait = DefaultMaxRetryWait
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Sleep == nil {
		deps.Sleep = sleep
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	tools := &mcp.Client{HTTP: deps.HTTP, Secrets: deps.Secrets, Stdio: deps.MCPStdio, Environ: deps.Environ, Logger: deps.Logger}
	return &Registry{deps: deps, log: log, tools: tools}
}

// Known reports whether name is an executor a pipeline may use
// (settings.Known).
func (r *Registry) Known(name string) bool { return settings.Known(name) }

// Names returns every executor name a pipeline may use (settings.Names).
func (r *Registry) Names() []string { return settings.Names() }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Provider returns the Provider for call. The configuration is checked
// here (secrets are resolved later, at each Complete); a bad one is a
// *fault.ConfigError, as are an unknown executor and one with no Provider
// (human, pipeline; openclaw, whose steps run an agent through Agent).
func (r *Registry) Provider(call Call) (llmoutput.Provider, error) {
	p, err := r.provider(call)
	if err != nil {
		return nil, err
	}
	return traced{p: p, call: call}, nil
}

func (r *Registry) provider(call Call) (llmoutput.Provider, error) {
	if !settings.Known(call.Executor) {
		return nil, fault.Errorf[fault.ConfigError]("unknown executor %q (known: %v)", call.Executor, settings.Names())
	}
	switch call.Executor {
	case Human:
		return nil, fault.Errorf[fault.ConfigError]("executor %q waits for a decision through the state machine (task token); it has no provider", call.Executor)
	case Pipeline:
		return nil, fault.Errorf[fault.ConfigError]("executor %q runs a child pipeline through the state machine; it has no provider", call.Executor)
	case OpenClaw:
		return nil, fault.Errorf[fault.ConfigError]("step %q: executor %q runs an agent on the OpenClaw gateway: its step carries no resolved agent (compile it with this Stepline)", call.Step, call.Executor)
	}
	if err := settings.IssuesError(call.Executor, settings.Check(call.Executor, call.Config, settings.ModeBuild, r.deps.Defaults)); err != nil {
		return nil, err
	}
	if r.deps.Responses != nil && scripts(call.Executor) {
		return &scripted{reg: r, call: call, replies: r.deps.Responses}, nil
	}
	switch call.Executor {
	case Gateway:
		return &gateway{reg: r, call: call}, nil
	case Anthropic:
		return &anthropic{reg: r, call: call}, nil
	case Bedrock:
		if r.deps.Bedrock == nil {
			return nil, fault.Errorf[fault.ConfigError]("bedrock: no Bedrock client is configured")
		}
		return &bedrock{reg: r, call: call, client: r.deps.Bedrock}, nil
	case Webhook:
		return &webhook{reg: r, call: call}, nil
	case Notify:
		return &notify{reg: r, call: call}, nil
	case Scripted:
		return nil, fault.Errorf[fault.ConfigError]("scripted: step %q has executor scripted but no scripted replies were given (--responses)", call.Step)
	}
	return nil, fault.Errorf[fault.ConfigError]("unknown executor %q", call.Executor)
}

// callContext bounds ctx by the step's timeout and the executor's own, and
// returns the bound that applies, for messages.
func callContext(ctx context.Context, step, own time.Duration) (context.Context, context.CancelFunc, time.Duration) {
	limit := own
	if step > 0 && (limit <= 0 || step < limit) {
		limit = step
	}
	if limit <= 0 {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, 0
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	return ctx, cancel, limit
}
