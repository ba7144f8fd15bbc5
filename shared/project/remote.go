package project

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stepline/stepline/internal/lazyregexp"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor/settings"
)

// Where an agent step's agent runs (Project.Runtime).
const (
	RunsInProcess = "in-process"          // a profile of the project, in Stepline's own tool loop
	RunsGateway   = agent.RuntimeGateway  // the remote agent gateway of executors.gateway
	RunsOpenClaw  = agent.RuntimeOpenClaw // the OpenClaw gateway of executors.openclaw
)

// DefaultOpenClawIdentity is the directory local runs read the OpenClaw
// device identity from when executors.openclaw.identity is not set: where
// OpenClaw keeps it.
const DefaultOpenClawIdentity = "~/.openclaw/identity"

// Secrets holding the OpenClaw identity files where no directory is read
// (the step function on AWS): device.json and device-auth.json, each
// whole, mapped like any other secret.
const (
	OpenClawDeviceSecret     = "OPENCLAW_DEVICE"
	OpenClawDeviceAuthSecret = "OPENCLAW_DEVICE_AUTH"
)

// DefaultSessionKey is the session key of a remote agent step that sets
// none: one session per run and step. {{agent}} stands for the step's
// agent, as in the reference.
const DefaultSessionKey = "agent:{{agent}}:pipeline:{{pipeline_run_id}}:{{current_step}}"

// Bounds of a remote agent step's executor_config.
const (
	MaxSessionKeyTemplate = 1000    // characters of session_key as written
	MaxTraceMaxChars      = 1000000 // trace_max_chars
)

// remoteKeys are the executor_config keys a remote agent step reads.
var remoteKeys = map[string][]string{
	agent.RuntimeOpenClaw: {"agent", "session_key", "model", "thinking_level"},
	agent.RuntimeGateway:  {"agent", "session_key", "model", "thinking_level", "trace_max_chars"},
}

// agentTag is {{agent}} (any spacing, with or without whitespace
// control) in a session key.
var agentTag = lazyregexp.New(`\{\{-?\s*agent\s*-?\}\}`)

// Runtime says where a step of executor naming agent name runs, by the
// project's one rule: a profile of the project wins (RunsInProcess);
// without one, a gateway step runs on the remote agent gateway when
// executors.gateway.url is set (RunsGateway); an openclaw step always
// runs on the OpenClaw gateway (RunsOpenClaw), configured or not. ""
// means nothing serves it: the agent is unknown, or the executor runs no
// agent.
func (p *Project) Runtime(executor, name string) string {
	if executor == agent.RuntimeOpenClaw {
		return RunsOpenClaw
	}
	if !slices.Contains(AgentExecutors(), executor) {
		return ""
	}
	if _, ok := p.Profiles[name]; ok {
		return RunsInProcess
	}
	if executor == agent.APIGateway && p.Executors.Gateway.URL != "" {
		return RunsGateway
	}
	return ""
}

// RuntimeURL is the URL of a remote runtime (RunsGateway, RunsOpenClaw)
// as stepline.yaml sets it; "" when it sets none.
func (p *Project) RuntimeURL(runtime string) string {
	switch runtime {
	case RunsGateway:
		return p.Executors.Gateway.URL
	case RunsOpenClaw:
		return p.Executors.OpenClaw.URL
	}
	return ""
}

// OpenClawIdentity is the directory local runs read the OpenClaw identity
// from: executors.openclaw.identity (relative to the project file's
// directory; ~ is the home directory where the step runs), else
// DefaultOpenClawIdentity.
func (p *Project) OpenClawIdentity() string {
	id := p.Executors.OpenClaw.Identity
	switch {
	case id == "":
		return DefaultOpenClawIdentity
	case id == "~" || strings.HasPrefix(id, "~/") || filepath.IsAbs(id):
		return id
	}
	return filepath.Join(p.Dir, id)
}

// SessionKey is the session key template a remote agent step of agent
// name sends, before the step's Liquid rendering: its session_key, else
// DefaultSessionKey, with {{agent}} written out as name.
func SessionKey(name string, cfg map[string]any) string {
	t, ok := cfg["session_key"].(string)
	if !ok || strings.TrimSpace(t) == "" {
		t = DefaultSessionKey
	}
	return agentTag.ReplaceAllLiteralString(t, name)
}

