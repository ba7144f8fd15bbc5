package infra_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/stepline/stepline/infra"
	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/project"
)

// assetDir holds a dummy bootstrap per function: synthesis only packages
// the directories, it never runs them. Created once by TestMain, under
// tmpRoot, which also holds what the shared stacks read and write (they
// outlive the test that first synthesizes them).
var assetDir, tmpRoot string

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "stepline-infra-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tmpRoot = root
	dir := filepath.Join(root, "assets")
	for _, fn := range infra.Functions() {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	assetDir = dir
	code := m.Run()
	jsii.Close()
	os.RemoveAll(root)
	os.Exit(code)
}

// featureFlags returns cdk.json's context without the stepline:* keys: the
// feature flags the CLI synthesizes with.
func featureFlags(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("cdk.json: %v", err)
	}
	out := map[string]any{}
	for k, v := range doc.Context {
		if !strings.HasPrefix(k, "stepline:") {
			out[k] = v
		}
	}
	return out
}

// synthesized is one synthesized stack with the cdk-nag checks applied.
type synthesized struct {
	stack     awscdk.Stack
	template  assertions.Template
	resources map[string]resource // by logical id
	pipelines []*plan.Pipeline
}

type resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
	Metadata   map[string]any `json:"Metadata"`
}

// synth builds and synthesizes a stack over props with the AwsSolutions
// checks applied to the app.
func synth(t *testing.T, props infra.Props) (*synthesized, error) {
	t.Helper()
	ctx := featureFlags(t)
	out, err := os.MkdirTemp(tmpRoot, "cdk.out-")
	if err != nil {
		return nil, err
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	props.AssetDir = assetDir
	stack, err := infra.NewStack(app, "Stepline", &props)
	if err != nil {
		return nil, err
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Reports: jsii.Bool(false), Verbose: jsii.Bool(true)}), nil)
	s := &synthesized{stack: stack}
	if s.template, err = templateOf(stack, out); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(s.template.ToJSON())
	if err != nil {
		return nil, err
	}
	var doc struct {
		Resources map[string]resource `json:"Resources"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	s.resources = doc.Resources
	var proj *project.Project
	if props.Config != "" {
		if proj, err = project.Load(props.Config); err != nil {
			return nil, err
		}
	} else if proj, err = project.ForFile(props.PipelineDir); err != nil {
		return nil, err
	}
	if s.pipelines, err = plan.LoadIn(props.PipelineDir, proj, settings.Defaults{}); err != nil {
		return nil, err
	}
	return s, nil
}

// templateOf synthesizes the stack. With cdk.json's feature flags an error
// annotation (a cdk-nag finding) fails the synthesis: the panic becomes an
// error that carries the validation report.
func templateOf(stack awscdk.Stack, outdir string) (tmpl assertions.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			report, _ := os.ReadFile(filepath.Join(outdir, "validation-report.json"))
			err = fmt.Errorf("%v\n%s", r, report)
		}
	}()
	return assertions.Template_FromStack(stack, nil), nil
}

// lazy synthesizes a stack once for every test that needs it.
type lazy struct {
	once  sync.Once
	props func(t *testing.T) infra.Props
	s     *synthesized
	err   error
}

func (l *lazy) get(t *testing.T) *synthesized {
	t.Helper()
	l.once.Do(func() { l.s, l.err = synth(t, l.props(t)) })
	if l.err != nil {
		t.Fatalf("synth: %v", l.err)
	}
	return l.s
}

// exampleSecrets maps every secret the example pipelines use (and the
// MCP servers of the repository's stepline.yaml).
var exampleSecrets = map[string]string{
	"GRAFANA_MCP_TOKEN":   "secretsmanager:stepline/grafana-mcp-token",
	"ATLASSIAN_MCP_TOKEN": "secretsmanager:stepline/atlassian-mcp-token",
	"OPENAI_API_KEY":      "secretsmanager:stepline/openai#api_key",
	"ANTHROPIC_API_KEY":   "secretsmanager:stepline/anthropic#api_key",
	"OPENROUTER_API_KEY":  "secretsmanager:arn:aws:secretsmanager:eu-west-1:123456789012:secret:openrouter-AbCdEf",
	"AUTOMATION_TOKEN":    "secretsmanager:stepline/automation-token",
	"WAREHOUSE_TOKEN":     "secretsmanager:stepline/warehouse-token",
	"OPS_HOOK_KEY":        "ssm:/stepline/ops-hook-key",
	"SLACK_WEBHOOK_URL":   "ssm:stepline-slack-webhook-url",
	"NOT_USED":            "secretsmanager:stepline/not-used",
}

// examples is the stack of the repository's pipelines/.
var examples = &lazy{props: func(t *testing.T) infra.Props {
	return infra.Props{PipelineDir: "../pipelines", Secrets: exampleSecrets, AlarmEmail: "oncall@example.com", PipelineMonitoring: true}
}}

// of returns the resources of one type, by logical id.
func (s *synthesized) of(typ string) map[string]resource {
	out := map[string]resource{}
	for id, r := range s.resources {
		if r.Type == typ {
			out[id] = r
		}
	}
	return out
}

// one returns the single resource of a type whose logical id starts with
// prefix.
func (s *synthesized) one(t *testing.T, typ, prefix string) (string, resource) {
	t.Helper()
	var ids []string
	for id := range s.of(typ) {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%s with id prefix %q: found %v, want one", typ, prefix, ids)
	}
	return ids[0], s.resources[ids[0]]
}

// statement is an IAM policy statement with Action and Resource as lists.
type statement struct {
	Sid       string
	Effect    string
	Actions   []string
	Resources []any
}

// statements returns the statements of the policies attached to the role
// whose logical id starts with rolePrefix.
func (s *synthesized) statements(t *testing.T, rolePrefix string) []statement {
	t.Helper()
	roleID, _ := s.one(t, "AWS::IAM::Role", rolePrefix)
	var out []statement
	for _, p := range s.of("AWS::IAM::Policy") {
		attached := false
		for _, r := range list(p.Properties["Roles"]) {
			if ref, ok := r.(map[string]any); ok && ref["Ref"] == roleID {
				attached = true
			}
		}
		if !attached {
			continue
		}
		doc := p.Properties["PolicyDocument"].(map[string]any)
		for _, raw := range list(doc["Statement"]) {
			st := raw.(map[string]any)
			out = append(out, statement{
				Sid:       str(st["Sid"]),
				Effect:    str(st["Effect"]),
				Actions:   strs(list(st["Action"])),
				Resources: list(st["Resource"]),
			})
		}
	}
	return out
}

// sid returns the statement with the given Sid, or nil.
func sid(sts []statement, id string) *statement {
	for i := range sts {
		if sts[i].Sid == id {
			return &sts[i]
		}
	}
	return nil
}

// list returns v as a list: a single value becomes a list of one.
func list(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	}
	return []any{v}
}

func str(v any) string { s, _ := v.(string); return s }

func strs(vs []any) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, str(v))
	}
	sort.Strings(out)
	return out
}

// text renders an intrinsic (Fn::Join, Ref, Fn::GetAtt) as readable text:
// "arn:${AWS::Partition}:states:…" or "${Logical.Arn}".
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if ref, ok := v["Ref"]; ok {
			return "${" + str(ref) + "}"
		}
		if ga, ok := v["Fn::GetAtt"]; ok {
			parts := list(ga)
			return "${" + str(parts[0]) + "." + str(parts[1]) + "}"
		}
		if j, ok := v["Fn::Join"]; ok {
			parts := list(j)
			var b strings.Builder
			for i, e := range list(parts[1]) {
				if i > 0 {
					b.WriteString(str(parts[0]))
				}
				b.WriteString(text(e))
			}
			return b.String()
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func texts(vs []any) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, text(v))
	}
	sort.Strings(out)
	return out
}

// assert runs a CDK assertion, which panics when it fails, and reports
// the failure as a test error.
func assert(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	fn()
}

// writeFiles writes name → content into a new directory under tmpRoot.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp(tmpRoot, "files-")
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeTree writes path → content files, in subdirectories as named, into
// a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp(tmpRoot, "tree-")
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
