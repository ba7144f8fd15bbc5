package plan

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/task"
)

// MaxLambdaTimeout is the longest a Lambda function may run, in seconds.
const MaxLambdaTimeout = 900

// Pipeline is one compiled pipeline and what deploying it needs.
type Pipeline struct {
	Name       string             // the pipeline's name
	File       string             // the file it was read from
	Model      *pipeline.Pipeline // the checked model
	Definition string             // the compiled state machine, compact, as deployed
	// Resources are the substitution placeholders the definition uses,
	// sorted: ${StepFunctionArn}, ${ApprovalFunctionArn}, ${Pipeline<Name>Arn}.
	Resources []string
	// Children maps each sub-pipeline placeholder to the name of the
	// pipeline it stands for.
	Children map[string]string
	// Secrets are the ${NAME} references of the executor configs, failure
	// webhooks and notification configs, sorted.
	Secrets []string
	// DefaultSecrets are the secrets its steps read without naming them
	// (executor.DefaultSecrets: OPENAI_API_KEY for a gateway step without
	// api_key), sorted. A step sends none that is not set, so Secrets maps
	// them only when the mapping has them.
	DefaultSecrets []string
	// Models are the Bedrock model ids (or ARNs) of its bedrock executors
	// and of its agents' bedrock models, sorted.
	Models []string
	// Agents are the agents its steps run, sorted.
	Agents []string
	// MCP reports whether one of those agents calls tools on MCP servers.
	MCP bool
	// StepTimeout is the longest TimeoutSeconds of a Task that invokes the
	// step function; MaxLambdaTimeout when one has none or computes it.
	StepTimeout int
	// Steps are the names of the steps, groups and branches, in file order.
	Steps    []string
	Trigger  *Trigger // nil when the pipeline has no trigger
	Schedule string   // EventBridge Scheduler expression; "" without schedule
	Warnings []string // the compiler's warnings, positioned
}

// Approvals reports whether the pipeline has human steps.
func (p *Pipeline) Approvals() bool {
	return slices.Contains(p.Resources, task.ApprovalFunctionPlaceholder)
}

// Load reads, checks and compiles every pipeline file (*.yaml, *.yml) in
// dir, in name order, through package gate, in the project of the
// stepline.yaml found walking up from dir (none: no agents): what
// stepline validate accepts synthesizes, and what it refuses is refused
// here with the same diagnostics. d is what the stack gives the step
// function (stepline:openaiBaseUrl); it decides warnings only. Every
// file's errors are reported together, with their positions (each file's
// as a *compiler.Error); so are duplicate pipeline names, sub-pipeline
// steps that name a pipeline the directory does not hold, and agent steps
// whose agent needs a stdio MCP server.
func Load(dir string, d settings.Defaults) ([]*Pipeline, error) {
	p, err := project.ForFile(dir)
	if err != nil {
		return nil, fmt.Errorf("load pipelines: %w", err)
	}
	return LoadIn(dir, p, d)
}

// LoadIn is Load in project p (nil: none), whatever stepline.yaml lies
// above dir.
func LoadIn(dir string, p *project.Project, d settings.Defaults) ([]*Pipeline, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load pipelines: %w", err)
	}
	var files []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("load pipelines: no *.yaml or *.yml file in %s", dir)
	}
	var (
		out  []*Pipeline
		errs []error
	)
	for _, path := range files {
		pl, err := compile(path, p, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, pl)
	}
	if len(errs) == 0 {
		errs = link(out)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load pipelines: %w", errors.Join(errs...))
	}
	return out, nil
}

