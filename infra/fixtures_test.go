package infra_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/infra"
	"github.com/stepline/stepline/infra/plan"
)

// fixturePipelines cover what the examples do not: a sub-pipeline, a
// schedule, a trigger without dedup (straight to the state machine), a
// trigger EventBridge cannot decide (through ingest), a Bedrock inference
// profile, and steps that all have a timeout.
var fixturePipelines = map[string]string{
	"parent.yaml": `name: parent
stage: production
schedule:
  cron: "*/30 9-17 * * mon-fri"
  summary: business-hours sweep
  labels: {team: platform}
steps:
  - name: approve
    executor: human
    prompt_template: "Go?"
    timeout_seconds: 600
  - name: run-child
    executor: pipeline
    executor_config: {pipeline: child-one}
    timeout_seconds: 30
  - name: summarize
    executor: bedrock
    executor_config: {model: us.anthropic.claude-3-5-haiku-20241022-v1:0}
    timeout_seconds: 40
notifications:
  escalate:
    - channel: sns
      config: {topic_arn: "arn:aws:sns:us-east-1:123456789012:oncall"}
`,
	"child.yaml": `name: child-one
stage: production
workflow: standard # a sub-pipeline: auto would make it Express
trigger:
  match:
    source: generic
    event: build.done
  dedup: {enabled: false}
steps:
  - name: hook
    executor: webhook
    executor_config:
      url: https://example.com/hook
      headers: {Authorization: "Bearer ${HOOK_TOKEN}"}
    timeout_seconds: 20
`,
	"agent.yaml": `name: agent-dig
stage: production
steps:
  - name: dig
    executor: bedrock
    executor_config: {agent: digger}
    timeout_seconds: 60
`,
	"regex.yaml": `name: regex-route
stage: production
trigger:
  match:
    summary: {regex: "disk (full|almost full)"}
    replicas: {gt: 3}
steps:
  - name: hook
    executor: webhook
    executor_config: {url: https://example.com/disk}
    timeout_seconds: 10
`,
}

// fixtureProject is the project of the fixtures: an agent whose model
// is on Bedrock and whose MCP server's header holds a secret.
var fixtureProject = map[string]string{
	"stepline.yaml": `mcp_servers:
  grafana:
    url: https://grafana-mcp.example.com/mcp
    headers: {Authorization: "Bearer ${MCP_TOKEN}"}
  files: {command: npx, args: [server-filesystem]}
`,
	"agents/digger/agent.yaml": "name: digger\nmodel: bedrock/anthropic.claude-3-haiku-20240307-v1:0\ntools: [grafana]\n",
	"agents/digger/soul.md":    "Dig.",
	"agents/local/agent.yaml":  "name: local\nmodel: anthropic/claude-haiku-4-5\ntools: [files]\n",
	"agents/local/soul.md":     "",
}

var fixtures = &lazy{props: func(t *testing.T) infra.Props {
	return infra.Props{
		PipelineDir: writeFiles(t, fixturePipelines),
		Config:      filepath.Join(writeTree(t, fixtureProject), "stepline.yaml"),
		Secrets: map[string]string{
			"HOOK_TOKEN": "ssm:arn:aws:ssm:us-east-1:123456789012:parameter/hook",
			"MCP_TOKEN":  "ssm:arn:aws:ssm:us-east-1:123456789012:parameter/mcp",
		},
		LogLevel: "debug",
		// The fixtures set the gateway default; the examples do not, and
		// TestFunctions finds no OPENAI_BASE_URL there.
		OpenAIBaseURL: fixtureOpenAIBaseURL,
	}
}}

const fixtureOpenAIBaseURL = "https://gateway.example.com/v1"

// TestFixtureOpenAIBaseURL: stepline:openaiBaseUrl reaches the step
// function, and only it, as OPENAI_BASE_URL.
func TestFixtureOpenAIBaseURL(t *testing.T) {
	s := fixtures.get(t)
	for _, name := range []string{"Step", "Approval", "Callback", "Ingest", "Recorder"} {
		_, fn := s.one(t, "AWS::Lambda::Function", name+"Function")
		vars := fn.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		got, ok := vars[infra.EnvOpenAIBaseURL]
		switch {
		case name == "Step" && got != fixtureOpenAIBaseURL:
			t.Errorf("step function: %s = %v, want %q", infra.EnvOpenAIBaseURL, got, fixtureOpenAIBaseURL)
		case name != "Step" && ok:
			t.Errorf("%s function has %s", name, infra.EnvOpenAIBaseURL)
		}
	}
}

