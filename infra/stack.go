package infra

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/catalog"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/secret"
)

// Defaults of Props.
const (
	DefaultPipelineDir           = "pipelines"
	DefaultAssetDir              = "bin/lambda"
	DefaultLogLevel              = "INFO"
	DefaultArtifactRetentionDays = 30
	DefaultLogRetentionDays      = 30
)

// MetricNamespace is the CloudWatch namespace of the metrics the functions
// emit in embedded metric format (see the package documentation).
const MetricNamespace = "Stepline"

// Functions: each is built to <AssetDir>/<name>/bootstrap.
const (
	FunctionStep     = "step"     // runs steps, joins, failures, human and child outcomes
	FunctionApproval = "approval" // records a pending approval, sends the signed links
	FunctionCallback = "callback" // the approval page and decision (API)
	FunctionIngest   = "ingest"   // webhooks, manual runs, EventBridge triggers needing checks or dedup
	FunctionRecorder = "recorder" // execution status changes: run records, notifications
)

// Functions returns every function the stack deploys, in a new slice the
// caller may change.
func Functions() []string {
	return []string{FunctionStep, FunctionApproval, FunctionCallback, FunctionIngest, FunctionRecorder}
}

// Environment variables the functions read.
const (
	EnvTableName             = "TABLE_NAME"                  // every function
	EnvLogLevel              = "LOG_LEVEL"                   // every function: DEBUG, INFO, WARN or ERROR
	EnvMetricNamespace       = "METRIC_NAMESPACE"            // every function
	EnvArtifactBucket        = "ARTIFACT_BUCKET"             // step
	EnvSecretRefs            = "SECRET_REFS"                 // step, approval, recorder, callback (chat): secret.ParseRefs format
	EnvApprovalKeySecretARN  = "APPROVAL_KEY_SECRET_ARN"     // approval, callback: the link signing key
	EnvAPIBaseURL            = "API_BASE_URL"                // approval, callback: where the links point
	EnvWebhookTokenSecretARN = "WEBHOOK_TOKEN_SECRET_ARN"    // ingest: the bearer token of POST /webhook
	EnvStateMachinePrefix    = awsenv.EnvStateMachinePrefix  // ingest, recorder: state machines are <prefix>-<pipeline>
	EnvStateMachineAccount   = awsenv.EnvStateMachineAccount // ingest, recorder: the account they live in
	EnvOpenAIBaseURL         = settings.EnvOpenAIBaseURL     // step, when Props.OpenAIBaseURL is set
	EnvMCPCloseOnShutdown    = "MCP_CLOSE_ON_SHUTDOWN"       // step, "true" when an agent of the pipelines uses MCP servers
)

// Props configures a Stepline deployment. The embedded StackProps apply
// to every stack (Env, Tags, Synthesizer, TerminationProtection); NewStack
// also takes its StackName, NewStepline names its stacks itself (see Name
// and Stage).
type Props struct {
	awscdk.StackProps
	// Name prefixes the stacks and the physical names (state machines,
	// and the functions, roles and alarm topic when the pipelines have
	// stacks of their own): the id given to NewStepline or NewStack when
	// empty.
	Name string
	// Stage is the deployment's stage: "" (none), dev, staging or prod.
	// It joins Name in every name (Stepline-prod-Core,
	// Stepline-prod-<pipeline>) and chooses what is kept: dev destroys the
	// table, buckets and logs with the stack (objects deleted first);
	// staging and prod keep them, and prod (like no stage) protects the
	// table from deletion. Point-in-time recovery is on but in dev. A
	// pipeline's own stage (testing, production) keeps its meaning in
	// every deployment stage.
	Stage string
	// PipelineStacks is how many pipeline stacks the pipelines are spread
	// over, each pipeline in stack (SHA-256 of its name) mod
	// PipelineStacks; -1 keeps them in the core stack. 0 takes the
	// default: DefaultPipelineStacks with a Stage (one less with a Vpc),
	// -1 without one.
	PipelineStacks int
	// PipelineMonitoring adds each pipeline's own alarms (failed runs,
	// timed-out executions) and dashboard: three resources per pipeline.
	// Without it the deployment-wide failed-runs alarm covers them.
	PipelineMonitoring bool
	// Vpc, when set, runs the functions in its private subnets (with
	// egress: they call model APIs and AWS).
	Vpc awsec2.IVpc
	// PipelineDir holds the pipeline files. When empty: the project's
	// pipelines directory when there is a project, else
	// DefaultPipelineDir.
	PipelineDir string
	// Config is the project file (stepline.yaml) the pipelines compile in:
	// their agents, MCP servers, tool policy and executor defaults. When
	// empty, the first stepline.yaml found walking up from PipelineDir (or,
	// without one, from the working directory); none is a project without
	// agents.
	Config string
	// AssetDir holds the built functions, <AssetDir>/<function>/bootstrap;
	// DefaultAssetDir when empty.
	AssetDir string
	// Secrets maps the ${NAME} references of the pipelines to
	// "secretsmanager:<name-or-arn>[#key]" or "ssm:<parameter>[#key]". Every
	// name a pipeline uses must be mapped.
	Secrets map[string]string
	// AlarmEmail, when set, is subscribed to the alarm topic.
	AlarmEmail string
	// LogLevel of the functions: DEBUG, INFO, WARN or ERROR;
	// DefaultLogLevel when empty.
	LogLevel string
	// ArtifactRetentionDays is how long artifacts are kept;
	// DefaultArtifactRetentionDays when 0.
	ArtifactRetentionDays int
	// LogRetentionDays is how long logs are kept, one of 7, 14, 30, 60, 90,
	// 180, 365; DefaultLogRetentionDays when 0.
	LogRetentionDays int
	// OpenAIBaseURL is the base URL of gateway steps without
	// executor_config.base_url: the step function gets it as
	// OPENAI_BASE_URL. Empty: such steps fail (synth warns about none;
	// stepline validate does). Their key is the secret OPENAI_API_KEY
	// when Secrets maps it.
	OpenAIBaseURL string
}

