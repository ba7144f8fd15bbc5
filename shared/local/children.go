package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/local/defcache"
	"github.com/stepline/stepline/shared/pipeline"
)

// children runs the sub-pipelines of states:startExecution.sync:2 tasks as
// runs of their own, linked to their parent.
type children struct{ r *Runner }

// StartChild implements engine.ChildStarter. The task names the child by
// its ${Pipeline<Name>Arn} placeholder; its definition was saved by
// Compile when the parent was compiled.
func (c children) StartChild(ctx context.Context, req engine.ChildRequest) (engine.Result, error) {
	name, err := c.r.childName(req.StateMachine)
	if err != nil {
		return engine.Result{}, err
	}
	sm, err := definitions{filepath.Join(c.r.dir, "definitions")}.Definition(ctx, name, "")
	if err != nil {
		return engine.Result{}, err
	}
	started := c.r.now().UTC()
	res, err := c.r.engine.Start(ctx, req.RunID, sm, req.Input, engine.WithParent(req), engine.WithStateMachine(name))
	if errors.Is(err, engine.ErrRunExists) {
		// The parent resumed after a crash: continue the child instead.
		res, err = c.r.engine.Resume(ctx, req.RunID, sm)
	}
	if err != nil {
		return engine.Result{}, fmt.Errorf("run sub-pipeline %q: %w", name, err)
	}
	c.r.keepWaiting(sm, res)
	if _, serr := c.r.settle(ctx, name, res, &startFacts{sm: sm, input: req.Input, at: started}); serr != nil {
		return res, serr
	}
	return res, nil
}

// childName finds the pipeline whose placeholder a task names.
func (r *Runner) childName(placeholder string) (string, error) {
	files, err := filepath.Glob(filepath.Join(r.dir, "definitions", "*.asl.json"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".asl.json")
		if compiler.ChildPlaceholder(name) == placeholder {
			return name, nil
		}
	}
	return "", fmt.Errorf("no compiled pipeline for %s: the sub-pipeline's file must be beside its parent's", placeholder)
}

// compileChildren compiles the pipelines p runs as sub-pipelines (from
// sequential steps, parallel branches and fan-outs), found among the
// pipeline files in dir, so that their runs can start.
func (r *Runner) compileChildren(dir string, p *pipeline.Pipeline, seen map[string]bool, saved *[]defcache.File) error {
	for _, c := range childSteps(p) {
		child, _ := c.config["pipeline"].(string)
		if child == "" || seen[child] {
			continue
		}
		seen[child] = true
		path, err := findPipeline(dir, child)
		if err != nil {
			return fmt.Errorf("step %q: %w", c.name, err)
		}
		if _, _, _, err := r.compile(path, seen, saved); err != nil {
			return fmt.Errorf("sub-pipeline %q: %w", child, err)
		}
	}
	return nil
}

// childStep is a step, branch or fan-out whose executor is pipeline.
type childStep struct {
	name   string
	config map[string]any
}

// childSteps lists the nodes of p that run a sub-pipeline, in order.
func childSteps(p *pipeline.Pipeline) []childStep {
	var out []childStep
	for _, n := range p.Steps {
		switch n := n.(type) {
		case *pipeline.Step:
			if n.Executor == pipeline.ExecPipeline {
				out = append(out, childStep{n.Name, n.ExecutorConfig})
			}
		case *pipeline.Parallel:
			for _, b := range n.Branches {
				if b.Executor == pipeline.ExecPipeline {
					out = append(out, childStep{b.Name, b.ExecutorConfig})
				}
			}
		case *pipeline.FanOut:
			if n.Executor == pipeline.ExecPipeline {
				out = append(out, childStep{n.Name, n.ExecutorConfig})
			}
		}
	}
	return out
}

// findPipeline returns the file in dir that defines the pipeline name.
func findPipeline(dir, name string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return "", err
	}
	more, _ := filepath.Glob(filepath.Join(dir, "*.yml"))
	for _, f := range append(files, more...) {
		src, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pf, _ := compiler.Parse(f, src)
		if pf != nil && pf.Pipeline != nil && pf.Pipeline.Name == name {
			return f, nil
		}
	}
	return "", fmt.Errorf("no pipeline named %q in %s", name, dir)
}