func TestFixtureStepTimeout(t *testing.T) {
	s := fixtures.get(t)
	longest := 0
	for _, p := range s.pipelines {
		longest = max(longest, p.StepTimeout)
	}
	if longest >= plan.MaxLambdaTimeout {
		t.Fatalf("the fixtures' longest step timeout is %d; every step is bounded, want less than 900", longest)
	}
	_, step := s.one(t, "AWS::Lambda::Function", "StepFunction")
	if got := step.Properties["Timeout"]; got != float64(longest) {
		t.Errorf("step function Timeout = %v, want the longest step Task timeout %d", got, longest)
	}
	if got := step.Properties["LoggingConfig"].(map[string]any)["ApplicationLogLevel"]; got != "DEBUG" {
		t.Errorf("ApplicationLogLevel = %v, want DEBUG", got)
	}
}

// TestFixtureWorkflowTypes: each state machine has the type the compiler
// decided (compiler.WorkflowOf): the fixtures whose runs are bounded
// within Express's limit and wait for nothing are Express, the parent
// (a human step, a sub-pipeline) and the child (workflow: standard)
// Standard; every one logs all events; each Express one has an alarm on
// its timed-out executions, which reach no recorder.
func TestFixtureWorkflowTypes(t *testing.T) {
	s := fixtures.get(t)
	want := map[string]string{"parent": "STANDARD", "child-one": "STANDARD", "agent-dig": "EXPRESS", "regex-route": "EXPRESS"}
	for name, typ := range want {
		_, sm := s.one(t, "AWS::StepFunctions::StateMachine", pipelineID(name))
		if got := sm.Properties["StateMachineType"]; got != typ {
			t.Errorf("%s: StateMachineType %v, want %s", name, got, typ)
		}
		logging, _ := sm.Properties["LoggingConfiguration"].(map[string]any)
		if logging["Level"] != "ALL" || len(list(logging["Destinations"])) != 1 {
			t.Errorf("%s: logging %s", name, text(logging))
		}
		alarms := 0
		for id := range s.of("AWS::CloudWatch::Alarm") {
			if strings.HasPrefix(id, pipelineID(name)+"ExpressTimedOut") {
				alarms++
			}
		}
		if alarms != map[string]int{"STANDARD": 0, "EXPRESS": 1}[typ] {
			t.Errorf("%s: %d Express timed-out alarms", name, alarms)
		}
	}
}

func TestFixtureSubPipeline(t *testing.T) {
	s := fixtures.get(t)
	_, parent := s.one(t, "AWS::StepFunctions::StateMachine", "PipelineParent")
	subs := parent.Properties["DefinitionSubstitutions"].(map[string]any)
	child := "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:Stepline-child-one"
	if got := text(subs["PipelineChildOneArn"]); got != child {
		t.Errorf("PipelineChildOneArn = %s, want %s", got, child)
	}
	if _, ok := subs["ApprovalFunctionArn"]; !ok {
		t.Error("the parent's human step has no ApprovalFunctionArn substitution")
	}
	sts := s.statements(t, "PipelineParentRole")
	tests := []struct {
		sid       string
		actions   []string
		resources []string
	}{
		{"StartChildren", []string{"states:StartExecution"}, []string{child}},
		{"WatchChildren", []string{"states:DescribeExecution", "states:StopExecution"},
			[]string{"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:Stepline-child-one:*"}},
		{"ChildCompletionEvents", []string{"events:DescribeRule", "events:PutRule", "events:PutTargets"},
			[]string{"arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"}},
	}
	for _, tt := range tests {
		st := sid(sts, tt.sid)
		if st == nil {
			t.Errorf("no %s statement", tt.sid)
			continue
		}
		if got := texts(st.Resources); !reflect.DeepEqual(st.Actions, tt.actions) || !reflect.DeepEqual(got, tt.resources) {
			t.Errorf("%s = %v on %v, want %v on %v", tt.sid, st.Actions, got, tt.actions, tt.resources)
		}
	}
	// The child and the regex pipeline start nothing.
	for _, name := range []string{"child-one", "regex-route"} {
		if st := sid(s.statements(t, pipelineID(name)+"Role"), "StartChildren"); st != nil {
			t.Errorf("%s may start %v", name, texts(st.Resources))
		}
	}
}