// compile compiles one file and derives what is known of it alone.
func compile(path string, proj *project.Project, d settings.Defaults) (*Pipeline, error) {
	f, sm, ds, err := gate.CompileFileIn(path, proj, d)
	if err != nil {
		return nil, err
	}
	if sm == nil {
		return nil, &fileError{ds.Err()}
	}
	if stdio := stdioAgents(f.Pipeline); len(stdio) > 0 {
		return nil, &fileError{stdio.Err()}
	}
	if remote := unreachableAgents(f.Pipeline); len(remote) > 0 {
		return nil, &fileError{remote.Err()}
	}
	if shell := shellChecks(f.Pipeline); len(shell) > 0 {
		return nil, &fileError{shell.Err()}
	}
	def, err := compiler.MarshalCompact(sm)
	if err != nil {
		return nil, fmt.Errorf("%s: encode state machine: %w", path, err)
	}
	m := f.Pipeline
	p := &Pipeline{
		Name:           m.Name,
		File:           path,
		Model:          m,
		Definition:     string(def),
		Resources:      compiler.Placeholders(def),
		Secrets:        secretNames(m),
		DefaultSecrets: defaultSecrets(m),
		Models:         bedrockModels(m),
		Agents:         agentNames(m),
		MCP:            usesMCP(m),
		StepTimeout:    stepTimeout(sm),
		Steps:          stepNames(m),
	}
	for _, d := range ds.Warnings() {
		p.Warnings = append(p.Warnings, d.String())
	}
	if m.Trigger != nil {
		p.Trigger = NewTrigger(m.Trigger)
	}
	if m.Schedule != nil && m.Schedule.Cron != "" {
		expr, err := compiler.SchedulerExpression(m.Schedule.Cron)
		if err != nil {
			return nil, fmt.Errorf("%s: schedule.cron %q: %w", path, m.Schedule.Cron, err)
		}
		p.Schedule = expr
	}
	return p, nil
}

// fileError is the error of a file that does not compile: its message
// lists every error, one per line, where a *compiler.Error names the
// first only; errors.As still finds the *compiler.Error.
type fileError struct{ err error }

func (e *fileError) Error() string {
	ds, _ := compiler.AsError(e.err)
	return strings.TrimSpace(ds.String())
}

func (e *fileError) Unwrap() error { return e.err }

// link resolves the sub-pipeline placeholders across pipelines and checks
// that names are unique.
func link(ps []*Pipeline) []error {
	var errs []error
	byName := map[string]*Pipeline{}
	byPlaceholder := map[string]*Pipeline{}
	for _, p := range ps {
		if q, dup := byName[p.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: pipeline name %q is already used by %s", p.File, p.Name, q.File))
			continue
		}
		byName[p.Name] = p
		ph := compiler.ChildPlaceholder(p.Name)
		if q, dup := byPlaceholder[ph]; dup {
			errs = append(errs, fmt.Errorf("%s: pipeline %q and %q (%s) share the substitution %s: rename one", p.File, p.Name, q.Name, q.File, ph))
			continue
		}
		byPlaceholder[ph] = p
	}
	for _, p := range ps {
		for _, ph := range p.Resources {
			if ph == task.StepFunctionPlaceholder || ph == task.ApprovalFunctionPlaceholder {
				continue
			}
			child, ok := byPlaceholder[ph]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: pipeline %q starts a sub-pipeline (%s) that is not in the pipeline directory", p.File, p.Name, ph))
				continue
			}
			if p.Children == nil {
				p.Children = map[string]string{}
			}
			p.Children[ph] = child.Name
		}
	}
	return errs
}

// stepTimeout is the longest timeout of the Tasks that invoke the step
// function: what that function's own timeout must allow.
func stepTimeout(sm *asl.StateMachine) int {
	longest := 0
	var walk func(states asl.States)
	walk = func(states asl.States) {
		for _, st := range states.All() {
			switch st := st.(type) {
			case *asl.Task:
				if st.Resource != asl.ResourceLambdaInvoke || functionName(st.Arguments) != task.StepFunctionPlaceholder {
					continue
				}
				longest = max(longest, seconds(st.TimeoutSeconds))
			case *asl.Parallel:
				for _, b := range st.Branches {
					walk(b.States)
				}
			case *asl.Map:
				walk(st.ItemProcessor.States)
			}
		}
	}
	walk(sm.States)
	return min(longest, MaxLambdaTimeout)
}

func functionName(args any) string {
	m, ok := args.(map[string]any)
	if !ok {
		return ""
	}
	s, _ := m["FunctionName"].(string)
	return s
}

// seconds reads a Task's TimeoutSeconds; absent or computed at run time
// counts as the most a Lambda function may take.
func seconds(v any) int {
	switch v := v.(type) {
	case int:
		if v > 0 {
			return v
		}
	case int64:
		if v > 0 {
			return int(min(v, MaxLambdaTimeout))
		}
	case float64:
		if v > 0 {
			return int(min(v, MaxLambdaTimeout))
		}
	}
	return MaxLambdaTimeout
}