var retentions = map[int]awslogs.RetentionDays{
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS,
	365: awslogs.RetentionDays_ONE_YEAR,
}

var logLevels = []string{"DEBUG", "INFO", "WARN", "ERROR"}

// config is Props with defaults applied and the pipelines loaded.
type config struct {
	props        Props
	names        naming
	pipelines    []*plan.Pipeline
	secrets      map[string]secret.Ref
	chat         chatConfig // the project's human_approval
	logRetention awslogs.RetentionDays
	sources      map[string]catalog.File // pipeline name → its file, as bundled for ingest
}

// newConfig applies the defaults, checks the props, loads the pipelines and
// checks that every function's bootstrap exists.
func newConfig(props *Props) (*config, error) {
	c := &config{}
	if props != nil {
		c.props = *props
	}
	p := &c.props
	var errs []error
	proj, err := loadProject(p.Config, p.PipelineDir)
	if err != nil {
		errs = append(errs, err)
	}
	if p.PipelineDir == "" {
		p.PipelineDir = DefaultPipelineDir
		if proj != nil {
			p.PipelineDir = proj.Pipelines
		}
	}
	if p.AssetDir == "" {
		p.AssetDir = DefaultAssetDir
	}
	if p.LogLevel == "" {
		p.LogLevel = DefaultLogLevel
	}
	if p.ArtifactRetentionDays == 0 {
		p.ArtifactRetentionDays = DefaultArtifactRetentionDays
	}
	if p.LogRetentionDays == 0 {
		p.LogRetentionDays = DefaultLogRetentionDays
	}
	if p.PipelineStacks == 0 {
		p.PipelineStacks = -1
		if p.Stage != "" {
			p.PipelineStacks = DefaultPipelineStacks
			if p.Vpc != nil {
				p.PipelineStacks-- // the VPC access policy takes one of IAM's 10 per role
			}
		}
	}
	if p.PipelineStacks < -1 || p.PipelineStacks > MaxPipelineStacks {
		errs = append(errs, fmt.Errorf("pipeline stacks %d: want 1 to %d, or -1 for none (the pipelines in the core stack)", p.PipelineStacks, MaxPipelineStacks))
	}
	if !slices.Contains(Stages(), p.Stage) {
		errs = append(errs, fmt.Errorf("stage %q: want one of %s, or none", p.Stage, strings.Join(Stages()[1:], ", ")))
	}
	if err := checkName(p.Name); err != nil {
		errs = append(errs, err)
	}
	c.names = newNaming(p.Name, p.Stage)
	p.LogLevel = strings.ToUpper(p.LogLevel)
	if !slices.Contains(logLevels, p.LogLevel) {
		errs = append(errs, fmt.Errorf("log level %q: want one of %s", p.LogLevel, strings.Join(logLevels, ", ")))
	}
	if p.ArtifactRetentionDays < 1 {
		errs = append(errs, fmt.Errorf("artifact retention %d days: want at least 1", p.ArtifactRetentionDays))
	}
	var ok bool
	if c.logRetention, ok = retentions[p.LogRetentionDays]; !ok {
		errs = append(errs, fmt.Errorf("log retention %d days: want one of 7, 14, 30, 60, 90, 180, 365", p.LogRetentionDays))
	}
	for _, fn := range Functions() {
		path := filepath.Join(p.AssetDir, fn, "bootstrap")
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("function %q: %s not found: build the functions first (make lambdas) or point the stepline:assets context at them", fn, path))
		}
	}
	if p.OpenAIBaseURL != "" {
		if u, err := url.Parse(p.OpenAIBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("OpenAI base URL %q: want an absolute http or https URL", p.OpenAIBaseURL))
		}
	}
	if proj != nil {
		if c.chat, err = newChatConfig(proj.ApprovalRoutes(), proj.HumanApproval, p.Secrets); err != nil {
			errs = append(errs, err)
		}
	}
	ps, err := plan.LoadIn(p.PipelineDir, proj, settings.Defaults{OpenAIBaseURL: p.OpenAIBaseURL})
	if err != nil {
		errs = append(errs, err)
	} else {
		c.pipelines = ps
		if c.secrets, err = plan.Secrets(ps, p.Secrets); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if c.sources, err = readSources(ps); err != nil {
			errs = append(errs, err)
		} else if err := unstageProject(proj, filepath.Join(p.AssetDir, FunctionIngest)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// readSources reads the pipelines' files for the bundles ingest routes
// with (package shared/catalog), each with the model plan compiled from it
// (the compile stepline validate runs), and checks that they bundle. Bundles from
// an earlier synth's layout, <AssetDir>/ingest/pipelines, are removed by
// unstageProject.
func readSources(ps []*plan.Pipeline) (map[string]catalog.File, error) {
	out := make(map[string]catalog.File, len(ps))
	files := make([]catalog.File, 0, len(ps))
	for _, p := range ps {
		b, err := os.ReadFile(p.File)
		if err != nil {
			return nil, fmt.Errorf("bundle pipelines for ingest: %w", err)
		}
		f, err := catalog.NewFile(filepath.Base(p.File), string(b), p.Model)
		if err != nil {
			return nil, fmt.Errorf("bundle pipelines for ingest: %w", err)
		}
		out[p.Name] = f
		files = append(files, f)
	}
	if _, err := catalog.Encode(files); err != nil {
		return nil, fmt.Errorf("bundle pipelines for ingest: %w", err)
	}
	return out, nil
}

// loadProject loads the project file config, or, when it is "", the
// stepline.yaml found walking up from the pipeline directory (the working
// directory when that is not set either); nil when there is none.
func loadProject(config, pipelineDir string) (*project.Project, error) {
	var p *project.Project
	var err error
	switch {
	case config != "":
		p, err = project.Load(config)
	case pipelineDir != "":
		p, err = project.ForFile(pipelineDir)
	default:
		p, err = project.ForFile(".")
	}
	if err != nil {
		return nil, fmt.Errorf("load project: %w", err)
	}
	return p, nil
}

// unstageProject removes from the ingest function's code asset what
// earlier synths staged beside its bootstrap for it to compile the
// bundles with: the pipelines/ directory of the oldest layout, the project
// file, and the project's agents and step library directories (laid out
// as in the project). Ingest reads the models compiled at synth from the
// bundles (package shared/catalog): its asset is its bootstrap.
func unstageProject(p *project.Project, to string) error {
	remove := []string{"pipelines", project.FileName}
	if p != nil {
		for _, dir := range []string{p.Agents, p.Steps} {
			rel, err := filepath.Rel(p.Dir, dir)
			if err == nil && rel != "." && rel != "bootstrap" && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
				remove = append(remove, rel)
			}
		}
	}
	for _, r := range remove {
		if err := os.RemoveAll(filepath.Join(to, r)); err != nil {
			return fmt.Errorf("clear the ingest asset: %w", err)
		}
	}
	return nil
}

// maxEnvironmentBytes is Lambda's limit on a function's environment
// variables, names and values together.
const maxEnvironmentBytes = 4096

// checkEnvironmentSize estimates the largest environments, SECRET_REFS
// with the function's fixed variables, and the approval function's with
// HUMAN_APPROVAL, and fails when Lambda would refuse one. No variable
// grows with the pipelines: the functions find the state machines by
// their names (package shared/awsenv).
func (c *config) checkEnvironmentSize() error {
	const fixedVars = 400 // TABLE_NAME, LOG_LEVEL, METRIC_NAMESPACE, STATE_MACHINE_* with their values
	size := fixedVars + len(EnvSecretRefs) + len(plan.RefsEnv(c.secrets)) + 2
	if size > maxEnvironmentBytes {
		return fmt.Errorf("%d secret mappings need about %d bytes of function environment (SECRET_REFS), over Lambda's %d: map fewer secrets",
			len(c.secrets), size, maxEnvironmentBytes)
	}
	if !c.chat.routes.Empty() {
		// The approval function: its fixed variables, the key's ARN and
		// the API's URL, SECRET_REFS with the chat secrets, HUMAN_APPROVAL.
		const approvalFixed = fixedVars + 250
		size := approvalFixed + len(EnvSecretRefs) + len(plan.RefsEnv(merge(c.secrets, c.chat.send))) + len(EnvHumanApproval) + len(c.chat.routesJSON())
		if size > maxEnvironmentBytes {
			return fmt.Errorf("human_approval and %d secret mappings need about %d bytes of the approval function's environment (SECRET_REFS, HUMAN_APPROVAL), over Lambda's %d: route fewer teams, or map fewer secrets",
				len(c.secrets), size, maxEnvironmentBytes)
		}
	}
	return nil
}

// physicalName derives a resource name from a prefix and a name within
// limit characters (awsenv.ResourceName: the functions find state
// machines by the same rule).
func physicalName(prefix, name string, limit int) string {
	return awsenv.ResourceName(prefix, name, limit)
}