func TestFixtureTriggers(t *testing.T) {
	s := fixtures.get(t)
	childID, _ := s.one(t, "AWS::StepFunctions::StateMachine", "PipelineChildOne")
	ingestID, _ := s.one(t, "AWS::Lambda::Function", "IngestFunction")

	_, direct := s.one(t, "AWS::Events::Rule", "PipelineChildOneTrigger")
	if got := text(direct.Properties["EventPattern"]); got != `{"detail":{"labels":{"event":["build.done"]},"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"],"source":["generic"]}` {
		t.Errorf("child-one pattern = %s", got)
	}
	target := list(direct.Properties["Targets"])[0].(map[string]any)
	if text(target["Arn"]) != "${"+childID+"}" || direct.Properties["State"] != "ENABLED" {
		t.Errorf("child-one rule targets %s (%v), want its state machine, enabled", text(target["Arn"]), direct.Properties["State"])
	}
	if n := len(s.of("AWS::Events::Rule")); n != 4 {
		t.Errorf("%d rules, want 4: child-one (no dedup), regex-route (ingest), named triggers and status changes", n)
	}

	_, checked := s.one(t, "AWS::Events::Rule", "PipelineRegexRouteTrigger")
	if got := text(checked.Properties["EventPattern"]); got != `{"detail":{"labels":{"replicas":[{"exists":true}]},"pipeline":["",{"exists":false}],"summary":[{"exists":true}]},"detail-type":["Stepline Trigger"]}` {
		t.Errorf("regex-route pattern = %s", got)
	}
	target = list(checked.Properties["Targets"])[0].(map[string]any)
	if text(target["Arn"]) != "${"+ingestID+".Arn}" {
		t.Errorf("regex-route rule targets %s, want the ingest function", text(target["Arn"]))
	}
}

func TestFixtureSchedule(t *testing.T) {
	s := fixtures.get(t)
	parentID, _ := s.one(t, "AWS::StepFunctions::StateMachine", "PipelineParent")
	_, sched := s.one(t, "AWS::Scheduler::Schedule", "PipelineParentSchedule")
	p := sched.Properties
	if p["ScheduleExpression"] != "cron(0,30 9-17 ? * MON-FRI *)" || p["ScheduleExpressionTimezone"] != "Etc/UTC" {
		t.Errorf("schedule = %v (%v)", p["ScheduleExpression"], p["ScheduleExpressionTimezone"])
	}
	target := p["Target"].(map[string]any)
	if text(target["Arn"]) != "${"+parentID+"}" {
		t.Errorf("schedule targets %s, want the parent state machine", text(target["Arn"]))
	}
	var input struct {
		Trigger map[string]any `json:"trigger"`
	}
	if err := json.Unmarshal([]byte(text(target["Input"])), &input); err != nil {
		t.Fatalf("schedule input %s: %v", text(target["Input"]), err)
	}
	want := map[string]any{"source": "scheduler", "pipeline": "parent", "summary": "business-hours sweep",
		"severity": "info", "received_at": "<aws.scheduler.scheduled-time>"}
	for k, v := range want {
		if input.Trigger[k] != v {
			t.Errorf("trigger.%s = %v, want %v", k, input.Trigger[k], v)
		}
	}
	if got := text(input.Trigger["labels"]); got != `{"team":"platform"}` {
		t.Errorf("trigger.labels = %s", got)
	}
}

