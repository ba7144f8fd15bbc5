package infra_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/stepline/stepline/infra"
)

// newAssets makes an asset directory of dummy bootstraps.
func newAssets(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, fn := range infra.Functions {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestIngestCarriesTheProject: the ingest function's asset holds the
// project file and its agents, laid out as in the project, beside the
// pipelines it routes, so it compiles them as synth did; a stack without
// a project leaves no project file there.
func TestIngestCarriesTheProject(t *testing.T) {
	assets := newAssets(t)
	proj := writeTree(t, fixtureProject)
	pipes := writeFiles(t, map[string]string{"agent.yaml": fixturePipelines["agent.yaml"]})
	props := &infra.StackProps{PipelineDir: pipes, Config: filepath.Join(proj, "stepline.yaml"), AssetDir: assets,
		Secrets: map[string]string{"MCP_TOKEN": "ssm:/mcp"}}
	if _, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", props); err != nil {
		t.Fatal(err)
	}
	ingest := filepath.Join(assets, infra.FunctionIngest)
	for _, f := range []string{"stepline.yaml", "agents/digger/agent.yaml", "agents/digger/soul.md", "agents/local/agent.yaml", "pipelines/agent.yaml"} {
		got, err := os.ReadFile(filepath.Join(ingest, f))
		want, _ := os.ReadFile(filepath.Join(proj, f))
		if strings.HasPrefix(f, "pipelines/") {
			want, _ = os.ReadFile(filepath.Join(pipes, filepath.Base(f)))
		}
		if err != nil || string(got) != string(want) {
			t.Errorf("%s staged as %q (%v), want %q", f, got, err, want)
		}
	}

	// Without a project, the project file staged before is gone.
	plain := writeFiles(t, map[string]string{"a.yaml": "name: a\nsteps:\n  - {name: s, executor: webhook, executor_config: {url: 'https://example.com'}, timeout_seconds: 5}\n"})
	if _, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", &infra.StackProps{PipelineDir: plain, AssetDir: assets}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ingest, "stepline.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a project file is left in the ingest asset: %v", err)
	}

	// An agents directory outside the project cannot travel with it.
	outside := writeTree(t, map[string]string{
		"proj/stepline.yaml":         "agents: ../shared-agents\n",
		"shared-agents/a/agent.yaml": "name: a\nmodel: anthropic/x\n",
		"shared-agents/a/soul.md":    "",
	})
	_, err := infra.NewStack(awscdk.NewApp(nil), "Stepline", &infra.StackProps{PipelineDir: plain, Config: filepath.Join(outside, "proj", "stepline.yaml"), AssetDir: assets})
	if err == nil || !strings.Contains(err.Error(), "stage project for ingest: the agents directory "+filepath.Join(outside, "shared-agents")+" must be a directory inside") {
		t.Errorf("agents outside the project: %v", err)
	}
}
