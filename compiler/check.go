package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/compiler/when"
	"github.com/stepline/stepline/internal/lazyregexp"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/template"
)

// MaxSyncTimeoutSeconds is the longest timeout_seconds a step that runs in
// one Lambda invocation may ask for: Lambda stops a function at 900 s. A
// sequential agent step may ask for more: its tool loop then spans
// several invocations (see lowerAgentTurns).
const MaxSyncTimeoutSeconds = 900

// builtinNames are the template names every step context defines
// (package pipeline's list); vars named like them would shadow them.
var builtinNames = pipeline.TemplateNames()

// contextRoots are the roots context_template.include may name.
var contextRoots = []string{"severity", "summary", "source", "pipeline", "received_at", "labels", "metadata", "fingerprint", "team"}

// checker holds what the semantic checks share while walking a pipeline.
type checker struct {
	f      *File
	p      *pipeline.Pipeline
	ds     Diagnostics
	liquid *template.Engine
	// seen maps every name a template can use for a step that ran before
	// the node being checked (its own name and its underscore alias) to the
	// step's real name.
	seen map[string]string
	// later maps the names of steps that come later to their real names,
	// so a reference to one says "runs later" instead of "unknown".
	later map[string]string
	// scope is the set of top-level names when: expressions may use.
	scope map[string]bool
	when  when.Scope // what each name of scope reads
	// execCheck checks an executor_config; nil: only the checks the
	// compiler knows itself.
	execCheck ExecutorCheck
	// proj is the pipeline's project; nil: none.
	proj *project.Project
	// info records what the checks parsed, for Lower (see checkInfo).
	info *checkInfo
	// openclawWarned: the pipeline's openclaw steps were warned that
	// executors.openclaw is not configured (once per pipeline).
	openclawWarned bool
}

// ExecutorCheck checks one executor_config, as package executor's
// CheckConfig does. An error with an IsWarning() bool method that returns
// true is reported as a warning. The compiler takes the check as a value
// so that it does not depend on the executors and their SDKs.
type ExecutorCheck func(executor string, cfg map[string]any) []error

// Check runs the semantic checks on a parsed file: names, references in
// templates and when:, executor requirements, cron, regexes, and the
// warnings for pipelines that work but probably not as meant.
func Check(f *File) Diagnostics { return CheckWith(f, nil) }

// CheckWith is Check with each executor_config also checked by
// checkExecutor.
func CheckWith(f *File, checkExecutor ExecutorCheck) Diagnostics {
	return checkIn(f, Env{CheckExecutor: checkExecutor})
}

// checkIn is Check in env: agent steps resolve their agents from
// env.Project, which Check leaves on the model (Step.Agent, Branch.Agent,
// FanOut.Agent) for Lower to inline.
func checkIn(f *File, env Env) Diagnostics {
	if f == nil || f.Pipeline == nil {
		return nil
	}
	c := &checker{f: f, p: f.Pipeline, liquid: template.New(template.Limits{}), seen: map[string]string{}, later: map[string]string{}, execCheck: env.CheckExecutor, proj: env.Project, info: newCheckInfo()}
	f.info = c.info
	c.buildScope()
	c.checkNames()
	for _, n := range c.p.Steps {
		for _, name := range nodeNames(n) {
			c.addName(c.later, name)
		}
	}
	for _, n := range c.p.Steps {
		for _, name := range nodeNames(n) {
			delete(c.later, name)
			delete(c.later, pipeline.TemplateName(name))
		}
		c.checkNode(n)
		c.info.noteTemplates(nodeTemplates(n)...)
		for _, name := range nodeNames(n) {
			c.addName(c.seen, name)
		}
	}
	c.checkPipeline()
	c.checkBodies()
	return c.ds
}

func (c *checker) addName(m map[string]string, name string) {
	m[name] = name
	m[pipeline.TemplateName(name)] = name
}

// nodeNames lists the names a node registers under steps.: the node and,
// for a parallel group, each branch.
func nodeNames(n pipeline.Node) []string {
	names := []string{n.NodeName()}
	if g, ok := n.(*pipeline.Parallel); ok {
		for _, b := range g.Branches {
			names = append(names, b.Name)
		}
	}
	return names
}

func (c *checker) buildScope() {
	c.scope = map[string]bool{"steps": true}
	c.when = whenScope(c.p)
	for name := range c.when {
		c.scope[name] = true
	}
}

func (c *checker) checkNames() {
	type def struct {
		name string
		pos  pipeline.Pos
	}
	var defs []def
	for _, n := range c.p.Steps {
		defs = append(defs, def{n.NodeName(), namePos(n)})
		if g, ok := n.(*pipeline.Parallel); ok {
			for _, b := range g.Branches {
				defs = append(defs, def{b.Name, fieldPos(b.Fields, "name", b.Pos)})
			}
		}
	}
	byAlias := map[string]def{}
	for _, d := range defs {
		if d.name == "" {
			continue
		}
		alias := pipeline.TemplateName(d.name)
		if prev, ok := byAlias[alias]; ok {
			if prev.name == d.name {
				c.ds.errorf(d.pos, "duplicate step name %q (first defined at %d:%d)", d.name, prev.pos.Line, prev.pos.Col)
			} else {
				c.ds.errorf(d.pos, "step name %q collides with %q (defined at %d:%d): both are steps.%s in templates", d.name, prev.name, prev.pos.Line, prev.pos.Col, alias)
			}
			continue
		}
		byAlias[alias] = d
	}
}

func namePos(n pipeline.Node) pipeline.Pos {
	switch n := n.(type) {
	case *pipeline.Step:
		return fieldPos(n.Fields, "name", n.Pos)
	case *pipeline.Parallel:
		return fieldPos(n.Fields, "name", n.Pos)
	case *pipeline.FanOut:
		return fieldPos(n.Fields, "name", n.Pos)
	}
	return n.Position()
}