func TestFixtureGrants(t *testing.T) {
	s := fixtures.get(t)
	sts := s.statements(t, "StepRole")
	bedrock := sid(sts, "BedrockModels")
	if bedrock == nil {
		t.Fatal("no BedrockModels statement")
	}
	want := []string{
		"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0",
		// The agent's Bedrock model, a foundation model called in the
		// stack's region.
		"arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
		"arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0",
	}
	if got := texts(bedrock.Resources); !reflect.DeepEqual(got, want) {
		t.Errorf("BedrockModels resources = %v, want %v", got, want)
	}
	params := sid(sts, "PipelineParameters")
	// The secret of the agent's MCP server header is mapped like any other.
	if params == nil || !reflect.DeepEqual(texts(params.Resources), []string{"arn:aws:ssm:us-east-1:123456789012:parameter/hook", "arn:aws:ssm:us-east-1:123456789012:parameter/mcp"}) {
		t.Errorf("PipelineParameters = %v, want the parameter ARNs as configured", params)
	}
	if sid(sts, "PipelineSecrets") != nil {
		t.Error("a Secrets Manager grant with no Secrets Manager reference")
	}
	for _, role := range []string{"StepRole", "ApprovalRole", "RecorderRole"} {
		topics := sid(s.statements(t, role), "PublishNotifications")
		if topics == nil || !reflect.DeepEqual(texts(topics.Resources), []string{"arn:aws:sns:us-east-1:123456789012:oncall"}) {
			t.Errorf("%s: PublishNotifications = %v, want the one topic the pipelines name", role, topics)
		}
	}
	if sid(s.statements(t, "CallbackRole"), "PublishNotifications") != nil {
		t.Error("callback may not publish notifications")
	}
}

