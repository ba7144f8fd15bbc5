package project

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor/settings"
)

// AgentExecutors returns the executors a step may run an agent on; the
// executor carries the models a profile writes without a provider.
func AgentExecutors() []string {
	return []string{agent.APIGateway, agent.APIAnthropic, agent.APIBedrock}
}

// agentKeys are the executor_config keys an agent step reads besides its
// executor's transport keys.
var agentKeys = []string{"agent", "model", "thinking_level", "session_key"}

// transportKeys are the executor_config keys that place the endpoint of
// the models a profile writes without a provider.
var transportKeys = map[string][]string{
	agent.APIGateway:   {"base_url", "api_key"},
	agent.APIAnthropic: {"base_url", "api_key"},
	agent.APIBedrock:   nil,
}

// Issue is one problem of an agent step's executor_config: Key is the
// key it is about.
type Issue struct {
	Key     string
	Msg     string
	Warning bool
}

func (i Issue) String() string { return "executor_config." + i.Key + ": " + i.Msg }

// Resolve resolves the agent an agent step runs: cfg is the step's
// executor_config (cfg["agent"] names the agent) and executor its
// executor, one of AgentExecutors(). The step's model overrides the
// profile's, its thinking_level the profile's; session_key is accepted
// and has no effect (an agent step holds no conversation across runs).
// Models written without a provider go through the executor: a gateway
// step's base_url and api_key (else executors.openai), an anthropic
// step's (else providers.anthropic), bedrock's region from
// providers.bedrock. The result carries the profile, the servers its
// tools name and the policy rules that can apply to it; it is nil when
// any issue is an error.
//
// An agent that runs on a remote runtime (see Runtime: every openclaw
// step, and a gateway step naming an agent the project has no profile
// of when executors.gateway.url is set) resolves to its name, the step's
// thinking_level and the runtime's place (Resolved.Remote); its
// session_key must start with "agent:<agent>:".
func (p *Project) Resolve(executor string, cfg map[string]any) (*agent.Resolved, []Issue) {
	if r, issues, remote := p.resolveRemote(executor, cfg); remote {
		return r, issues
	}
	var issues []Issue
	fail := func(key, format string, args ...any) {
		issues = append(issues, Issue{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	warn := func(key, format string, args ...any) {
		issues = append(issues, Issue{Key: key, Msg: fmt.Sprintf(format, args...), Warning: true})
	}
	str := func(key string) (string, bool) {
		v, ok := cfg[key]
		if !ok || v == nil {
			return "", false
		}
		s, isStr := v.(string)
		if !isStr {
			fail(key, "want a string, got %s", settings.TypeName(v))
			return "", false
		}
		return s, true
	}
	name, _ := str("agent")
	if name == "" {
		if _, isStr := cfg["agent"].(string); isStr || cfg["agent"] == nil {
			fail("agent", "must name an agent")
		}
		return nil, issues
	}
	if !slices.Contains(AgentExecutors(), executor) {
		fail("agent", "executor %q cannot run an agent; use %s", executor, strings.Join(AgentExecutors(), ", "))
		return nil, issues
	}
	l, ok := p.Profiles[name]
	if !ok {
		names := p.AgentNames()
		if len(names) == 0 {
			fail("agent", "unknown agent %q: %s holds no agents (an agent is %s/<name>/agent.yaml with its soul.md)", name, p.Agents, p.Agents)
		} else {
			fail("agent", "unknown agent %q%s (agents in %s: %s)", name, agent.DidYouMean(name, names), p.Agents, strings.Join(names, ", "))
		}
		return nil, issues
	}
	if p.profileBroken(l) {
		fail("agent", "agent %q does not load: see the errors in %s", name, l.Path)
		return nil, issues
	}
	prof := *l.Profile
	r := &agent.Resolved{Profile: prof, ThinkingLevel: prof.ThinkingLevel}
	model := prof.Model
	if m, ok := str("model"); ok {
		if err := agent.CheckModel(m); err != nil {
			fail("model", "%v", err)
		} else {
			model = m
		}
	}
	if t, ok := str("thinking_level"); ok {
		if err := agent.CheckThinkingLevel(t); err != nil {
			fail("thinking_level", "%v", err)
		} else {
			r.ThinkingLevel = t
		}
	}
	str("session_key")

	transport, tissues := p.transport(executor, cfg)
	issues = append(issues, tissues...)
	open := false
	for i, m := range append([]string{model}, prof.ModelFallbacks...) {
		if m == "" {
			continue
		}
		e, err := p.Providers.Resolve(m, transport)
		if err != nil {
			if i == 0 && model != prof.Model {
				fail("model", "%v", err)
			} else {
				fail("agent", "agent %q: %v", name, err)
			}
			continue
		}
		if _, _, isOpen := agent.SplitModel(m); isOpen {
			open = true
		}
		if t := prof.Temperature; t != nil && *t > agent.TemperatureMax(e.API) {
			fail("agent", "agent %q: temperature %g is above %g, the most the %s API takes (model %q)", name, *t, agent.TemperatureMax(e.API), e.API, m)
		}
		r.Models = append(r.Models, e)
	}
	if !open {
		for _, k := range transportKeys[executor] {
			if _, set := cfg[k]; set {
				warn(k, "ignored: every model of agent %q names its provider, so the %s executor carries none of them", name, executor)
			}
		}
	}
	for k := range cfg {
		if !slices.Contains(agentKeys, k) && !slices.Contains(transportKeys[executor], k) {
			warn(k, "ignored on an agent step: agent %q's profile decides it", name)
		}
	}
	r.Servers = map[string]agent.Server{}
	var granted []string
	for _, g := range prof.Tools {
		if s, ok := p.Servers[g.Server]; ok {
			r.Servers[g.Server] = s
			granted = append(granted, g.Server)
		}
	}
	if len(r.Servers) == 0 {
		r.Servers = nil
	}
	r.Policy = p.policyFor(name, granted)
	for _, is := range issues {
		if !is.Warning {
			return nil, sortIssues(issues)
		}
	}
	return r, sortIssues(issues)
}

// profileBroken reports whether the profile's files have errors.
func (p *Project) profileBroken(l *agent.Loaded) bool {
	dir := filepath.Dir(l.Path)
	return slices.ContainsFunc(p.Diagnostics, func(d agent.Diagnostic) bool {
		return !d.Warning && (d.Pos.File == l.Path || d.Pos.File == l.SoulPath || d.Pos.File == dir)
	})
}

// transport is the endpoint of the models a profile writes without a
// provider, on executor.
func (p *Project) transport(executor string, cfg map[string]any) (agent.Endpoint, []Issue) {
	var issues []Issue
	get := func(key string) (string, bool) {
		v, ok := cfg[key]
		if !ok || v == nil {
			return "", false
		}
		s, isStr := v.(string)
		if !isStr {
			issues = append(issues, Issue{Key: key, Msg: "want a string, got " + settings.TypeName(v)})
			return "", false
		}
		if strings.Contains(s, "{{") || strings.Contains(s, "{%") {
			issues = append(issues, Issue{Key: key, Msg: "a template cannot place an agent's models: write it out (a ${NAME} reference is allowed)"})
			return "", false
		}
		return s, true
	}
	e := agent.Endpoint{Provider: executor, API: executor}
	switch executor {
	case agent.APIGateway:
		e.BaseURL, e.APIKey = p.Executors.OpenAI.BaseURL, p.Executors.OpenAI.APIKey
	case agent.APIAnthropic, agent.APIBedrock:
		prov := p.Providers[executor]
		e.BaseURL, e.APIKey, e.Region = prov.BaseURL, prov.APIKey, prov.Region
	}
	if executor == agent.APIBedrock {
		return e, issues
	}
	if u, ok := get("base_url"); ok {
		if !strings.Contains(u, "${") && !httpURL(u) {
			issues = append(issues, Issue{Key: "base_url", Msg: "want an absolute http or https URL"})
		} else {
			e.BaseURL = u
		}
	}
	if k, ok := get("api_key"); ok {
		e.APIKey = k
	}
	return e, issues
}

// policyFor is the policy with only the rules that can decide a call of
// agent name on one of servers, in their order: the others never match
// its calls, and need not travel in its steps.
func (p *Project) policyFor(name string, servers []string) agent.Policy {
	out := agent.Policy{Default: p.Policy.Default}
	if out.Default == "" {
		out.Default = agent.Allow
	}
	for _, r := range p.Policy.Rules {
		if r.Server != "" && !slices.Contains(servers, r.Server) {
			continue
		}
		if r.Agent != "" && !agent.MatchGlob(r.Agent, name) {
			continue
		}
		out.Rules = append(out.Rules, r)
	}
	return out
}

// StdioServers lists the servers of r that run as local processes,
// sorted: a step that needs one cannot run on AWS.
func StdioServers(r *agent.Resolved) []string {
	if r == nil {
		return nil
	}
	var out []string
	for n, s := range r.Servers {
		if s.IsStdio() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func httpURL(s string) bool {
	u, err := url.Parse(strings.TrimSpace(s))
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func sortIssues(is []Issue) []Issue {
	slices.SortStableFunc(is, func(a, b Issue) int {
		if a.Warning != b.Warning {
			if a.Warning {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Key, b.Key)
	})
	return is
}
