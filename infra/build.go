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
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/infra/plan"
)

// builder adds the stack's resources; each method adds one part.
type builder struct {
	stack awscdk.Stack
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
}

// machine is one pipeline's state machine.
type machine struct {
	p    *plan.Pipeline
	id   string  // construct id part: the pipeline name without hyphens
	name string  // the state machine's physical name
	arn  *string // its ARN, formatted from the name
	sm   awsstepfunctions.StateMachine
}

// Step Functions limits a state machine's name to 80 characters.
const maxStateMachineName = 80

func (b *builder) build() {
	for _, p := range b.cfg.pipelines {
		name := physicalName(*b.stack.StackName(), p.Name, maxStateMachineName)
		b.machines[p.Name] = &machine{
			p:    p,
			id:   constructID(p.Name),
			name: name,
			arn: b.stack.FormatArn(&awscdk.ArnComponents{
				Service:      jsii.String("states"),
				Resource:     jsii.String("stateMachine"),
				ResourceName: jsii.String(name),
				ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
			}),
		}
	}
	b.addData()
	b.addShared()
	b.api = awsapigatewayv2.NewHttpApi(b.stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("Stepline: webhooks, manual runs and approval links"),
		CreateDefaultStage: jsii.Bool(false),
	})
	b.addFunctions()
	b.addStateMachines()
	b.addTriggers()
	b.addStatusRule()
	b.addRoutes()
	b.addMonitoring()
	b.addOutputs()
}

// ordered returns the machines in pipeline file order.
func (b *builder) ordered() []*machine {
	out := make([]*machine, 0, len(b.cfg.pipelines))
	for _, p := range b.cfg.pipelines {
		out = append(out, b.machines[p.Name])
	}
	return out
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

func (b *builder) addOutputs() {
	out := func(id string, value *string, desc string) {
		awscdk.NewCfnOutput(b.stack, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
	}
	out("ApiEndpoint", b.api.ApiEndpoint(), "Base URL of the HTTP API (POST /webhook, POST /pipelines/{name}/runs, /approvals/{token})")
	out("TableName", b.table.TableName(), "The run store's DynamoDB table")
	out("ArtifactBucketName", b.artifacts.BucketName(), "The artifact bucket")
	out("AlarmTopicArn", b.alarmTopic.TopicArn(), "Alarms are sent here")
	out("WebhookTokenSecretArn", b.webhookToken.SecretArn(), "Holds the bearer token POST /webhook requires")
	for _, m := range b.ordered() {
		out("StateMachine"+m.id, m.sm.StateMachineArn(), "State machine of pipeline "+m.p.Name)
	}
}
