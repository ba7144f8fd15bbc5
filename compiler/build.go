package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

// Env is what a build reads besides the pipeline's source.
type Env struct {
	// CheckExecutor checks each executor_config (package executor's
	// CheckConfig); nil: only the checks the compiler knows itself.
	CheckExecutor ExecutorCheck
	// Project is the project the pipeline belongs to: its agents, MCP
	// servers, tool policy and executor defaults. nil: none, as for a
	// pipeline with no stepline.yaml above it, so that no step can name
	// an agent.
	Project *project.Project
}

// Build runs every phase on one pipeline source: parse, check (with each
// executor_config checked by checkExecutor, package executor's check) and,
// when that found no error, lower, with the limits of the definition. It
// returns the file (nil when the source is not a pipeline at all), the
// state machine (nil when there is any error) and every diagnostic,
// sorted. Whatever fails before a step runs fails here, so a program that
// builds through it (package compiler/gate) accepts exactly what validate
// accepts.
func Build(name string, src []byte, checkExecutor ExecutorCheck) (*File, *asl.StateMachine, Diagnostics) {
	return BuildIn(name, src, Env{CheckExecutor: checkExecutor})
}

// BuildIn is Build in env: with env.Project, the project's diagnostics
// (its stepline.yaml and every profile) are the pipeline's too, so a
// project with an error compiles no pipeline; agent steps resolve their
// agents from it, and gateway steps take its executor defaults.
func BuildIn(name string, src []byte, env Env) (*File, *asl.StateMachine, Diagnostics) {
	f, ds := loadIn(name, src, env)
	if ds.HasErrors() {
		return f, nil, ds
	}
	sm, lds := Lower(f)
	ds = append(ds, f.noteUses(lds)...).Sort()
	if ds.HasErrors() {
		return f, nil, ds
	}
	return f, sm, ds
}

// BuildFile is Build on the file at path, which also checks that every
// sub-pipeline a step runs is defined by a file in the same directory:
// where stepline run and serve and the CDK app look for it.
func BuildFile(path string, checkExecutor ExecutorCheck) (*File, *asl.StateMachine, Diagnostics, error) {
	return BuildFileIn(path, Env{CheckExecutor: checkExecutor})
}

// BuildFileIn is BuildFile in env.
func BuildFileIn(path string, env Env) (*File, *asl.StateMachine, Diagnostics, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read pipeline: %w", err)
	}
	f, sm, ds := BuildIn(path, src, env)
	if f == nil || f.Pipeline == nil {
		return f, sm, ds, nil
	}
	sibs := readSiblings(path)
	if missing := checkChildren(f, filepath.Dir(path), sibs); len(missing) > 0 {
		ds, sm = append(ds, missing...).Sort(), nil
	}
	if dup := checkNameTaken(f, sibs); len(dup) > 0 {
		ds, sm = append(ds, dup...).Sort(), nil
	}
	return f, sm, ds, nil
}

// checkNameTaken reports a pipeline whose name another pipeline file
// (*.yaml, *.yml) beside it defines too, or whose name gives the same
// substitution placeholder as another's ("order-intake", "order_intake"
// and "orderIntake" are all ${PipelineOrderIntakeArn}): run, serve and
// the CDK app load the directory and take one pipeline per name, and the
// CDK app names each state machine's ARN by its placeholder. Only a file
// whose text holds the name, up to case, '-' and '_', is parsed.
func checkNameTaken(f *File, sibs []sibling) Diagnostics {
	if f == nil || f.Pipeline == nil || !pipelineNameRE.MatchString(f.Pipeline.Name) {
		return nil
	}
	name := f.Pipeline.Name
	unfold := strings.NewReplacer("-", "", "_", "")
	fold := func(s string) string { return strings.ToLower(unfold.Replace(s)) }
	key, ph := fold(name), ChildPlaceholder(name)
	var ds Diagnostics
	at := fieldPos(f.Pipeline.Fields, "name", f.Pipeline.Pos)
	for _, sib := range sibs {
		if sib.self || !strings.Contains(fold(string(sib.src)), key) {
			continue
		}
		pf, _ := Parse(sib.name, sib.src)
		switch {
		case pf == nil || pf.Pipeline == nil:
		case pf.Pipeline.Name == name:
			ds.errorf(at, "pipeline name %q is already used by %s: run, serve and the CDK app load one pipeline per name", name, sib.name)
		case ChildPlaceholder(pf.Pipeline.Name) == ph:
			ds.errorf(at, "pipeline %q and %q (%s) share the substitution %s: rename one: the CDK app names each state machine's ARN by it", name, pf.Pipeline.Name, sib.name, ph)
		}
	}
	return ds
}

// sibling is a pipeline file (*.yaml, *.yml) in the directory of the file
// being built, read once for the checks that look at its neighbours; self
// marks that file itself.
type sibling struct {
	name string
	src  []byte
	self bool
}

// readSiblings reads the pipeline files beside path (path's own too,
// marked self); files that cannot be read are left out.
func readSiblings(path string) []sibling {
	self, _ := os.Stat(path)
	dir := filepath.Dir(path)
	entries, _ := os.ReadDir(dir)
	var out []sibling
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		src, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		fi, err := os.Stat(p)
		out = append(out, sibling{name: e.Name(), src: src, self: err == nil && self != nil && os.SameFile(self, fi)})
	}
	return out
}

