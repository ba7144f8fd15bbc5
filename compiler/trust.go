package compiler

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/stepline/stepline/compiler/when"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

// maxSettleSeconds bounds what a step's grounding judge and webhook and
// shell checks may take together: they run in the step's own Task after
// its answer, within one Lambda invocation (900 s), with room to record.
const maxSettleSeconds = 800

// expectScopes are the names a deterministic check's expect: may use, by
// check type.
var expectScopes = map[string][]string{
	pipeline.CheckWebhook: {"response"},
	pipeline.CheckShell:   {"result", "exit_code"},
}

// checkFields are the fields of a deterministic check that belong to one
// type only.
var checkFields = map[string]string{
	"url": pipeline.CheckWebhook, "method": pipeline.CheckWebhook, "headers": pipeline.CheckWebhook, "payload": pipeline.CheckWebhook,
	"run":     pipeline.CheckShell,
	"message": pipeline.CheckHuman,
}

// checkTrust checks a step's grounding judge and deterministic checks,
// and resolves the judge's agent from the project (Grounding.Judge).
func (c *checker) checkTrust(where string, s *pipeline.Step) {
	if s.Grounding == nil && len(s.Checks) == 0 {
		return
	}
	if s.Executor == pipeline.ExecHuman || s.Executor == pipeline.ExecPipeline {
		field := "grounding"
		if s.Grounding == nil {
			field = "deterministic_checks"
		}
		c.ds.errorf(fieldPos(s.Fields, field, s.Pos), "%s: %s judges an answer a model or a webhook gave; a %s step's outcome is decided by its %s", where, field, s.Executor,
			map[string]string{pipeline.ExecHuman: "approver", pipeline.ExecPipeline: "sub-pipeline"}[s.Executor])
		return
	}
	settle := 0
	if g := s.Grounding; g != nil {
		c.checkGrounding(where, s, g)
		settle += g.TimeoutSeconds
	}
	seen := map[string]pipeline.Pos{}
	for i, ch := range s.Checks {
		cw := fmt.Sprintf("%s check %q", where, ch.Name)
		if ch.Name == "" {
			cw = fmt.Sprintf("%s deterministic_checks[%d]", where, i)
		}
		if prev, dup := seen[ch.Name]; dup && ch.Name != "" {
			c.ds.errorf(fieldPos(ch.Fields, "name", ch.Pos), "%s: duplicate check name (first at %d:%d): a check's name is its record and its approval's name", cw, prev.Line, prev.Col)
		}
		seen[ch.Name] = fieldPos(ch.Fields, "name", ch.Pos)
		c.checkCheck(cw, ch)
		if ch.Type == pipeline.CheckWebhook || ch.Type == pipeline.CheckShell {
			settle += ch.TimeoutSeconds
		}
	}
	if settle > maxSettleSeconds {
		at := fieldPos(s.Fields, "deterministic_checks", fieldPos(s.Fields, "grounding", s.Pos))
		c.ds.errorf(at, "%s: the grounding judge and the webhook and shell checks may take %d s together, over %d: they run one after the other in the step's Task after its answer, within one Lambda invocation; lower their timeout_seconds", where, settle, maxSettleSeconds)
	}
	enforced := len(s.Checks) > 0 || (s.Grounding != nil && s.Grounding.Enforce)
	if v := s.Verifier; v != nil && enforced && (v.Mode == pipeline.ModeCritic || v.Mode == "reviewer") {
		c.ds.warnf(fieldPos(v.Fields, "mode", v.Pos), "%s: a critic verifier on a gate that enforces grounding or deterministic checks: a critic grades the answer it is shown and tends to agree with it, so its score adds little to the enforced signals; use mode: independent for a second opinion of its own", where)
	}
}