func fieldPos(fs pipeline.Fields, key string, fallback pipeline.Pos) pipeline.Pos {
	if p, ok := fs[key]; ok {
		return p
	}
	return fallback
}

func (c *checker) checkNode(n pipeline.Node) {
	switch n := n.(type) {
	case *pipeline.Step:
		c.checkStep(n)
	case *pipeline.Parallel:
		where := fmt.Sprintf("parallel %q", n.Name)
		c.checkWhen(where, n.When, fieldPos(n.Fields, "when", n.Pos), n)
		c.checkGate(where, n.Gate, n.Fields, n.Pos)
		for _, b := range n.Branches {
			bw := fmt.Sprintf("branch %q of parallel %q", b.Name, n.Name)
			b.Agent = c.checkExecutor(bw, b.Executor, b.ExecutorConfig, b.Fields, b.Pos)
			c.checkTemplate(bw, "prompt_template", b.PromptTemplate, fieldPos(b.Fields, "prompt_template", b.Pos))
			c.checkConfigTemplates(bw, b.ExecutorConfig, fieldPos(b.Fields, "executor_config", b.Pos))
			c.checkTimeout(bw, b.Executor, b.TimeoutSeconds, b.Fields, b.Pos, runsAgent(b.Executor, b.ExecutorConfig))
			c.checkVerifier(bw, b.Executor, b.Verifier)
		}
		if n.Join != pipeline.JoinWeightedAverage {
			for _, b := range n.Branches {
				if b.Fields.Has("weight") {
					c.ds.warnf(b.Fields["weight"], "branch %q: weight has effect only with join: weighted_average (parallel %q joins with %s)", b.Name, n.Name, n.Join)
					break
				}
			}
		}
	case *pipeline.FanOut:
		where := fmt.Sprintf("fan_out %q", n.Name)
		c.checkWhen(where, n.When, fieldPos(n.Fields, "when", n.Pos), n)
		c.checkGate(where, n.Gate, n.Fields, n.Pos)
		c.checkOver(where, n)
		n.Agent = c.checkExecutor(where, n.Executor, n.ExecutorConfig, n.Fields, n.Pos)
		c.checkTemplate(where, "prompt_template", n.PromptTemplate, fieldPos(n.Fields, "prompt_template", n.Pos))
		c.checkConfigTemplates(where, n.ExecutorConfig, fieldPos(n.Fields, "executor_config", n.Pos))
		c.checkTimeout(where, n.Executor, n.TimeoutSeconds, n.Fields, n.Pos, runsAgent(n.Executor, n.ExecutorConfig))
		c.checkVerifier(where, n.Executor, n.Verifier)
		if slices.Contains(builtinNames, n.As) && n.As != pipeline.BindItem {
			c.ds.errorf(n.Fields["as"], "%s: as %q would hide the template name %q", where, n.As, n.As)
		}
	}
}

func (c *checker) checkStep(s *pipeline.Step) {
	where := fmt.Sprintf("step %q", s.Name)
	c.checkWhen(where, s.When, fieldPos(s.Fields, "when", s.Pos), s)
	c.checkGate(where, s.Gate, s.Fields, s.Pos)
	s.Agent = c.checkExecutor(where, s.Executor, s.ExecutorConfig, s.Fields, s.Pos)
	c.checkTemplate(where, "prompt_template", s.PromptTemplate, fieldPos(s.Fields, "prompt_template", s.Pos))
	c.checkConfigTemplates(where, s.ExecutorConfig, fieldPos(s.Fields, "executor_config", s.Pos))
	if runsAgent(s.Executor, s.ExecutorConfig) && (s.Agent == nil || s.Agent.Remote == nil) {
		c.checkAgentTimeout(where, s)
	} else if s.Agent != nil && s.Agent.Remote != nil && s.TimeoutSeconds > MaxSyncTimeoutSeconds {
		c.ds.errorf(fieldPos(s.Fields, "timeout_seconds", s.Pos), "%s: timeout_seconds %d is over %d: agent %q runs on a remote runtime, in one call from one Lambda invocation, which stops at %d s", where, s.TimeoutSeconds, MaxSyncTimeoutSeconds, s.Agent.Profile.Name, MaxSyncTimeoutSeconds)
	} else {
		c.checkTimeout(where, s.Executor, s.TimeoutSeconds, s.Fields, s.Pos, false)
	}
	c.checkVerifier(where, s.Executor, s.Verifier)
	c.checkTrust(where, s)
	c.checkCalibration(where, s)
	if w := s.OnFailure.Webhook; w != nil {
		c.checkTemplate(where, "on_failure.webhook.url", w.URL, fieldPos(w.Fields, "url", w.Pos))
		for _, v := range w.Headers {
			c.checkTemplate(where, "on_failure.webhook.headers", v, fieldPos(w.Fields, "headers", w.Pos))
		}
		c.checkValueTemplates(where, "on_failure.webhook.payload", w.Payload, fieldPos(w.Fields, "payload", w.Pos))
	}
	if r := s.Retry; r != nil {
		if s.Executor == pipeline.ExecHuman {
			c.ds.warnf(r.Pos, "%s: retry on a human step asks the approvers again after a timeout", where)
		}
		if r.Fields.Has("delay_seconds") && r.Attempts > 1 && (r.DelaySeconds < 1 || r.DelaySeconds != float64(int(r.DelaySeconds))) {
			c.ds.warnf(r.Fields["delay_seconds"], "%s: retry.delay_seconds %g becomes %d: Step Functions waits whole seconds, at least 1", where, r.DelaySeconds, retryInterval(r.DelaySeconds))
		}
		if r.Attempts == 1 {
			c.ds.warnf(r.Pos, "%s: retry with attempts: 1 never retries (attempts counts every try)", where)
		}
	}
	if lu := s.LoopUntil; lu != nil {
		if s.Executor == pipeline.ExecHuman {
			c.ds.errorf(lu.Pos, "%s: loop_until cannot repeat a human step", where)
		}
		if lu.Confidence < s.ConfidenceThreshold {
			c.ds.warnf(lu.Pos, "%s: loop_until.confidence %g is below confidence_threshold %g: a loop that stops there still fails the gate", where, lu.Confidence, s.ConfidenceThreshold)
		}
	}
	if s.OnFailure.Policy == pipeline.FailureContinue && s.Executor == pipeline.ExecHuman {
		c.ds.warnf(s.OnFailure.Pos, "%s: on_failure: continue on a human step lets the run go on when nobody answers", where)
	}
}