// checkChildren reports each step of executor pipeline whose pipeline no
// pipeline file (*.yaml, *.yml) in dir defines, runs as an Express
// workflow, or leads back into a cycle of sub-pipelines.
func checkChildren(f *File, dir string, sibs []sibling) Diagnostics {
	type use struct {
		where string
		pos   pipeline.Pos
	}
	if f == nil || f.Pipeline == nil {
		return nil
	}
	uses := map[string][]use{}
	var order []string // the children, in the order the steps name them
	forEachChild(f.Pipeline, func(where, child string, pos pipeline.Pos) {
		if _, seen := uses[child]; !seen {
			order = append(order, child)
		}
		uses[child] = append(uses[child], use{where, pos})
	})
	if len(uses) == 0 {
		return nil
	}
	defined := map[string]bool{f.Pipeline.Name: true}
	express := map[string]pipeline.Workflow{} // children that would run as Express workflows
	runs := map[string][]string{}             // the sub-pipelines each pipeline in dir runs
	for _, sib := range sibs {
		if pf, pds := Parse(sib.name, sib.src); pf != nil && pf.Pipeline != nil {
			defined[pf.Pipeline.Name] = true
			if _, used := uses[pf.Pipeline.Name]; used && !pds.HasErrors() && WorkflowOf(pf.Pipeline).Type == pipeline.WorkflowExpress {
				express[pf.Pipeline.Name] = pf.Pipeline.Workflow
			}
			forEachChild(pf.Pipeline, func(_, child string, _ pipeline.Pos) {
				runs[pf.Pipeline.Name] = append(runs[pf.Pipeline.Name], child)
			})
		}
	}
	runs[f.Pipeline.Name] = order // the file as built, whatever dir holds
	var ds Diagnostics
	for _, child := range order {
		us := uses[child]
		if wf, ok := express[child]; ok {
			for _, u := range us {
				ds.errorf(u.pos, "%s: executor_config.pipeline %q runs as an Express workflow (workflow: %s): a sub-pipeline must be a Standard workflow, which its parent starts and waits for (startExecution.sync:2): set workflow: standard in its file", u.where, child, wf)
			}
			continue
		}
		if !defined[child] {
			for _, u := range us {
				ds.errorf(u.pos, "%s: executor_config.pipeline %q: no pipeline file in %s defines it, and run, serve and the CDK app look for it there", u.where, child, dir)
			}
			continue
		}
		if path := cycleFrom(runs, f.Pipeline.Name, child); path != nil {
			what := "leads to a cycle of sub-pipelines"
			if path[len(path)-1] == f.Pipeline.Name {
				what = "runs this pipeline again"
			}
			for _, u := range us {
				ds.errorf(u.pos, "%s: executor_config.pipeline %q %s (%s): sub-pipelines may not form a cycle: each run would wait on a new run of a pipeline already running, with no bound on the depth", u.where, child, what, strings.Join(path, " → "))
			}
		}
	}
	return ds
}

// forEachChild calls fn with each step, branch and fan_out of p that runs
// a sub-pipeline, the pipeline it names and the position of its
// executor_config.
func forEachChild(p *pipeline.Pipeline, fn func(where, child string, pos pipeline.Pos)) {
	add := func(where, exec string, cfg map[string]any, fs pipeline.Fields, pos pipeline.Pos) {
		if child, ok := cfg["pipeline"].(string); ok && exec == pipeline.ExecPipeline && pipelineNameRE.MatchString(child) {
			fn(where, child, fieldPos(fs, "executor_config", pos))
		}
	}
	for _, n := range p.Steps {
		switch n := n.(type) {
		case *pipeline.Step:
			add(fmt.Sprintf("step %q", n.Name), n.Executor, n.ExecutorConfig, n.Fields, n.Pos)
		case *pipeline.Parallel:
			for _, b := range n.Branches {
				add(fmt.Sprintf("branch %q of parallel %q", b.Name, n.Name), b.Executor, b.ExecutorConfig, b.Fields, b.Pos)
			}
		case *pipeline.FanOut:
			add(fmt.Sprintf("fan_out %q", n.Name), n.Executor, n.ExecutorConfig, n.Fields, n.Pos)
		}
	}
}

// cycleFrom returns the path root → child → … that first comes back to a
// pipeline already on it, following runs (each pipeline's sub-pipelines)
// depth first, or nil when no cycle is reachable from child. Each
// pipeline is explored once, so the search is linear in runs.
func cycleFrom(runs map[string][]string, root, child string) []string {
	path := []string{root}
	onPath := map[string]bool{root: true}
	done := map[string]bool{}
	var visit func(name string) []string
	visit = func(name string) []string {
		path = append(path, name)
		if onPath[name] {
			return slices.Clone(path)
		}
		if done[name] {
			path = path[:len(path)-1]
			return nil
		}
		onPath[name] = true
		for _, next := range runs[name] {
			if found := visit(next); found != nil {
				return found
			}
		}
		onPath[name], done[name] = false, true
		path = path[:len(path)-1]
		return nil
	}
	return visit(child)
}
