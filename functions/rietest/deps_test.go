package rietest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stepline/stepline/internal/testenv"
)

// TestBootstrapDependencies pins what each function's bootstrap does not
// link, as built for Lambda: every package linked runs its initialisers
// at every cold start, and these are the heavy ones a function does not
// need.
func TestBootstrapDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the bootstraps' dependencies with go list")
	}
	const (
		sfnSDK   = "github.com/aws/aws-sdk-go-v2/service/sfn"
		mcpSDK   = "github.com/modelcontextprotocol/go-sdk/mcp"
		gob      = "encoding/gob"
		executor = "github.com/stepline/stepline/shared/executor"
		// The agent runtime and the YAML parser: the pipeline model links
		// only package shared/agent/spec, the data an agent step carries.
		agent = "github.com/stepline/stepline/shared/agent"
		yaml  = "go.yaml.in/yaml/v3"
		// The compiler and its schema validator (gojsonschema's
		// initialisers compile its format regexps at every start): no
		// function compiles pipelines, ingest reads the models the CDK
		// app compiled (package shared/catalog).
		compiler     = "github.com/stepline/stepline/compiler"
		gate         = "github.com/stepline/stepline/compiler/gate"
		gojsonschema = "github.com/xeipuuv/gojsonschema"
		// The project loader and intake's file loaders (through them the
		// compiler and the YAML parser): ingest routes with package
		// shared/inbound.
		project = "github.com/stepline/stepline/shared/project"
		intake  = "github.com/stepline/stepline/shared/intake"
		// The step runner (and through it the agent runtime): the step
		// and approval functions run Tasks.
		steprun = "github.com/stepline/stepline/shared/steprun"
		// Liquid, which notifications and prompts render with.
		liquid = "github.com/osteele/liquid/render"
		// html/template (and text/template): package shared/approval
		// writes its pages by hand.
		htmlTemplate = "html/template"
		textTemplate = "text/template"
	)
	for _, tc := range []struct {
		function string
		absent   []string
	}{
		// The step function runs agents: it links the MCP SDK.
		{"step", []string{sfnSDK, compiler, gojsonschema, htmlTemplate}},
		{"approval", []string{executor, mcpSDK, gob, sfnSDK, compiler, gojsonschema, htmlTemplate, textTemplate}},
		// The callback resumes runs through functions/internal/states.
		{"callback", []string{executor, mcpSDK, gob, sfnSDK, agent, yaml, compiler, gojsonschema, steprun, liquid, htmlTemplate, textTemplate}},
		{"recorder", []string{executor, mcpSDK, gob, sfnSDK, agent, yaml, compiler, gojsonschema, steprun, htmlTemplate}},
		// Ingest decodes the compiled models of the bundles with
		// encoding/json: no compiler, Liquid or YAML.
		{"ingest", []string{executor, mcpSDK, gob, sfnSDK, steprun, agent, yaml, compiler, gate, gojsonschema, liquid, htmlTemplate, project, intake}},
	} {
		t.Run(tc.function, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-tags", "lambda.norpc", "-deps", "./functions/"+tc.function)
			cmd.Dir = testenv.RepoRoot()
			cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0", "GOOS=linux")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			deps := strings.Fields(string(out))
			if !slices.Contains(deps, "github.com/stepline/stepline/functions/"+filepath.Base(tc.function)) {
				t.Fatalf("go list did not list the function itself:\n%s", out)
			}
			for _, p := range tc.absent {
				if slices.Contains(deps, p) {
					t.Errorf("the %s bootstrap links %s", tc.function, p)
				}
			}
		})
	}
}

// TestBootstrapMethodElimination pins the bootstraps the linker builds
// with only the methods they call: a reachable call of
// reflect.Value.Method or MethodByName (text/template's field
// evaluation, Liquid's struct values) makes it keep every exported
// method of every linked type, which was 2.4 MiB of the callback's
// bootstrap (10.5 MiB then, 8.0 now). Approval, recorder and step render
// Liquid, so they keep them.
func TestBootstrapMethodElimination(t *testing.T) {
	if testing.Short() {
		t.Skip("links the bootstraps")
	}
	for _, function := range []string{"callback", "ingest"} {
		t.Run(function, func(t *testing.T) {
			cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-dumpdep", "-o", os.DevNull, "./functions/"+function)
			cmd.Dir = testenv.RepoRoot()
			cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0", "GOOS=linux")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go build: %v\n%.2000s", err, out)
			}
			if !strings.Contains(string(out), " -> ") {
				t.Fatalf("the linker printed no dependencies:\n%.2000s", out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if caller, _, ok := strings.Cut(line, " <ReflectMethod> ->"); ok {
					t.Fatalf("the %s bootstrap calls methods by reflection (%s): the linker keeps every exported method", function, caller)
				}
			}
		})
	}
}
