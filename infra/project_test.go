package infra_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/stepline/stepline/compiler/gate"
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

// TestIngestCarriesTheProject: the ingest function's asset holds the
// project file and its agents, laid out as in the project, so it compiles
// the pipelines of the deployment's bundles as synth did; the pipelines
// are in the bundle, not in the code asset (a pipelines/ directory left
// by an earlier build is removed); a stack without a project leaves no
// project file there.
func TestIngestCarriesTheProject(t *testing.T) {
	assets := newAssets(t)
	proj := writeTree(t, fixtureProject)
	pipes := writeFiles(t, map[string]string{"agent.yaml": fixturePipelines["agent.yaml"]})
	props := &infra.Props{PipelineDir: pipes, Config: filepath.Join(proj, "stepline.yaml"), AssetDir: assets,
		Secrets: map[string]string{"MCP_TOKEN": "ssm:/mcp"}}
	if _, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", props); err != nil {
		t.Fatal(err)
	}
	ingest := filepath.Join(assets, infra.FunctionIngest)
	for _, f := range []string{"stepline.yaml", "agents/digger/agent.yaml", "agents/digger/soul.md", "agents/local/agent.yaml"} {
		got, err := os.ReadFile(filepath.Join(ingest, f))
		want, _ := os.ReadFile(filepath.Join(proj, f))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s staged as %q (%v), want %q", f, got, err, want)
		}
	}
	files := onlyBundle(t, assets)
	if len(files) != 1 || files[0].Name != "agent.yaml" || files[0].Source != fixturePipelines["agent.yaml"] {
		t.Fatalf("bundle %+v, want agent.yaml as written", files)
	}
	// The model is the pipeline as synth compiled it in the project: its
	// agent resolved from the project's profile.
	if p, err := files[0].Pipeline(); err != nil || len(p.Steps) == 0 || p.Config == "" {
		t.Errorf("bundled model: %+v, %v", p, err)
	} else if s, ok := p.Steps[0].(*pipeline.Step); !ok || s.Agent == nil || s.Agent.Profile.Name == "" {
		t.Errorf("bundled model's first step %+v: want its agent resolved", p.Steps[0])
	}
	if _, err := os.Stat(filepath.Join(ingest, "pipelines")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pipeline files in the ingest asset: %v", err)
	}

	// Without a project, the project file staged before is gone, and so
	// is the pipelines/ directory of earlier builds.
	if err := os.MkdirAll(filepath.Join(ingest, "pipelines"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := writeFiles(t, map[string]string{"a.yaml": "name: a\nsteps:\n  - {name: s, executor: webhook, executor_config: {url: 'https://example.com'}, timeout_seconds: 5}\n"})
	if _, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", &infra.Props{PipelineDir: plain, AssetDir: assets}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ingest, "stepline.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a project file is left in the ingest asset: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ingest, "pipelines")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an earlier build's pipelines are left in the ingest asset: %v", err)
	}

	// An agents directory outside the project cannot travel with it.
	outside := writeTree(t, map[string]string{
		"proj/stepline.yaml":         "agents: ../shared-agents\n",
		"shared-agents/a/agent.yaml": "name: a\nmodel: anthropic/x\n",
		"shared-agents/a/soul.md":    "",
	})
	_, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", &infra.Props{PipelineDir: plain, Config: filepath.Join(outside, "proj", "stepline.yaml"), AssetDir: assets})
	if err == nil || !strings.Contains(err.Error(), "stage project for ingest: the agents directory "+filepath.Join(outside, "shared-agents")+" must be a directory inside") {
		t.Errorf("agents outside the project: %v", err)
	}
}

// TestIngestCarriesTheStepLibrary: the ingest function's asset holds the
// project's step library, laid out as in the project, so the pipelines it
// compiles there resolve their use: as synth did; a library the stack no
// longer has is not left behind, and a steps directory outside the
// project cannot travel with it.
func TestIngestCarriesTheStepLibrary(t *testing.T) {
	assets := newAssets(t)
	const check = "name: check\ndescription: Check a service.\nexecutor: webhook\nexecutor_config: {url: 'https://hooks.example.com/check'}\ntimeout_seconds: 5\n"
	proj := writeTree(t, map[string]string{
		"stepline.yaml":         "steps: library\n",
		"library/check.yaml":    check,
		"library/_draft.yaml":   "not read",
		"pipelines/checks.yaml": "name: checks\nsteps:\n  - {use: check, name: first}\n",
	})
	props := &infra.Props{PipelineDir: filepath.Join(proj, "pipelines"), AssetDir: assets}
	if _, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", props); err != nil {
		t.Fatal(err)
	}
	ingest := filepath.Join(assets, infra.FunctionIngest)
	if got, err := os.ReadFile(filepath.Join(ingest, "library", "check.yaml")); err != nil || string(got) != check {
		t.Errorf("library/check.yaml staged as %q (%v)", got, err)
	}
	if _, err := os.Stat(filepath.Join(ingest, "library", "_draft.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file that is no step file is staged: %v", err)
	}
	// What ingest compiles with: the staged project and library, and the
	// bundle's files written to a directory of their own.
	staged, err := project.ForFile(ingest)
	if err != nil || staged == nil {
		t.Fatalf("no project staged beside the bootstrap: %v", err)
	}
	dir := t.TempDir()
	if err := catalog.WriteDir(dir, onlyBundle(t, assets)); err != nil {
		t.Fatal(err)
	}
	f, sm, ds, err := gate.CompileFileIn(filepath.Join(dir, "checks.yaml"), staged, settings.Defaults{})
	if err != nil || sm == nil {
		t.Fatalf("the staged pipeline does not compile: %v\n%s", err, ds)
	}
	if s := f.Pipeline.Steps[0].(*pipeline.Step); s.Name != "first" || s.Executor != "webhook" {
		t.Errorf("the staged pipeline's step %+v", s)
	}

	// Without step files, nothing of the library is left in the asset.
	if err := os.Remove(filepath.Join(proj, "library", "check.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "pipelines", "checks.yaml"), []byte("name: checks\nsteps:\n  - {name: first, executor: webhook, executor_config: {url: 'https://hooks.example.com/check'}, timeout_seconds: 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", props); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ingest, "library")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the library staged before is left in the asset: %v", err)
	}

	// A steps directory outside the project cannot travel with it.
	outside := writeTree(t, map[string]string{
		"proj/stepline.yaml":      "steps: ../shared-steps\n",
		"proj/pipelines/a.yaml":   "name: a\nsteps:\n  - {use: check}\n",
		"shared-steps/check.yaml": check,
	})
	_, err = infra.NewStack(awscdk.NewApp(nil), "Stepline", &infra.Props{PipelineDir: filepath.Join(outside, "proj", "pipelines"), AssetDir: assets})
	if err == nil || !strings.Contains(err.Error(), "stage project for ingest: the steps directory "+filepath.Join(outside, "shared-steps")+" must be a directory inside") {
		t.Errorf("steps outside the project: %v", err)
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