// checkCalibration checks a step's calibration block: a step whose
// answer a model or a webhook gives, bins that tile 0..1, and a warning
// for the fresh-install behaviour of enforce with on_uncalibrated:
// escalate.
func (c *checker) checkCalibration(where string, s *pipeline.Step) {
	cal := s.Calibration
	if cal == nil {
		return
	}
	if s.Executor == pipeline.ExecHuman || s.Executor == pipeline.ExecPipeline {
		c.ds.errorf(fieldPos(s.Fields, "calibration", s.Pos), "%s: calibration weighs an answer a model or a webhook gave; a %s step's outcome is decided by its %s", where, s.Executor,
			map[string]string{pipeline.ExecHuman: "approver", pipeline.ExecPipeline: "sub-pipeline"}[s.Executor])
		return
	}
	if w := cal.BinWidth; w > 0 && w <= 1 {
		n := 1 / w
		if math.Abs(n-math.Round(n)) > 1e-9*n {
			c.ds.errorf(fieldPos(cal.Fields, "bin_width", cal.Pos), "%s: calibration.bin_width: %s does not divide 1: the bins must tile 0..1 (0.05, 0.1, 0.2, 0.25, 0.5 and 1 do)", where, strconv.FormatFloat(w, 'f', -1, 64))
		}
	}
	if cal.Enforce && cal.OnUncalibrated == pipeline.UncalibratedEscalate {
		c.ds.warnf(fieldPos(cal.Fields, "on_uncalibrated", cal.Pos), "%s: calibration enforces with on_uncalibrated: escalate, so every run escalates at this step until its bin holds %d labelled executions of the current configuration (a fresh install, or a changed model, prompt or agent, has none): give feedback on escalated runs (stepline feedback) to build the history, or use on_uncalibrated: proceed until it exists", where, cal.NMin)
	}
}

// checkGrounding checks a grounding block and resolves its judge.
func (c *checker) checkGrounding(where string, s *pipeline.Step, g *pipeline.Grounding) {
	gw := where + " grounding"
	c.checkValueTemplates(gw, "grounding.executor_config", g.ExecutorConfig, fieldPos(g.Fields, "executor_config", g.Pos))
	if _, ok := g.ExecutorConfig["agent"]; ok {
		c.ds.errorf(fieldPos(g.Fields, "executor_config", g.Pos), "%s: executor_config.agent: the judge is grounding.agent", gw)
	}
	cfg := maps.Clone(g.ExecutorConfig)
	if cfg == nil {
		cfg = map[string]any{}
	}
	cfg["agent"] = g.Agent
	at := fieldPos(g.Fields, "agent", g.Pos)
	if c.proj == nil {
		c.ds.errorf(at, "%s: unknown agent %q: no stepline.yaml above %s, so the pipeline has no agents (the judge is an agent profile, agents/<name>/, such as agents/grounding-judge)", gw, g.Agent, c.f.name)
		return
	}
	if !slices.Contains(project.AgentExecutors(), g.Executor) {
		return // the schema reports the executor
	}
	r, issues := c.proj.Resolve(g.Executor, cfg)
	for _, is := range issues {
		pos, field := at, "grounding.agent"
		if is.Key != "agent" {
			cfgAt := fieldPos(g.Fields, "executor_config", g.Pos)
			pos, field = fieldPos(c.f.keys[cfgAt], is.Key, cfgAt), "grounding.executor_config."+is.Key
		}
		if is.Warning {
			c.ds.warnf(pos, "%s: %s: %s", gw, field, is.Msg)
		} else {
			c.ds.errorf(pos, "%s: %s: %s", gw, field, is.Msg)
		}
	}
	g.Judge = r
	switch {
	case s.Agent == nil:
		c.ds.warnf(g.Pos, "%s: the step runs no agent, so it leaves no tool trace to check its answer against: G is always null (nothing to check)", gw)
	case s.Agent.Remote != nil && s.Executor == pipeline.ExecOpenClaw:
		c.ds.warnf(g.Pos, "%s: the step's agent runs on OpenClaw, which reports no tool trace: G is always null (nothing to check)", gw)
	}
}

