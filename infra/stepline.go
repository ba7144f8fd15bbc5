package infra

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/shared/awsenv"
)

// Stages returns the deployment stages Props.Stage accepts; "" is none.
func Stages() []string {
	return []string{"", StageDev, StageStaging, StageProd}
}

// Deployment stages.
const (
	StageDev     = "dev"     // torn down with the stack: data and logs destroyed
	StageStaging = "staging" // data and logs kept
	StageProd    = "prod"    // data and logs kept, the table protected from deletion
)

// DefaultPipelineStacks is how many pipeline stacks a staged deployment
// spreads its pipelines over when Props.PipelineStacks is 0. Each pipeline
// stack attaches one managed policy to the ingest, recorder and callback
// roles, and IAM allows 10 managed policies per role by default (20 when
// raised). With a Vpc, CDK attaches the VPC access policy to every
// function role, and the default is one less.
const DefaultPipelineStacks = 10

// MaxPipelineStacks is the most pipeline stacks Props.PipelineStacks may
// ask for: IAM's raised quota of 20 managed policies per role, less one.
const MaxPipelineStacks = 19

// Stepline is a deployment: the core stack (table, bucket, functions,
// API, alarms) and the pipeline stacks (state machines, their roles, logs,
// rules and schedules), in bucket order.
type Stepline struct {
	Core      awscdk.Stack
	Pipelines []awscdk.Stack
}

// NewStepline adds a Stepline deployment to scope, an App or a Stage (a
// stack holds no stacks): the core stack and, unless the pipelines stay
// in it (Props.PipelineStacks -1), one stack per non-empty bucket of
// pipelines. id names it when props.Name is empty. The stacks share no
// CloudFormation export or output: the pipeline stacks find the core's
// functions, roles and topic by their names, and the functions find the
// state machines by theirs and the pipeline files by the bundles each
// stack publishes (package shared/catalog), so adding a pipeline changes
// the stack of its bucket and no other. It fails, before adding anything to scope, when a
// pipeline does not compile, a secret a pipeline uses has no mapping, a
// function's bootstrap is missing, or a prop is out of range.
func NewStepline(scope constructs.Construct, id string, props *Props) (*Stepline, error) {
	p := Props{}
	if props != nil {
		p = *props
	}
	if p.Name == "" {
		p.Name = id
	}
	c, err := newConfig(&p)
	if err != nil {
		return nil, fmt.Errorf("stepline: %w", err)
	}
	if err := c.checkEnvironmentSize(); err != nil {
		return nil, fmt.Errorf("stepline: %w", err)
	}
	sp := c.props.StackProps
	sp.StackName = jsii.String(c.names.core())
	core := awscdk.NewStack(scope, jsii.String(c.names.core()), &sp)
	// Server access logs are delivered under a bucket policy, not an ACL:
	// the log bucket enforces bucket-owner object ownership.
	core.Node().SetContext(jsii.String("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"), true)
	b := &builder{stack: core, cfg: c, machines: map[string]*machine{}}
	b.groups = b.newGroups(scope)
	b.build()
	if len(b.errs) > 0 {
		return nil, fmt.Errorf("stepline: %w", errors.Join(b.errs...))
	}
	out := &Stepline{Core: core}
	for _, g := range b.groups {
		if g.stack != core {
			out.Pipelines = append(out.Pipelines, g.stack)
		}
	}
	return out, nil
}

// NewStack builds a Stepline deployment in one stack, with the pipelines
// in it (Props.PipelineStacks is taken as -1): the stack is named
// props.StackName, else id. It fits a few dozen pipelines; NewStepline
// spreads more over pipeline stacks.
func NewStack(scope constructs.Construct, id string, props *Props) (awscdk.Stack, error) {
	p := Props{}
	if props != nil {
		p = *props
	}
	p.PipelineStacks = -1
	if p.Name == "" {
		p.Name = id
		if p.StackName != nil {
			p.Name = *p.StackName
		}
	}
	s, err := NewStepline(scope, id, &p)
	if err != nil {
		return nil, err
	}
	return s.Core, nil
}

// naming derives every name of a deployment from its name and stage.
type naming struct {
	name   string // Props.Name
	stage  string // Props.Stage
	prefix string // name, or name-stage
}

func newNaming(name, stage string) naming {
	n := naming{name: name, stage: stage, prefix: name}
	if stage != "" {
		n.prefix = name + "-" + stage
	}
	return n
}

// core is the core stack's name: the name alone without a stage (the
// one-stack layout's name), else <name>-<stage>-Core.
func (n naming) core() string {
	if n.stage == "" {
		return n.name
	}
	return n.prefix + "-Core"
}

// pipelines is the name of pipeline stack i.
func (n naming) pipelines(i int) string { return fmt.Sprintf("%s-Pipelines-%02d", n.prefix, i) }

// machine is the name of a pipeline's state machine.
func (n naming) machine(pipeline string) string { return awsenv.StateMachineName(n.prefix, pipeline) }

// Lambda limits a function's name, IAM a role's, to 64 characters.
const maxFunctionName, maxRoleName = 64, 64

func (n naming) function(fn string) string { return physicalName(n.prefix, fn, maxFunctionName) }
func (n naming) role(fn string) string     { return physicalName(n.prefix, fn+"-role", maxRoleName) }
func (n naming) alarmTopic() string        { return physicalName(n.prefix, "alarms", 256) }

// namePattern is what Props.Name may hold: it begins stack names (a
// letter, then letters, digits and hyphens) and every physical name.
var namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,39}$`)

func checkName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("name %q: want a letter, then up to 39 letters, digits and hyphens (it begins every stack and resource name)", name)
	}
	return nil
}

// bucket is the pipeline stack of a pipeline among n: the first four
// bytes of the SHA-256 of its name, mod n. It depends on the name and n
// only, so adding or removing a pipeline moves no other; changing n moves
// most of them (a state machine keeps its name, so moving one means
// deploying its old stack without it before its new stack with it).
func bucket(pipeline string, n int) int {
	sum := sha256.Sum256([]byte(pipeline))
	return int(binary.BigEndian.Uint32(sum[:4]) % uint32(n))
}