// retryInterval is the whole-second IntervalSeconds a delay becomes.
func retryInterval(delay float64) int {
	i := int(delay)
	if float64(i) < delay {
		i++
	}
	return max(i, 1)
}

func (c *checker) checkGate(where string, g pipeline.Gate, fs pipeline.Fields, pos pipeline.Pos) {
	if fs.Has("on_abort") && g.OnAbort != pipeline.DefaultOnAbort && len(c.p.Notifications) > 0 {
		if !slices.ContainsFunc(c.p.Notifications, func(a pipeline.Action) bool { return a.Name == g.OnAbort }) {
			c.ds.warnf(fs["on_abort"], "%s: on_abort %q names no notifications action%s", where, g.OnAbort, didYouMean(g.OnAbort, actionNames(c.p)))
		}
	}
	if g.OnLowConfidence == pipeline.LowProceed && fs.Has("confidence_threshold") {
		c.ds.warnf(fs["confidence_threshold"], "%s: confidence_threshold has no effect with on_low_confidence: proceed", where)
	}
}

func actionNames(p *pipeline.Pipeline) []string {
	var out []string
	for _, a := range p.Notifications {
		out = append(out, a.Name)
	}
	return out
}

// checkExecutor checks a node's executor and its configuration. For an
// agent step (executor_config.agent) it returns the agent resolved from
// the project, nil when that fails or the step runs none.
func (c *checker) checkExecutor(where, exec string, cfg map[string]any, fs pipeline.Fields, pos pipeline.Pos) *agent.Resolved {
	at := fieldPos(fs, "executor_config", fieldPos(fs, "executor", pos))
	if exec == pipeline.ExecOpenClaw {
		c.checkSecretRefs(where, cfg, at)
		return c.remoteSessionKey(c.openclawAgent(where, cfg, fs, pos), cfg)
	}
	if _, ok := cfg["agent"]; ok {
		c.checkSecretRefs(where, cfg, at)
		return c.remoteSessionKey(c.resolveAgent(where, exec, cfg, fs, pos), cfg)
	}
	str := func(key string) (string, bool) {
		v, ok := cfg[key]
		if !ok {
			return "", false
		}
		s, isStr := v.(string)
		if !isStr || s == "" {
			c.ds.errorf(at, "%s: executor_config.%s must be a non-empty string", where, key)
			return "", true
		}
		return s, true
	}
	switch exec {
	case pipeline.ExecPipeline:
		if child, ok := str("pipeline"); !ok {
			c.ds.errorf(at, "%s: executor pipeline needs executor_config.pipeline, the name of the pipeline to run", where)
		} else if child != "" && !pipelineNameRE.MatchString(child) {
			c.ds.errorf(at, "%s: executor_config.pipeline %q is not a pipeline name (letters, digits, _ and -, at most 80, starting with a letter or digit)", where, child)
		}
	case pipeline.ExecBedrock:
		if m, ok := cfg["model"].(string); ok && (strings.Contains(m, "{{") || strings.Contains(m, "{%")) {
			c.ds.errorf(at, "%s: executor_config.model %q is a template: on AWS the stack grants InvokeModel on the models the file names, so a bedrock model is written out", where, m)
		}
	case pipeline.ExecWebhook, pipeline.ExecNotify:
		if _, ok := str("url"); !ok {
			c.ds.errorf(at, "%s: executor %s needs executor_config.url", where, exec)
		}
	case pipeline.ExecScripted:
		if c.p.Stage == pipeline.StageProduction {
			c.ds.warnf(fieldPos(fs, "executor", pos), "%s: a scripted executor in a production pipeline answers from a responses file, not a model", where)
		}
	}
	c.checkSecretRefs(where, cfg, at)
	if c.execCheck == nil || exec == pipeline.ExecPipeline || !slices.Contains(pipeline.Executors(), exec) {
		return nil
	}
	for _, err := range c.execCheck(exec, cfg) {
		var key interface{ ConfigKey() string }
		if errors.As(err, &key) && key.ConfigKey() == "url" && (exec == pipeline.ExecWebhook || exec == pipeline.ExecNotify) && cfg["url"] == nil {
			continue // reported above with the executor's name
		}
		var w interface{ IsWarning() bool }
		if errors.As(err, &w) && w.IsWarning() {
			c.ds.warnf(at, "%s: %v", where, err)
		} else {
			c.ds.errorf(at, "%s: %v", where, err)
		}
	}
	return nil
}

// openclawAgent resolves an openclaw step's agent, which runs on the
// OpenClaw gateway of executors.openclaw. Without executors.openclaw.url
// the pipeline is warned once (its openclaw steps fail with a
// ConfigError naming the setting) and the step still compiles.
func (c *checker) openclawAgent(where string, cfg map[string]any, fs pipeline.Fields, pos pipeline.Pos) *agent.Resolved {
	p := c.proj
	if p == nil || p.Executors.OpenClaw.URL == "" {
		if !c.openclawWarned {
			c.openclawWarned = true
			c.ds.warnf(fieldPos(fs, "executor", pos), "%s: executor openclaw is not configured: set executors.openclaw.url in %s (the OpenClaw gateway); until then its steps fail with a ConfigError", where, project.FileName)
		}
		if p == nil {
			p = &project.Project{}
		}
	}
	at := fieldPos(fs, "executor_config", fieldPos(fs, "executor", pos))
	r, issues := p.Resolve(pipeline.ExecOpenClaw, cfg)
	for _, is := range issues {
		keyAt := fieldPos(c.f.keys[at], is.Key, at)
		if is.Warning {
			c.ds.warnf(keyAt, "%s: %s", where, is)
		} else {
			c.ds.errorf(keyAt, "%s: %s", where, is)
		}
	}
	return r
}