// checkCheck checks one deterministic check.
func (c *checker) checkCheck(where string, ch *pipeline.Check) {
	for _, f := range slices.Sorted(maps.Keys(checkFields)) {
		if kind := checkFields[f]; ch.Fields.Has(f) && ch.Type != "" && kind != ch.Type {
			c.ds.errorf(ch.Fields[f], "%s: %s is a field of %s checks, not of %s checks", where, f, kind, ch.Type)
		}
	}
	switch ch.Type {
	case pipeline.CheckWebhook:
		if ch.URL == "" {
			c.ds.errorf(ch.Pos, "%s: a webhook check needs url", where)
		}
		c.checkTemplate(where, "url", ch.URL, fieldPos(ch.Fields, "url", ch.Pos))
		for _, k := range slices.Sorted(maps.Keys(ch.Headers)) {
			c.checkTemplate(where, "headers."+k, ch.Headers[k], fieldPos(ch.Fields, "headers", ch.Pos))
		}
		c.checkValueTemplates(where, "payload", ch.Payload, fieldPos(ch.Fields, "payload", ch.Pos))
		for _, s := range append([]string{ch.URL}, slices.Collect(maps.Values(ch.Headers))...) {
			if m := badSecretRef(s); m != "" {
				c.ds.warnf(ch.Pos, "%s: %s", where, m)
			}
		}
		if ch.Payload != nil && ch.Method == "GET" {
			c.ds.errorf(fieldPos(ch.Fields, "payload", ch.Pos), "%s: a GET request has no body: use POST, PUT, PATCH or DELETE, or drop payload", where)
		}
	case pipeline.CheckShell:
		if ch.Run == "" {
			c.ds.errorf(ch.Pos, "%s: a shell check needs run", where)
		}
		c.checkTemplate(where, "run", ch.Run, fieldPos(ch.Fields, "run", ch.Pos))
		c.ds.warnf(fieldPos(ch.Fields, "type", ch.Pos), "%s: a shell check runs its command only in local runs (stepline run, serve); cdk synth refuses a pipeline that has one", where)
	case pipeline.CheckHuman:
		c.checkTemplate(where, "message", ch.Message, fieldPos(ch.Fields, "message", ch.Pos))
		if ch.Fields.Has("expect") {
			c.ds.errorf(ch.Fields["expect"], "%s: a human check has no expect: the approver's decision is its outcome", where)
		}
		return
	default:
		return // the schema reports an unknown type
	}
	c.checkExpect(where, ch)
}

// checkExpect parses a check's expect: as a when: expression and checks
// the names it uses against the check's result.
func (c *checker) checkExpect(where string, ch *pipeline.Check) {
	at := fieldPos(ch.Fields, "expect", ch.Pos)
	src := ch.Expect
	e, err := when.Parse(src)
	if err != nil {
		var we *when.Error
		if errors.As(err, &we) && ch.Fields.Has("expect") {
			c.ds.errorf(c.f.TextPos(at, src, we.Offset), "%s: expect: %s", where, we.Msg)
		} else {
			c.ds.errorf(at, "%s: expect: %v", where, err)
		}
		return
	}
	names := expectScopes[ch.Type]
	scope := when.Scope{}
	for _, n := range names {
		scope[n] = when.Root{Expr: "$" + n}
	}
	ok := true
	for _, p := range when.Paths(e) {
		if !slices.Contains(names, p.Root) {
			ok = false
			c.ds.errorf(c.f.TextPos(at, src, p.Offset), "%s: expect: unknown name %q: a %s check's expect sees %s%s", where, p.Root, ch.Type, strings.Join(names, " and "), didYouMean(p.Root, names))
		}
	}
	if !ok {
		return
	}
	// The state machine's when: lowering takes every expression this
	// one evaluates the same way (keys it cannot quote included).
	if _, err := when.Condition(e, scope); err != nil {
		var we *when.Error
		if errors.As(err, &we) && ch.Fields.Has("expect") {
			c.ds.errorf(c.f.TextPos(at, src, we.Offset), "%s: expect: %s", where, we.Msg)
		} else {
			c.ds.errorf(at, "%s: expect: %v", where, err)
		}
	}
}
