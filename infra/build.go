package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/infra/plan"
)

// builder adds the deployment's resources; each method adds one part.
type builder struct {
	stack awscdk.Stack // the core stack
	cfg   *config

	table        awsdynamodb.Table
	artifacts    awss3.Bucket
	approvalKey  awssecretsmanager.Secret
	webhookToken awssecretsmanager.Secret
	deadLetters  awssqs.Queue
	alarmTopic   awssns.Topic
	api          awsapigatewayv2.HttpApi
	functions    map[string]awslambda.Function
	roles        map[string]awsiam.Role
	machines     map[string]*machine // by pipeline name
	groups       []*group            // in stack order
	errs         []error             // what build could not add (newConfig checks it can)
}

// machine is one pipeline's state machine.
type machine struct {
	p    *plan.Pipeline
	g    *group  // the stack it is in
	id   string  // construct id part: the pipeline name without hyphens
	name string  // the state machine's physical name
	arn  *string // its ARN, formatted from the name in its group's stack
	sm   awsstepfunctions.StateMachine
}

// newGroups places the pipelines: all in the core stack, or each in the
// pipeline stack of its bucket (one stack per non-empty bucket, created in
// scope and deployed after the core).
func (b *builder) newGroups(scope constructs.Construct) []*group {
	n := b.cfg.props.PipelineStacks
	byBucket := map[int]*group{}
	var groups []*group
	for _, p := range b.cfg.pipelines {
		i := -1
		if n > 0 {
			i = bucket(p.Name, n)
		}
		g := byBucket[i]
		if g == nil {
			g = &group{b: b, index: i, stack: b.stack}
			byBucket[i] = g
		}
		m := &machine{p: p, g: g, id: constructID(p.Name), name: b.cfg.names.machine(p.Name)}
		g.machines = append(g.machines, m)
		b.machines[p.Name] = m
	}
	for i := -1; i < max(n, 0); i++ {
		g := byBucket[i]
		if g == nil {
			continue
		}
		if i >= 0 {
			sp := b.cfg.props.StackProps
			name := b.cfg.names.pipelines(i)
			sp.StackName = jsii.String(name)
			sp.Description = jsii.String("Stepline: the state machines, triggers and schedules of pipeline bucket " + name)
			g.stack = awscdk.NewStack(scope, jsii.String(name), &sp)
			// Deployed after the core: its policies attach to the core's
			// roles and its rules invoke the core's functions, by name.
			g.stack.AddStackDependency(b.stack, jsii.String("the pipelines' policies, rules and state machines name the core's roles and functions"))
		}
		for _, m := range g.machines {
			m.arn = g.stack.FormatArn(&awscdk.ArnComponents{
				Service:      jsii.String("states"),
				Resource:     jsii.String("stateMachine"),
				ResourceName: jsii.String(m.name),
				ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
			})
		}
		groups = append(groups, g)
	}
	return groups
}

// split reports whether the pipelines have stacks of their own.
func (b *builder) split() bool { return b.cfg.props.PipelineStacks > 0 }

func (b *builder) build() {
	b.addData()
	b.addShared()
	b.api = awsapigatewayv2.NewHttpApi(b.stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("Stepline: webhooks, manual runs and approval links"),
		CreateDefaultStage: jsii.Bool(false),
	})
	b.addFunctions()
	for _, g := range b.groups {
		g.link()
		g.addStateMachines()
		g.grantRuns()
		g.addTriggers()
		g.addStatusRules()
		g.addMonitoring()
		g.addOutputs()
		g.addBundle()
	}
	b.grantBundles()
	b.addExplicitRule()
	b.addRoutes()
	b.addMonitoring()
	b.addOutputs()
}

// constructID turns a pipeline name into a construct id part:
// "sre-alert-triage" → "SreAlertTriage".
func constructID(name string) string {
	out := make([]byte, 0, len(name))
	up := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '-' || c == '_' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}

func output(stack awscdk.Stack, id string, value *string, desc string) {
	awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
}

func (b *builder) addOutputs() {
	output(b.stack, "ApiEndpoint", b.api.ApiEndpoint(), "Base URL of the HTTP API (POST /webhook, POST /pipelines/{name}/runs, /approvals/{token})")
	output(b.stack, "TableName", b.table.TableName(), "The run store's DynamoDB table")
	output(b.stack, "StateMachinePrefix", jsii.String(b.cfg.names.prefix), "State machines are named <prefix>-<pipeline> (stepline serve --aws reads it)")
	output(b.stack, "ArtifactBucketName", b.artifacts.BucketName(), "The artifact bucket")
	output(b.stack, "AlarmTopicArn", b.alarmTopic.TopicArn(), "Alarms are sent here")
	output(b.stack, "WebhookTokenSecretArn", b.webhookToken.SecretArn(), "Holds the bearer token POST /webhook requires")
}