// remoteSessionKey writes the session key a remote agent step sends into
// its executor_config (its own, {{agent}} written out, or the default),
// for the step to render like any value of it. It returns r.
func (c *checker) remoteSessionKey(r *agent.Resolved, cfg map[string]any) *agent.Resolved {
	if r != nil && r.Remote != nil && cfg != nil {
		cfg["session_key"] = project.SessionKey(r.Profile.Name, cfg)
	}
	return r
}

// checkSecretRefs warns about malformed ${NAME} placeholders in the
// config's strings, nested ones (headers, a body's fields) included, in
// key order.
func (c *checker) checkSecretRefs(where string, cfg map[string]any, at pipeline.Pos) {
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case string:
			if m := badSecretRef(v); m != "" {
				c.ds.warnf(at, "%s: %s: %s", where, path, m)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(path+"."+k, v[k])
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("executor_config", cfg)
}

// pipelineNameRE is the schema's identifier: what a pipeline's name may be.
var pipelineNameRE = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$`)

// badSecretRef describes a malformed ${NAME} placeholder in s, or ""
// (secret.CheckRefs).
func badSecretRef(s string) string {
	if err := secret.CheckRefs(s); err != nil {
		return err.Error()
	}
	return ""
}

// checkTimeout checks the timeout_seconds of a node that runs in one
// Lambda invocation; agent tells a branch or fan-out that runs an agent.
func (c *checker) checkTimeout(where, exec string, secs int, fs pipeline.Fields, pos pipeline.Pos, agent bool) {
	if exec == pipeline.ExecHuman || exec == pipeline.ExecPipeline || secs <= MaxSyncTimeoutSeconds {
		return
	}
	at := fieldPos(fs, "timeout_seconds", pos)
	if agent {
		c.ds.errorf(at, "%s: timeout_seconds %d is over %d: the agent of a parallel branch or fan-out item runs in one Lambda invocation, which stops at %d s; only a sequential step's agent may run longer", where, secs, MaxSyncTimeoutSeconds, MaxSyncTimeoutSeconds)
		return
	}
	c.ds.errorf(at, "%s: timeout_seconds %d is over %d: a %s step runs in one Lambda invocation, which stops at %d s", where, secs, MaxSyncTimeoutSeconds, exec, MaxSyncTimeoutSeconds)
}

// runsAgent reports whether a node with this executor and configuration
// runs an agent in Stepline's own tool loop (executor_config.agent; an
// openclaw step's agent runs on its gateway, in one call).
func runsAgent(exec string, cfg map[string]any) bool {
	_, ok := cfg["agent"]
	return ok && exec != pipeline.ExecOpenClaw
}

// checkAgentTimeout checks a sequential agent step's timeout_seconds: any
// value in range, since a step past MaxSyncTimeoutSeconds runs its tool
// loop over several invocations, but such a step cannot have loop_until,
// which repeats the whole loop within one.
func (c *checker) checkAgentTimeout(where string, s *pipeline.Step) {
	if s.TimeoutSeconds > MaxSyncTimeoutSeconds && s.LoopUntil != nil {
		c.ds.errorf(s.LoopUntil.Pos, "%s: loop_until cannot repeat an agent step whose timeout_seconds %d is over %d: its tool loop spans several Lambda invocations; loop in the agent's own instructions instead, or keep timeout_seconds within %d", where, s.TimeoutSeconds, MaxSyncTimeoutSeconds, MaxSyncTimeoutSeconds)
	}
}

func (c *checker) checkVerifier(where, exec string, v *pipeline.Verifier) {
	if v == nil {
		return
	}
	c.checkValueTemplates(where, "verifier.executor_config", v.ExecutorConfig, fieldPos(v.Fields, "executor_config", v.Pos))
	if exec == pipeline.ExecHuman {
		c.ds.errorf(v.Pos, "%s: a human step cannot have a verifier: the approver's decision is final", where)
	}
	if v.Executor == pipeline.ExecHuman || v.Executor == pipeline.ExecPipeline || v.Executor == pipeline.ExecNotify {
		c.ds.errorf(fieldPos(v.Fields, "executor", v.Pos), "%s: verifier executor %q cannot judge an answer; use a model executor", where, v.Executor)
	}
	if _, ok := v.ExecutorConfig["agent"]; ok {
		c.ds.errorf(fieldPos(v.Fields, "executor_config", v.Pos), "%s verifier: executor_config.agent: a verifier is one model call and cannot run an agent; give the agent's judgement its own step", where)
	} else if v.Executor == pipeline.ExecOpenClaw {
		c.ds.errorf(fieldPos(v.Fields, "executor", v.Pos), "%s verifier: executor \"openclaw\" runs an agent, and a verifier is one model call; give the agent's judgement its own step", where)
	} else {
		c.checkExecutor(where+" verifier", v.Executor, v.ExecutorConfig, v.Fields, v.Pos)
	}
	switch v.Mode {
	case "reviewer", "challenger":
		alias := map[string]string{"reviewer": pipeline.ModeCritic, "challenger": pipeline.ModeIndependent}[v.Mode]
		c.ds.warnf(v.Fields["mode"], "%s: verifier mode %q is an old name for %q", where, v.Mode, alias)
	}
	if v.Fields.Has("veto_floor") && v.CombinationStrategy != pipeline.CombineVeto {
		c.ds.warnf(v.Fields["veto_floor"], "%s: veto_floor has effect only with combination_strategy: veto", where)
	}
	if !v.Trigger.Always && v.Trigger.ConfidenceAbove >= v.Trigger.ConfidenceBelow {
		c.ds.warnf(fieldPos(v.Fields, "trigger", v.Pos), "%s: the verifier never runs: confidence_above %g is not below confidence_below %g", where, v.Trigger.ConfidenceAbove, v.Trigger.ConfidenceBelow)
	}
}

// checkWhen parses node n's when: expression, checks what it refers to
// and records the expression for Lower.
func (c *checker) checkWhen(where, src string, at pipeline.Pos, n pipeline.Node) {
	if src == "" {
		return
	}
	expr, err := when.Parse(src)
	if err != nil {
		var we *when.Error
		if errors.As(err, &we) {
			c.ds.errorf(c.f.TextPos(at, src, we.Offset), "%s: when: %s", where, we.Msg)
		} else {
			c.ds.errorf(at, "%s: when: %v", where, err)
		}
		return
	}
	c.info.when[n] = expr
	for _, p := range when.Paths(expr) {
		pos := c.f.TextPos(at, src, p.Offset)
		if !c.scope[p.Root] {
			c.ds.errorf(pos, "%s: when: unknown name %q: use steps.<name>, vars.<name>, labels.<name> or a context_template.include name%s", where, p.Root, didYouMean(p.Root, scopeNames(c.scope)))
			continue
		}
		switch p.Root {
		case "steps":
			if len(p.Segments) > 0 {
				c.checkStepRef(where, "when", p.Segments[0], pos)
			}
		case "vars":
			if len(p.Segments) > 0 && !slices.ContainsFunc(c.p.Vars, func(v pipeline.Var) bool { return v.Name == p.Segments[0] }) {
				c.ds.errorf(pos, "%s: when: vars.%s is not defined in vars", where, p.Segments[0])
			}
		}
	}
}

func scopeNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkStepRef checks that a template or when: reference names a step that
// runs before the current one.
func (c *checker) checkStepRef(where, field, ref string, pos pipeline.Pos) {
	name := ref
	if i := strings.IndexByte(ref, '/'); i >= 0 {
		name = ref[:i] // fan-out items: steps['group/3']
	}
	if _, ok := c.seen[name]; ok {
		return
	}
	if real, ok := c.later[name]; ok {
		c.ds.errorf(pos, "%s: %s refers to step %q, which runs later", where, field, real)
		return
	}
	if strings.Contains(where, fmt.Sprintf("%q", name)) {
		c.ds.errorf(pos, "%s: %s refers to the step itself; a step sees only earlier steps (loop_until steps see loop.prior_output)", where, field)
		return
	}
	c.ds.errorf(pos, "%s: %s refers to unknown step %q%s", where, field, ref, didYouMean(name, mapKeys(c.seen)))
}

func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (c *checker) checkOver(where string, g *pipeline.FanOut) {
	at := fieldPos(g.Fields, "over", g.Pos)
	src, off := OverExpr(g.Over)
	if src == "" {
		return
	}
	expr, err := when.Parse(src)
	if err != nil {
		var we *when.Error
		if errors.As(err, &we) {
			c.ds.errorf(c.f.TextPos(at, g.Over, off+we.Offset), "%s: over: %s", where, we.Msg)
		} else {
			c.ds.errorf(at, "%s: over: %v", where, err)
		}
		return
	}
	c.info.over[g] = expr
	paths := when.Paths(expr)
	if !isPathOrList(expr) {
		c.ds.errorf(at, "%s: over must name a list, such as steps.discover.services, not %q", where, src)
		return
	}
	for _, p := range paths {
		pos := c.f.TextPos(at, g.Over, off+p.Offset)
		if !c.scope[p.Root] {
			c.ds.errorf(pos, "%s: over: unknown name %q%s", where, p.Root, didYouMean(p.Root, scopeNames(c.scope)))
			continue
		}
		if p.Root == "steps" && len(p.Segments) > 0 {
			c.checkStepRef(where, "over", p.Segments[0], pos)
		}
		if what := textRoot(c.when, p.Root); what != "" {
			c.ds.errorf(pos, "%s: over: %s %s, never a list: run the fan_out over a list a step answered (steps.<step>.<field>) or one in the trigger's metadata", where, p.Root, what)
		}
	}
}

// OverExpr returns the expression of a fan_out over: value, without the
// {{ }} the format allows around it, and the offset of the expression in
// the value.
func OverExpr(over string) (string, int) {
	s := strings.TrimSpace(over)
	off := strings.Index(over, s)
	if strings.HasPrefix(s, "{{") && strings.HasSuffix(s, "}}") {
		inner := s[2 : len(s)-2]
		t := strings.TrimSpace(inner)
		return t, off + 2 + strings.Index(inner, t)
	}
	return s, off
}

// checkTemplate parses a Liquid template and checks its step references.
func (c *checker) checkTemplate(where, field, tpl string, at pipeline.Pos) {
	if !strings.Contains(tpl, "{{") && !strings.Contains(tpl, "{%") {
		return
	}
	if _, err := c.liquid.Parse(tpl); err != nil {
		c.ds.errorf(templateErrorPos(c.f, at, tpl, err), "%s: %s: %s", where, field, templateMessage(err))
		return
	}
	for _, r := range c.info.scanTemplate(tpl).refs {
		c.checkStepRef(where, field, r.name, c.f.TextPos(at, tpl, r.offset))
	}
}

// templateErrorPos places a template error: at the construct at fault
// when the engine located it, else at the line it names, else at the
// field.
func templateErrorPos(f *File, at pipeline.Pos, tpl string, err error) pipeline.Pos {
	var te *template.Error
	if !errors.As(err, &te) {
		return at
	}
	switch {
	case te.Offset >= 0:
		return f.TextPos(at, tpl, te.Offset)
	case te.Line > 0:
		off := 0
		for i := 1; i < te.Line; i++ {
			j := strings.IndexByte(tpl[off:], '\n')
			if j < 0 {
				break
			}
			off += j + 1
		}
		return f.TextPos(at, tpl, off)
	}
	return at
}

// templateMessage is a template error's message without its position.
func templateMessage(err error) string {
	var te *template.Error
	if errors.As(err, &te) {
		return te.Msg
	}
	return err.Error()
}

func (c *checker) checkConfigTemplates(where string, cfg map[string]any, at pipeline.Pos) {
	c.checkValueTemplates(where, "executor_config", cfg, at)
}

// checkValueTemplates checks the templates held in the strings of a
// free-form value written at at, each placed in its own string.
func (c *checker) checkValueTemplates(where, field string, v any, at pipeline.Pos) {
	c.valueTemplates(where, field, "", v, at)
}

func (c *checker) valueTemplates(where, field, path string, v any, at pipeline.Pos) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			c.valueTemplates(where, field+"."+k, p, v[k], at)
		}
	case []any:
		for i, e := range v {
			c.valueTemplates(where, fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("%s[%d]", path, i), e, at)
		}
	case string:
		pos := at
		if p, ok := c.f.values[at][path]; ok {
			pos = p
		} else if !pos.IsValid() {
			pos = c.p.Pos
		}
		c.checkTemplate(where, field, v, pos)
	}
}

func (c *checker) checkPipeline() {
	p := c.p
	c.checkWorkflow()
	for _, v := range p.Vars {
		if slices.Contains(builtinNames, v.Name) {
			c.ds.warnf(v.Pos, "vars: %q hides the template name %q", v.Name, v.Name)
		}
	}
	for _, inc := range p.ContextInclude {
		root := strings.SplitN(inc.Path, ".", 2)[0]
		if !slices.Contains(contextRoots, root) {
			c.ds.errorf(inc.Pos, "context_template.include: unknown path %q: it starts with one of %s%s", inc.Path, strings.Join(contextRoots, ", "), didYouMean(root, contextRoots))
		}
	}
	if t := p.Trigger; t != nil {
		for _, m := range t.Match {
			if m.Op != "regex" {
				continue
			}
			s, _ := m.Value.(string)
			if _, err := regexp.Compile(s); err != nil {
				c.ds.errorf(m.Pos, "trigger.match.%s: invalid regex %q: %s", m.Field, s, regexMessage(err))
			}
		}
	}
	if s := p.Schedule; s != nil && s.Cron != "" {
		if err := CheckCron(s.Cron); err != nil {
			c.ds.errorf(fieldPos(s.Fields, "cron", s.Pos), "schedule.cron %q: %v", s.Cron, err)
		}
	}
	if s := p.Schedule; s != nil && s.Fields.Has("timezone") {
		if err := CheckTimeZone(s.TimeZone); err != nil {
			c.ds.errorf(fieldPos(s.Fields, "timezone", s.Pos), "schedule.timezone %q: %v", s.TimeZone, err)
		}
	}
	for _, a := range p.Notifications {
		for _, n := range a.Notices {
			c.checkNotification(a.Name, n)
		}
	}
	c.checkReadiness()
}

func (c *checker) checkNotification(action string, n pipeline.Notification) {
	where := fmt.Sprintf("notifications.%s", action)
	if n.Template != "" {
		if _, err := c.liquid.Parse(n.Template); err != nil {
			c.ds.errorf(n.Pos, "%s: template: %s", where, templateMessage(err))
		}
	}
	str := func(k string) string { s, _ := n.Config[k].(string); return s }
	switch n.Channel {
	case pipeline.ChannelWebhook, pipeline.ChannelSlack:
		if str("url") == "" {
			c.ds.errorf(n.Pos, "%s: channel %s needs config.url", where, n.Channel)
		}
	case pipeline.ChannelSNS:
		if str("topic_arn") == "" {
			c.ds.errorf(n.Pos, "%s: channel sns needs config.topic_arn", where)
		}
	case pipeline.ChannelTelegram:
		switch tok, set := n.Config["bot_token"]; {
		case !set:
			c.ds.errorf(n.Pos, "%s: channel telegram needs config.bot_token (a ${NAME} secret), or notifications.telegram.bot_token in %s", where, project.FileName)
		case !secret.IsRef(fmt.Sprint(tok)):
			c.ds.errorf(n.Pos, "%s: config.bot_token: write it as one ${NAME} secret reference: a token written out would be compiled into the state machine", where)
		}
		switch id, set := n.Config["chat_id"]; {
		case !set:
			c.ds.errorf(n.Pos, "%s: channel telegram needs config.chat_id, or notifications.telegram.chat_id in %s", where, project.FileName)
		case !project.ChatID(chatIDText(id)):
			c.ds.errorf(n.Pos, "%s: config.chat_id: %v is not a chat ID (a number such as -1001234567890, or @channelname)", where, id)
		}
		if teams, set := n.Config["teams"]; set {
			tm, ok := teams.(map[string]any)
			if !ok {
				c.ds.errorf(n.Pos, "%s: config.teams: want a mapping of team to {chat_id, bot_token}", where)
			}
			for _, name := range slices.Sorted(maps.Keys(tm)) {
				t, _ := tm[name].(map[string]any)
				switch tok, set := t["bot_token"]; {
				case t == nil || !project.ChatID(chatIDText(t["chat_id"])):
					c.ds.errorf(n.Pos, "%s: config.teams.%s: want {chat_id: a chat ID, bot_token: an optional ${NAME}}", where, name)
				case set && !secret.IsRef(fmt.Sprint(tok)):
					c.ds.errorf(n.Pos, "%s: config.teams.%s.bot_token: write it as one ${NAME} secret reference: a token written out would be compiled into the state machine", where, name)
				}
			}
		}
	case pipeline.ChannelMSTeams:
		switch u := str("url"); {
		case u == "":
			c.ds.errorf(n.Pos, "%s: channel msteams needs config.url (the incoming webhook's URL, as a ${NAME} secret)", where)
		case !strings.Contains(u, "${"):
			c.ds.warnf(n.Pos, "%s: config.url: the webhook URL is its credential: write it as a ${NAME} secret reference, or it is compiled into the state machine", where)
		}
	}
}

// chatIDText is a chat_id as YAML gave it, as text.
func chatIDText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int, int64:
		return fmt.Sprint(v)
	case float64:
		if v == float64(int64(v)) {
			return fmt.Sprint(int64(v))
		}
	}
	return ""
}

func regexMessage(err error) string {
	msg := err.Error()
	var se *syntax.Error
	if errors.As(err, &se) {
		msg = se.Code.String() + ": `" + se.Expr + "`"
		if se.Code == syntax.ErrInvalidPerlOp {
			msg += " (regexes use RE2 syntax: no lookaround or backreferences)"
		}
	}
	return msg
}

// isPathOrList reports whether a fan_out over: expression can name a list:
// a path or a list literal.
func isPathOrList(e when.Expr) bool {
	switch e := e.(type) {
	case *when.Path:
		return true
	case *when.Literal:
		_, ok := e.Value.([]any)
		return ok
	}
	return false
}

// checkBodies checks request bodies written as text, where values are
// pasted into what the author wrote: a webhook step's prompt_template, a
// notify step's string payload and a webhook notification's template. A
// webhook step that also has executor_config.payload is an error (which
// of the two is the body would be ambiguous); text that is JSON with a
// value pasted in unencoded gets a warning at the {{ that does it.
func (c *checker) checkBodies() {
	b := &bodyCheck{c: c}
	for _, n := range c.p.Steps {
		switch n := n.(type) {
		case *pipeline.Step:
			b.step(fmt.Sprintf("step %q", n.Name), n.Executor, n.ExecutorConfig, n.PromptTemplate, n.Fields, n.Pos)
		case *pipeline.Parallel:
			for _, br := range n.Branches {
				b.step(fmt.Sprintf("branch %q of parallel %q", br.Name, n.Name), br.Executor, br.ExecutorConfig, br.PromptTemplate, br.Fields, br.Pos)
			}
		case *pipeline.FanOut:
			b.step(fmt.Sprintf("fan_out %q", n.Name), n.Executor, n.ExecutorConfig, n.PromptTemplate, n.Fields, n.Pos)
		}
	}
	for _, a := range c.p.Notifications {
		for _, n := range a.Notices {
			if n.Channel == pipeline.ChannelWebhook {
				pos := n.Pos
				b.warnPastes(fmt.Sprintf("notifications.%s", a.Name), "template", n.Template, func() pipeline.Pos { return b.valuePos(pos, "template") }, fixJSONFilter)
			}
		}
	}
}

// bodyCheck checks the request bodies of one file.
type bodyCheck struct {
	c *checker
	// mappings indexes the file's YAML mappings by position, built when
	// a warning needs the position of a value the model does not keep
	// (inside executor_config, or a notification's template).
	mappings map[pipeline.Pos]*yaml.Node
}

// bodyFix says how to write a body so that values stay values.
type bodyFix int

const (
	fixPayload        bodyFix = iota // a webhook step: executor_config.payload
	fixPayloadMapping                // a notify step's string payload
	fixJSONFilter                    // a notification template: the json filter
)

func (b *bodyCheck) step(where, exec string, cfg map[string]any, prompt string, fs pipeline.Fields, pos pipeline.Pos) {
	switch exec {
	case pipeline.ExecWebhook:
		at := fieldPos(fs, "prompt_template", pos)
		if cfg["payload"] != nil {
			if strings.TrimSpace(prompt) != "" {
				b.c.ds.errorf(at, "%s: prompt_template and executor_config.payload are both the webhook's request body; keep one (payload keeps values out of the body's structure)", where)
			}
			return
		}
		b.warnPastes(where, "prompt_template", prompt, func() pipeline.Pos { return at }, fixPayload)
	case pipeline.ExecNotify:
		if s, ok := cfg["payload"].(string); ok {
			b.warnPastes(where, "executor_config.payload", s, func() pipeline.Pos { return b.valuePos(fieldPos(fs, "executor_config", pos), "payload") }, fixPayloadMapping)
		}
	}
}

// warnPastes warns at every {{ }} output that text, when it is JSON,
// pastes into it unencoded: inside a string literal (whatever its
// filters), or outside one without the json filter last. at is where text
// is written.
func (b *bodyCheck) warnPastes(where, field, text string, at func() pipeline.Pos, fix bodyFix) {
	var start pipeline.Pos
	located := false
	for _, p := range jsonPastes(text) {
		if !p.inString && p.encoded {
			continue
		}
		if !located {
			start, located = at(), true
		}
		pos := b.c.f.TextPos(start, text, p.offset)
		encoded := "{{ " + p.expr + " | json }}"
		if p.encoded {
			encoded = "{{ " + p.expr + " }}"
		}
		if p.inString {
			how := map[bodyFix]string{
				fixPayload:        "write the body as executor_config.payload (a mapping) instead",
				fixPayloadMapping: "write executor_config.payload as a mapping instead",
				fixJSONFilter:     "write the value outside quotes with the json filter, as " + encoded,
			}[fix]
			b.c.ds.warnf(pos, "%s: %s: %q is pasted into a JSON string in the request body, so a value containing a quote can change the body's structure; %s", where, field, p.tag, how)
			continue
		}
		how := map[bodyFix]string{
			fixPayload:        "write " + encoded + ", or the body as executor_config.payload (a mapping)",
			fixPayloadMapping: "write " + encoded + ", or executor_config.payload as a mapping",
			fixJSONFilter:     "write " + encoded + " instead",
		}[fix]
		b.c.ds.warnf(pos, "%s: %s: %q is pasted into JSON text unencoded, so a value can change the body's structure; %s", where, field, p.tag, how)
	}
}

// valuePos returns where the value of key is written in the mapping that
// starts at container, or container when that cannot be found.
func (b *bodyCheck) valuePos(container pipeline.Pos, key string) pipeline.Pos {
	if b.mappings == nil {
		b.mappings = map[pipeline.Pos]*yaml.Node{}
		var doc yaml.Node
		if yaml.Unmarshal(bytes.Join(b.c.f.lines, []byte("\n")), &doc) == nil {
			b.index(&doc, 0)
		}
	}
	if v := lookupKey(pairs(b.mappings[container]), key); v != nil {
		return b.c.f.pos(resolve(v))
	}
	return container
}

func (b *bodyCheck) index(n *yaml.Node, depth int) {
	if n == nil || depth > 200 {
		return
	}
	if n.Kind == yaml.MappingNode {
		b.mappings[b.c.f.pos(n)] = n
	}
	for _, ch := range n.Content {
		b.index(ch, depth+1)
	}
}

// paste is a Liquid output in JSON text.
type paste struct {
	offset   int    // of its {{ in the text
	tag      string // the output as written, {{ … }}
	expr     string // what it outputs: the tag without braces and trim marks
	inString bool   // it is inside a JSON string literal
	encoded  bool   // its last filter is json
}

// jsonPastes returns the Liquid outputs in text when text is JSON: after
// blanks and Liquid tags it starts with { or [. A JSON string runs from
// a quote to the next quote not escaped with a backslash; the text of
// Liquid tags ({% … %}) does not count, nor does what {% comment %} holds,
// while what {% raw %} holds is JSON text with no outputs.
func jsonPastes(text string) []paste {
	if !looksLikeJSON(text) {
		return nil
	}
	var out []paste
	inString, raw := false, false
	for i := 0; i < len(text); {
		rest := text[i:]
		switch {
		case raw:
			if strings.HasPrefix(rest, "{%") && tagName(rest) == "endraw" {
				raw = false
				i += tagEnd(rest)
				continue
			}
		case strings.HasPrefix(rest, "{{"):
			n := strings.Index(rest[2:], "}}")
			if n < 0 {
				return out // unterminated: the template check reports it
			}
			tag := rest[:n+4]
			out = append(out, paste{offset: i, tag: tag, expr: outputExpr(tag), inString: inString, encoded: lastFilter(outputExpr(tag)) == "json"})
			i += len(tag)
			continue
		case strings.HasPrefix(rest, "{%"):
			name := tagName(rest)
			i += tagEnd(rest)
			switch name {
			case "raw":
				raw = true
			case "comment":
				if j := liquidTagAt(text[i:], "endcomment"); j >= 0 {
					i += j + tagEnd(text[i+j:])
				} else {
					i = len(text)
				}
			}
			continue
		}
		switch c := text[i]; {
		case inString && c == '\\' && i+1 < len(text) && !strings.HasPrefix(text[i+1:], "{{") && !strings.HasPrefix(text[i+1:], "{%"):
			i += 2
			continue
		case c == '"':
			inString = !inString
		}
		i++
	}
	return out
}

// looksLikeJSON reports whether text, after blanks and Liquid tags, starts
// with { (not an output's {{) or [.
func looksLikeJSON(text string) bool {
	s := strings.TrimSpace(text)
	for strings.HasPrefix(s, "{%") {
		s = strings.TrimSpace(s[tagEnd(s):])
	}
	return strings.HasPrefix(s, "[") || (strings.HasPrefix(s, "{") && !strings.HasPrefix(s, "{{"))
}

// tagEnd is the length of the Liquid tag s starts with, up to and
// including its %}; all of s when it is not closed.
func tagEnd(s string) int {
	if j := strings.Index(s, "%}"); j >= 0 {
		return j + 2
	}
	return len(s)
}

// tagName is the name of the Liquid tag s starts with.
func tagName(s string) string {
	inner := s[2:]
	if j := strings.Index(inner, "%}"); j >= 0 {
		inner = inner[:j]
	}
	inner = strings.TrimLeft(inner, "- \t\r\n")
	if i := strings.IndexAny(inner, " \t\r\n-"); i >= 0 {
		inner = inner[:i]
	}
	return inner
}

// liquidTagAt returns the offset in s of the first Liquid tag named name,
// or -1.
func liquidTagAt(s, name string) int {
	for off := 0; ; {
		j := strings.Index(s[off:], "{%")
		if j < 0 {
			return -1
		}
		if tagName(s[off+j:]) == name {
			return off + j
		}
		off += j + 2
	}
}

// outputExpr is what an output tag outputs: {{- x | f -}} gives "x | f".
func outputExpr(tag string) string {
	s := strings.TrimSuffix(strings.TrimPrefix(tag, "{{"), "}}")
	s = strings.TrimSuffix(strings.TrimPrefix(s, "-"), "-")
	return strings.TrimSpace(s)
}

// lastFilter is the name of the last filter of a Liquid output
// expression, or "" when it has none. Pipes inside quoted strings do not
// count.
func lastFilter(expr string) string {
	last := -1
	var quote byte
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '|':
			last = i
		}
	}
	if last < 0 {
		return ""
	}
	f := strings.TrimSpace(expr[last+1:])
	if i := strings.IndexAny(f, ": \t\r\n"); i >= 0 {
		f = f[:i]
	}
	return f
}

// checkWorkflow refuses workflow: express on a pipeline that cannot run as
// an Express workflow (WorkflowOf), at each thing that keeps it from one
// (the run's bound at the workflow: key).
func (c *checker) checkWorkflow() {
	if c.p.Workflow != pipeline.WorkflowExpress {
		return
	}
	at := fieldPos(c.p.Fields, "workflow", c.p.Pos)
	for _, r := range WorkflowOf(c.p).Reasons {
		if r.Pos == c.p.Pos {
			c.ds.errorf(at, "workflow: express: %s", r.Msg)
			continue
		}
		c.ds.errorf(r.Pos, "workflow: express (line %d): %s", at.Line, r.Msg)
	}
}