// stepNames lists every step, group and branch name in file order.
func stepNames(m *pipeline.Pipeline) []string {
	var out []string
	for _, n := range m.Steps {
		out = append(out, n.NodeName())
		if g, ok := n.(*pipeline.Parallel); ok {
			for _, b := range g.Branches {
				out = append(out, b.Name)
			}
		}
	}
	return out
}

// executors calls fn for every executor and its config in the pipeline:
// steps, branches, fan-outs and their verifiers.
func executors(m *pipeline.Pipeline, fn func(executor string, cfg map[string]any)) {
	verifier := func(v *pipeline.Verifier) {
		if v != nil {
			fn(v.Executor, v.ExecutorConfig)
		}
	}
	for _, n := range m.Steps {
		switch n := n.(type) {
		case *pipeline.Step:
			fn(n.Executor, n.ExecutorConfig)
			verifier(n.Verifier)
		case *pipeline.Parallel:
			for _, b := range n.Branches {
				fn(b.Executor, b.ExecutorConfig)
				verifier(b.Verifier)
			}
		case *pipeline.FanOut:
			fn(n.Executor, n.ExecutorConfig)
			verifier(n.Verifier)
		}
	}
}

// secretNames lists the ${NAME} references the functions resolve at run
// time: in executor configs, failure webhooks and notification configs.
func secretNames(m *pipeline.Pipeline) []string {
	seen := map[string]bool{}
	var visit func(v any)
	visit = func(v any) {
		switch v := v.(type) {
		case string:
			for _, n := range secret.Names(v) {
				seen[n] = true
			}
		case map[string]any:
			for _, e := range v {
				visit(e)
			}
		case map[string]string:
			for _, e := range v {
				visit(e)
			}
		case []any:
			for _, e := range v {
				visit(e)
			}
		case []string:
			for _, e := range v {
				visit(e)
			}
		}
	}
	executors(m, func(_ string, cfg map[string]any) { visit(cfg) })
	agents(m, func(_ string, _ pipeline.Pos, r *agent.Resolved) {
		for _, e := range r.Models {
			visit(e.BaseURL)
			visit(e.APIKey)
		}
		for _, s := range r.Servers {
			visit(s.URL)
			visit(s.Headers)
			visit(s.Env)
		}
		if rt := r.Remote; rt != nil {
			visit(rt.URL)
			visit(rt.Token)
			visit(rt.Device)
			visit(rt.DeviceAuth)
		}
	})
	for _, n := range m.Steps {
		if s, ok := n.(*pipeline.Step); ok && s.OnFailure.Webhook != nil {
			w := s.OnFailure.Webhook
			visit(w.URL)
			visit(w.Headers)
			visit(w.Payload)
		}
		if s, ok := n.(*pipeline.Step); ok {
			for _, c := range s.Checks {
				visit(c.URL)
				visit(c.Headers)
				visit(c.Payload)
			}
		}
	}
	for _, a := range m.Notifications {
		for _, n := range a.Notices {
			visit(n.Config)
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// defaultSecrets lists the secrets the pipeline's executors read by
// default.
func defaultSecrets(m *pipeline.Pipeline) []string {
	seen := map[string]bool{}
	executors(m, func(exec string, cfg map[string]any) {
		for _, n := range executor.DefaultSecrets(exec, cfg) {
			seen[n] = true
		}
	})
	return slices.Sorted(maps.Keys(seen))
}

// bedrockModels lists the models the pipeline's bedrock executors call.
func bedrockModels(m *pipeline.Pipeline) []string {
	seen := map[string]bool{}
	executors(m, func(executor string, cfg map[string]any) {
		if executor != pipeline.ExecBedrock {
			return
		}
		if _, isAgent := cfg["agent"]; isAgent {
			return // its models are its agent's
		}
		if s, ok := cfg["model"].(string); ok && s != "" {
			seen[s] = true
		}
	})
	agents(m, func(_ string, _ pipeline.Pos, r *agent.Resolved) {
		for _, e := range r.Models {
			if e.API == agent.APIBedrock && e.Model != "" {
				seen[e.Model] = true
			}
		}
	})
	return slices.Sorted(maps.Keys(seen))
}

// agents calls fn for every step, branch and fan-out that runs an agent,
// with where its executor_config was written.
func agents(m *pipeline.Pipeline, fn func(where string, at pipeline.Pos, r *agent.Resolved)) {
	at := func(fs pipeline.Fields, pos pipeline.Pos) pipeline.Pos {
		if p, ok := fs["executor_config"]; ok {
			return p
		}
		return pos
	}
	for _, n := range m.Steps {
		switch n := n.(type) {
		case *pipeline.Step:
			if n.Agent != nil {
				fn(fmt.Sprintf("step %q", n.Name), at(n.Fields, n.Pos), n.Agent)
			}
			if g := n.Grounding; g != nil && g.Judge != nil {
				fn(fmt.Sprintf("step %q grounding", n.Name), fieldPos(g.Fields, "agent", g.Pos), g.Judge)
			}
		case *pipeline.Parallel:
			for _, b := range n.Branches {
				if b.Agent != nil {
					fn(fmt.Sprintf("branch %q of parallel %q", b.Name, n.Name), at(b.Fields, b.Pos), b.Agent)
				}
			}
		case *pipeline.FanOut:
			if n.Agent != nil {
				fn(fmt.Sprintf("fan_out %q", n.Name), at(n.Fields, n.Pos), n.Agent)
			}
		}
	}
}

// agentNames lists the agents the pipeline's steps run.
func agentNames(m *pipeline.Pipeline) []string {
	seen := map[string]bool{}
	agents(m, func(_ string, _ pipeline.Pos, r *agent.Resolved) { seen[r.Profile.Name] = true })
	return slices.Sorted(maps.Keys(seen))
}

// usesMCP reports whether an agent of the pipeline names MCP servers.
func usesMCP(m *pipeline.Pipeline) bool {
	uses := false
	agents(m, func(_ string, _ pipeline.Pos, r *agent.Resolved) {
		uses = uses || len(r.Servers) > 0
	})
	return uses
}

// stdioAgents reports each step whose agent needs a stdio MCP server:
// such a server is a process only a local run can start, and the step
// function has none to start.
func stdioAgents(m *pipeline.Pipeline) compiler.Diagnostics {
	var ds compiler.Diagnostics
	agents(m, func(where string, at pipeline.Pos, r *agent.Resolved) {
		for _, name := range project.StdioServers(r) {
			ds = append(ds, compiler.Diagnostic{Pos: at, Msg: fmt.Sprintf(
				"%s: agent %q needs MCP server %q, a stdio server (command %q) that only local runs can start: give the server a url (streamable HTTP) in stepline.yaml to deploy this pipeline",
				where, r.Profile.Name, name, r.Servers[name].Command)})
		}
	})
	return ds.Sort()
}

// shellChecks reports each shell check: a command runs only where the
// pipeline's operator runs Stepline. In the step Lambda it would run with
// the function's role and every pipeline's secrets within reach, in a
// container reused across runs and pipelines, with none of the tools
// such a command uses; webhook checks reach the same verifications.
func shellChecks(m *pipeline.Pipeline) compiler.Diagnostics {
	var ds compiler.Diagnostics
	for _, n := range m.Steps {
		s, ok := n.(*pipeline.Step)
		if !ok {
			continue
		}
		for _, c := range s.Checks {
			if c.Type == pipeline.CheckShell {
				ds = append(ds, compiler.Diagnostic{Pos: fieldPos(c.Fields, "type", c.Pos), Msg: fmt.Sprintf(
					"step %q: deterministic check %q is a shell check, which runs only in local runs (stepline run, serve): the step function on Lambda runs no commands (its role and the secrets it reads are every pipeline's, and its container outlives the run); check through a webhook (type: webhook) to deploy this pipeline",
					s.Name, c.Name)})
			}
		}
	}
	return ds.Sort()
}

// fieldPos is where key was written in a node, else the node.
func fieldPos(fs pipeline.Fields, key string, fallback pipeline.Pos) pipeline.Pos {
	if p, ok := fs[key]; ok {
		return p
	}
	return fallback
}
