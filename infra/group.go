package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// group is the pipelines of one stack, and what their resources reference
// in the core: the core's own constructs when the group is in the core
// stack, else references by name formatted in the group's stack (no
// export, no output, no Fn::ImportValue).
type group struct {
	b        *builder
	stack    awscdk.Stack
	index    int        // the bucket; -1 in the core stack
	machines []*machine // in pipeline file order

	stepARN, approvalARN *string
	ingest, recorder     awslambda.IFunction
	alarmTopic           awssns.ITopic
	deadLetters          awssqs.IQueue
	policies             map[string]awsiam.ManagedPolicy // by function: the grants of a pipeline stack
}

// inCore reports whether the group's resources are in the core stack.
func (g *group) inCore() bool { return g.index < 0 }

// link sets the group's references to the core.
func (g *group) link() {
	b := g.b
	if g.inCore() {
		g.stepARN = b.functions[FunctionStep].FunctionArn()
		g.approvalARN = b.functions[FunctionApproval].FunctionArn()
		g.ingest = b.functions[FunctionIngest]
		g.recorder = b.functions[FunctionRecorder]
		g.alarmTopic = b.alarmTopic
		g.deadLetters = b.deadLetters
		return
	}
	fnARN := func(fn string) *string {
		return g.stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("lambda"),
			Resource:     jsii.String("function"),
			ResourceName: jsii.String(b.cfg.names.function(fn)),
			ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})
	}
	imported := func(fn string) awslambda.IFunction {
		return awslambda.Function_FromFunctionAttributes(g.stack, jsii.String(constructID(fn)+"Function"), &awslambda.FunctionAttributes{
			FunctionArn:     fnARN(fn),
			SameEnvironment: jsii.Bool(true), // rules here may be granted to invoke it
		})
	}
	g.stepARN = fnARN(FunctionStep)
	g.approvalARN = fnARN(FunctionApproval)
	g.ingest = imported(FunctionIngest)
	g.recorder = imported(FunctionRecorder)
	g.alarmTopic = awssns.Topic_FromTopicArn(g.stack, jsii.String("AlarmTopic"), g.stack.FormatArn(&awscdk.ArnComponents{
		Service:  jsii.String("sns"),
		Resource: jsii.String(b.cfg.names.alarmTopic()),
	}))
	// Its own dead-letter queue: a queue policy for this stack's rules
	// would otherwise be a change to the core's.
	q := awssqs.NewQueue(g.stack, jsii.String("DeadLetters"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	suppress(q, nagRule{id: "AwsSolutions-SQS3", reason: "This queue is itself the dead-letter queue of this stack's EventBridge targets and schedules; an alarm fires on its first message."})
	g.deadLetters = q
}

// grant allows a core function what the group's pipelines need of it: on
// the function's role in the core stack, or in a pipeline stack through
// one managed policy per function attached to the core's role by its name,
// so that adding a pipeline changes its own stack's policy only.
func (g *group) grant(fn string, st awsiam.PolicyStatement, rules ...nagRule) {
	b := g.b
	if g.inCore() {
		b.roles[fn].AddToPrincipalPolicy(st)
		suppress(b.roles[fn], rules...)
		return
	}
	if g.policies == nil {
		g.policies = map[string]awsiam.ManagedPolicy{}
	}
	pol := g.policies[fn]
	if pol == nil {
		id := constructID(fn)
		role := awsiam.Role_FromRoleName(g.stack, jsii.String(id+"Role"), jsii.String(b.cfg.names.role(fn)), nil)
		pol = awsiam.NewManagedPolicy(g.stack, jsii.String(id+"Grants"), &awsiam.ManagedPolicyProps{
			Description: jsii.String("Stepline: what the " + fn + " function may do with the pipelines of " + b.cfg.names.pipelines(g.index)),
			Roles:       &[]awsiam.IRole{role},
		})
		g.policies[fn] = pol
	}
	pol.AddStatements(st)
	if len(rules) > 0 {
		suppress(pol, rules...)
	}
}

// grantRuns lets the core functions act on exactly the group's state
// machines: ingest starts them, the recorder reads their definitions (its
// only Step Functions call: the status-change event carries the rest),
// the callback function decides the approvals of those with human steps.
func (g *group) grantRuns() {
	var approvals, arns []*string
	for _, m := range g.machines {
		if m.p.Approvals() {
			approvals = append(approvals, m.arn)
		}
		arns = append(arns, m.arn)
	}
	if len(approvals) > 0 {
		g.grant(FunctionCallback, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("DecideApprovals"),
			Actions:   jsii.Strings("states:SendTaskSuccess", "states:SendTaskFailure"),
			Resources: &approvals,
		}))
	}
	g.grant(FunctionIngest, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("StartRuns"),
		Actions:   jsii.Strings("states:StartExecution"),
		Resources: &arns,
	}))
	g.grant(FunctionRecorder, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadPipelines"),
		Actions:   jsii.Strings("states:DescribeStateMachine"),
		Resources: &arns,
	}))
}

func (g *group) addOutputs() {
	for _, m := range g.machines {
		output(g.stack, "StateMachine"+m.id, m.sm.StateMachineArn(), "State machine of pipeline "+m.p.Name)
	}
}