func TestNewStackErrors(t *testing.T) {
	good := writeFiles(t, map[string]string{"a.yaml": fixturePipelines["child.yaml"]})
	tests := []struct {
		name  string
		props infra.Props
		want  []string
	}{
		{name: "unmapped secret", props: infra.Props{PipelineDir: good, AssetDir: assetDir},
			want: []string{`secret "HOOK_TOKEN" (used by child-one) has no mapping`}},
		{name: "bad secret reference", props: infra.Props{PipelineDir: good, AssetDir: assetDir, Secrets: map[string]string{"HOOK_TOKEN": "vault:x"}},
			want: []string{`secret "HOOK_TOKEN" (used by child-one)`, "unknown store"}},
		{name: "missing bootstraps", props: infra.Props{PipelineDir: good, AssetDir: t.TempDir(), Secrets: map[string]string{"HOOK_TOKEN": "ssm:/h"}},
			want: []string{`function "step":`, "bootstrap not found", `function "recorder":`}},
		{name: "pipeline errors", props: infra.Props{PipelineDir: writeFiles(t, map[string]string{"bad.yaml": "name: bad\nsteps: []\n"}), AssetDir: assetDir},
			want: []string{"bad.yaml:"}},
		{name: "agent with a stdio server", props: infra.Props{PipelineDir: writeFiles(t, map[string]string{"local.yaml": "name: local\nsteps:\n  - name: triage\n    executor: anthropic\n    executor_config: {agent: local}\n"}),
			Config: filepath.Join(writeTree(t, fixtureProject), "stepline.yaml"), AssetDir: assetDir},
			want: []string{`local.yaml:5:22: step "triage": agent "local" needs MCP server "files", a stdio server (command "npx") that only local runs can start`}},
		{name: "unmapped MCP header secret", props: infra.Props{PipelineDir: writeFiles(t, map[string]string{"agent.yaml": fixturePipelines["agent.yaml"]}),
			Config: filepath.Join(writeTree(t, fixtureProject), "stepline.yaml"), AssetDir: assetDir},
			want: []string{`secret "MCP_TOKEN" (used by agent-dig) has no mapping`}},
		{name: "project file missing", props: infra.Props{PipelineDir: good, Config: filepath.Join(t.TempDir(), "stepline.yaml"), AssetDir: assetDir, Secrets: map[string]string{"HOOK_TOKEN": "ssm:/h"}},
			want: []string{"load project: read project: "}},
		{name: "OpenAI base URL not a URL", props: infra.Props{PipelineDir: good, AssetDir: assetDir, Secrets: map[string]string{"HOOK_TOKEN": "ssm:/h"}, OpenAIBaseURL: "api.openai.com/v1"},
			want: []string{`OpenAI base URL "api.openai.com/v1": want an absolute http or https URL`}},
		{name: "out of range", props: infra.Props{PipelineDir: good, AssetDir: assetDir, Secrets: map[string]string{"HOOK_TOKEN": "ssm:/h"},
			LogLevel: "loud", LogRetentionDays: 3, ArtifactRetentionDays: -1},
			want: []string{`log level "LOUD"`, "log retention 3 days", "artifact retention -1 days"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := awscdk.NewApp(nil)
			stack, err := infra.NewStack(app, "Stepline", &tt.props)
			if err == nil {
				t.Fatal("NewStack succeeded, want an error")
			}
			if stack != nil || len(*app.Node().Children()) != 0 {
				t.Error("NewStack added to the app although it failed")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestConfigFromContext(t *testing.T) {
	tests := []struct {
		name    string
		context map[string]any
		want    infra.AppConfig
		wantErr string
	}{
		{name: "defaults", context: map[string]any{}, want: infra.AppConfig{StackName: infra.DefaultStackName, Props: infra.Props{Name: infra.DefaultStackName}}},
		{name: "cdk.json types", context: map[string]any{
			infra.ContextStackName:             "Staging",
			infra.ContextPipelines:             "p",
			infra.ContextConfig:                "conf/stepline.yaml",
			infra.ContextAssets:                "a",
			infra.ContextAlarmEmail:            "x@example.com",
			infra.ContextLogLevel:              "WARN",
			infra.ContextArtifactRetentionDays: 7.0,
			infra.ContextLogRetentionDays:      90.0,
			infra.ContextNag:                   true,
			infra.ContextSecrets:               map[string]any{"A": "ssm:/a"},
			infra.ContextOpenAIBaseURL:         "https://gateway.example.com/v1",
			infra.ContextStage:                 "prod",
			infra.ContextPipelineStacks:        4.0,
			infra.ContextPipelineMonitoring:    true,
		}, want: infra.AppConfig{StackName: "Staging", Nag: true, Props: infra.Props{
			Name: "Staging", Stage: "prod", PipelineStacks: 4, PipelineMonitoring: true,
			PipelineDir: "p", Config: "conf/stepline.yaml", AssetDir: "a", AlarmEmail: "x@example.com", LogLevel: "WARN",
			ArtifactRetentionDays: 7, LogRetentionDays: 90, Secrets: map[string]string{"A": "ssm:/a"},
			OpenAIBaseURL: "https://gateway.example.com/v1",
		}}},
		{name: "command-line strings", context: map[string]any{
			infra.ContextArtifactRetentionDays: "14",
			infra.ContextNag:                   "false",
			infra.ContextSecrets:               `{"B": "secretsmanager:b#k"}`,
			infra.ContextStage:                 "dev",
			infra.ContextPipelineStacks:        "-1",
			infra.ContextPipelineMonitoring:    "true",
		}, want: infra.AppConfig{StackName: infra.DefaultStackName, Props: infra.Props{
			Name: infra.DefaultStackName, Stage: "dev", PipelineStacks: -1, PipelineMonitoring: true,
			ArtifactRetentionDays: 14, Secrets: map[string]string{"B": "secretsmanager:b#k"},
		}}},
		{name: "bad values", context: map[string]any{
			infra.ContextLogRetentionDays: "a month",
			infra.ContextNag:              "maybe",
			infra.ContextSecrets:          map[string]any{"C": 3.0},
		}, wantErr: `context stepline:logRetentionDays: "a month" is not a whole number`},
		{name: "secrets not an object", context: map[string]any{infra.ContextSecrets: "[1]"}, wantErr: "want an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := awscdk.NewApp(&awscdk.AppProps{Context: &tt.context, Outdir: jsii.String(t.TempDir())})
			got, err := infra.ConfigFromContext(app.Node())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("ConfigFromContext = %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

// TestMCPCloseOnShutdown: the step function is asked to close its agents'
// MCP sessions when its container stops only when an agent of the
// pipelines uses MCP servers (listening for the stop costs every cold
// start), and no other function is.
func TestMCPCloseOnShutdown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stack *lazy
		want  bool
	}{
		{"an agent with an MCP server", fixtures, true},
		{"no agent", chatStack, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.stack.get(t)
			for _, name := range []string{"Step", "Approval", "Callback", "Ingest", "Recorder"} {
				_, fn := s.one(t, "AWS::Lambda::Function", name+"Function")
				got, ok := fn.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)[infra.EnvMCPCloseOnShutdown]
				if want := tc.want && name == "Step"; ok != want || (ok && got != "true") {
					t.Errorf("%s function: %s = %v (set %v), want set %v to true", name, infra.EnvMCPCloseOnShutdown, got, ok, want)
				}
			}
		})
	}
}
