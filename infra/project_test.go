package infra_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/stepline/stepline/infra"
	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/catalog"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

// newAssets makes an asset directory of dummy bootstraps.
func newAssets(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, fn := range infra.Functions() {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// onlyBundle decodes the one pipeline bundle staged in an asset directory.
func onlyBundle(t *testing.T, assets string) []catalog.File {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(assets, "bundles", "*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("bundles staged: %v (%v), want one", files, err)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := catalog.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return b.Files
}

// assetFiles lists the files under the ingest function's asset directory,
// relative to it.
func assetFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIngestReadsTheModels: the bundle carries each pipeline's model as
// synth compiled it in the project (its agent resolved from the project's
// profile), so the ingest function's asset is its bootstrap alone: what
// earlier synths staged beside it to compile with (the project file, its
// agents, a pipelines/ directory) is removed, and an agents directory
// outside the project deploys.
func TestIngestReadsTheModels(t *testing.T) {
	assets := newAssets(t)
	ingest := filepath.Join(assets, infra.FunctionIngest)
	for _, f := range []string{"stepline.yaml", "agents/digger/agent.yaml", "pipelines/agent.yaml"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ingest, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ingest, f), []byte("staged by an earlier synth"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proj := writeTree(t, fixtureProject)
	pipes := writeFiles(t, map[string]string{"agent.yaml": fixturePipelines["agent.yaml"]})
	props := &infra.Props{PipelineDir: pipes, Config: filepath.Join(proj, "stepline.yaml"), AssetDir: assets,
		Secrets: map[string]string{"MCP_TOKEN": "ssm:/mcp"}}
	if _, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", props); err != nil {
		t.Fatal(err)
	}
	if got := assetFiles(t, ingest); !slices.Equal(got, []string{"bootstrap"}) {
		t.Errorf("the ingest asset holds %v, want its bootstrap alone", got)
	}
	files := onlyBundle(t, assets)
	if len(files) != 1 || files[0].Name != "agent.yaml" || files[0].Source != fixturePipelines["agent.yaml"] {
		t.Fatalf("bundle %+v, want agent.yaml as written", files)
	}
	p, err := files[0].Pipeline()
	if err != nil || len(p.Steps) == 0 || p.Config == "" {
		t.Fatalf("bundled model: %+v, %v", p, err)
	}
	if s, ok := p.Steps[0].(*pipeline.Step); !ok || s.Agent == nil || s.Agent.Profile.Name != "digger" || s.Agent.Servers["grafana"].URL == "" {
		t.Errorf("bundled model's first step %+v: want its agent resolved from the project", p.Steps[0])
	}
	// The model is the one plan compiled: the fingerprint of the state
	// machine deployed.
	ps, err := plan.LoadIn(pipes, mustProject(t, filepath.Join(proj, "stepline.yaml")), settings.Defaults{})
	if err != nil || len(ps) != 1 || ps[0].Model.Config != p.Config {
		t.Errorf("plan's fingerprint %v (%v), the bundle's %s", ps, err, p.Config)
	}

	// An agents directory outside the project: nothing travels with the
	// function, so it deploys.
	outside := writeTree(t, map[string]string{
		"proj/stepline.yaml":              "agents: ../shared-agents\n",
		"shared-agents/digger/agent.yaml": "name: digger\nmodel: anthropic/x\n",
		"shared-agents/digger/soul.md":    "",
	})
	if _, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", &infra.Props{PipelineDir: pipes, Config: filepath.Join(outside, "proj", "stepline.yaml"), AssetDir: assets,
		Secrets: map[string]string{"ANTHROPIC_API_KEY": "ssm:/anthropic"}}); err != nil {
		t.Errorf("agents outside the project: %v", err)
	}
}

func mustProject(t *testing.T, path string) *project.Project {
	t.Helper()
	p, err := project.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLibraryStepsInTheModels: a pipeline that uses a library step is
// bundled with the step resolved in its model, so the ingest function
// needs no library beside it (what an earlier synth staged there is
// removed), wherever the project keeps its steps.
func TestLibraryStepsInTheModels(t *testing.T) {
	const check = "name: check\ndescription: Check a service.\nexecutor: webhook\nexecutor_config: {url: 'https://hooks.example.com/check'}\ntimeout_seconds: 5\n"
	for _, tc := range []struct {
		name string
		tree map[string]string
		dir  string // the pipelines', in the tree
		// staged is what an earlier synth staged in the ingest asset from
		// this project: a library inside it (one outside could not be).
		staged string
	}{
		{"inside the project", map[string]string{
			"stepline.yaml":         "steps: library\n",
			"library/check.yaml":    check,
			"pipelines/checks.yaml": "name: checks\nsteps:\n  - {use: check, name: first}\n",
		}, "pipelines", "library/check.yaml"},
		{"outside the project", map[string]string{
			"proj/stepline.yaml":         "steps: ../shared-steps\n",
			"proj/pipelines/checks.yaml": "name: checks\nsteps:\n  - {use: check, name: first}\n",
			"shared-steps/check.yaml":    check,
		}, "proj/pipelines", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assets := newAssets(t)
			ingest := filepath.Join(assets, infra.FunctionIngest)
			if tc.staged != "" {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(ingest, tc.staged)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(ingest, tc.staged), []byte("staged by an earlier synth"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			root := writeTree(t, tc.tree)
			if _, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", &infra.Props{PipelineDir: filepath.Join(root, tc.dir), AssetDir: assets}); err != nil {
				t.Fatal(err)
			}
			if got := assetFiles(t, ingest); !slices.Equal(got, []string{"bootstrap"}) {
				t.Errorf("the ingest asset holds %v, want its bootstrap alone", got)
			}
			files := onlyBundle(t, assets)
			p, err := files[0].Pipeline()
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := p.Steps[0].(*pipeline.Step); !ok || s.Name != "first" || s.Executor != "webhook" || s.ExecutorConfig["url"] != "https://hooks.example.com/check" {
				t.Errorf("the bundled model's step %+v, want the library step resolved", p.Steps[0])
			}
		})
	}
}

// TestLibraryEditRedeploys: a state machine holds its library steps
// resolved, so an edit of a library step changes the definition the
// stack deploys.
func TestLibraryEditRedeploys(t *testing.T) {
	proj := writeTree(t, map[string]string{
		"stepline.yaml":         "",
		"steps/check.yaml":      "name: check\nexecutor: webhook\nexecutor_config: {url: 'https://hooks.example.com/v1/check'}\ntimeout_seconds: 5\n",
		"pipelines/checks.yaml": "name: checks\nsteps:\n  - {use: check, name: first}\n",
	})
	definition := func() string {
		t.Helper()
		ps, err := plan.Load(filepath.Join(proj, "pipelines"), settings.Defaults{})
		if err != nil || len(ps) != 1 {
			t.Fatalf("plan: %v", err)
		}
		return ps[0].Definition
	}
	before := definition()
	if err := os.WriteFile(filepath.Join(proj, "steps", "check.yaml"), []byte("name: check\nexecutor: webhook\nexecutor_config: {url: 'https://hooks.example.com/v2/check'}\ntimeout_seconds: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	after := definition()
	if !strings.Contains(before, "/v1/check") || !strings.Contains(after, "/v2/check") || strings.Contains(after, "/v1/check") {
		t.Errorf("the definition does not follow the library:\nbefore %s\nafter  %s", before, after)
	}
}