// resolveRemote resolves an agent step whose agent runs on a remote
// runtime (see Runtime); ok is false for one that runs in-process or
// names no agent Runtime places, which Resolve handles.
func (p *Project) resolveRemote(executor string, cfg map[string]any) (r *agent.Resolved, issues []Issue, ok bool) {
	name, isStr := cfg["agent"].(string)
	runtime := p.Runtime(executor, name)
	if runtime != RunsGateway && runtime != RunsOpenClaw {
		return nil, nil, false
	}
	fail := func(key, format string, args ...any) {
		issues = append(issues, Issue{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	where := "the OpenClaw gateway"
	if runtime == RunsGateway {
		where = "the remote agent gateway"
	}
	switch {
	case cfg["agent"] == nil:
		fail("agent", "required: the agent %s runs", where)
	case !isStr:
		fail("agent", "want a string, got %s", settings.TypeName(cfg["agent"]))
	case !agent.NameRE.MatchString(name):
		fail("agent", "%q is not an agent name (letters, digits, _ and -, at most 80, starting with a letter or digit)", name)
	}
	r = &agent.Resolved{Profile: agent.Profile{Name: name}, Remote: p.remote(runtime)}
	for _, key := range slices.Sorted(maps.Keys(cfg)) {
		v := cfg[key]
		if v == nil || key == "agent" {
			continue
		}
		s, isStr := v.(string)
		switch {
		case !slices.Contains(remoteKeys[runtime], key):
			issues = append(issues, Issue{Key: key, Msg: fmt.Sprintf("ignored: agent %q runs on %s, whose own profile decides it", name, where), Warning: true})
		case key == "trace_max_chars":
			p.traceMax(v, fail)
		case !isStr:
			fail(key, "want a string, got %s", settings.TypeName(v))
		case key == "model":
			if err := agent.CheckModel(s); err != nil {
				fail(key, "%v", err)
			}
		case key == "thinking_level":
			if err := agent.CheckThinkingLevel(s); err != nil {
				fail(key, "%v", err)
			} else {
				r.ThinkingLevel = s
			}
		case key == "session_key":
			checkSessionKey(name, s, fail)
		}
	}
	for _, is := range issues {
		if !is.Warning {
			return nil, sortIssues(issues), true
		}
	}
	return r, sortIssues(issues), true
}

// remote is where runtime runs, from the executors section.
func (p *Project) remote(runtime string) *agent.Remote {
	if runtime == RunsGateway {
		return &agent.Remote{Runtime: runtime, URL: p.Executors.Gateway.URL, Token: p.Executors.Gateway.Token}
	}
	return &agent.Remote{Runtime: runtime, URL: p.Executors.OpenClaw.URL, Identity: p.OpenClawIdentity(),
		Device: "${" + OpenClawDeviceSecret + "}", DeviceAuth: "${" + OpenClawDeviceAuthSecret + "}"}
}

// checkSessionKey checks a session_key as written: within its bound, and
// starting with "agent:<name>:" before any template, since the gateways
// refuse a key of another agent. {{agent}} counts as name.
func checkSessionKey(name, t string, fail func(key, format string, args ...any)) {
	if len(t) > MaxSessionKeyTemplate {
		fail("session_key", "%d characters, more than %d", len(t), MaxSessionKeyTemplate)
		return
	}
	if strings.TrimSpace(t) == "" {
		fail("session_key", "must not be empty (leave it out for the default %s)", DefaultSessionKey)
		return
	}
	prefix := "agent:" + name + ":"
	if name != "" && !strings.HasPrefix(agentTag.ReplaceAllLiteralString(t, name), prefix) {
		fail("session_key", "%q must start with %q: the gateway refuses a session key of another agent", t, prefix)
	}
}

// traceMax checks trace_max_chars: a whole number in 1..MaxTraceMaxChars.
func (p *Project) traceMax(v any, fail func(key, format string, args ...any)) {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float64:
		f = x
	default:
		fail("trace_max_chars", "want a whole number, got %s", settings.TypeName(v))
		return
	}
	if math.IsNaN(f) || f != math.Trunc(f) || f < 1 || f > MaxTraceMaxChars {
		fail("trace_max_chars", "want a whole number in 1..%d, got %v", MaxTraceMaxChars, v)
	}
}
