package infra

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

// addStateMachines adds one state machine per pipeline, from its compiled
// definition: the function and sub-pipeline placeholders are definition
// substitutions, and the role may invoke exactly the functions the
// definition calls and start exactly the sub-pipelines it names. Its type
// is the compiler's (machineType): Express or Standard, each logging
// every event to its log group (an Express workflow's only execution
// history), without execution data.
func (g *group) addStateMachines() {
	b := g.b
	for _, m := range g.machines {
		logGroup := awslogs.NewLogGroup(g.stack, jsii.String("Pipeline"+m.id+"Logs"), &awslogs.LogGroupProps{
			// Step Functions' recommended prefix keeps the log resource
			// policy small.
			LogGroupName:  jsii.String("/aws/vendedlogs/states/" + m.name),
			Retention:     b.cfg.logRetention,
			RemovalPolicy: b.cfg.removal(),
		})
		subs := map[string]*string{}
		var invoke []*string
		for _, ph := range m.p.Resources {
			key := strings.TrimSuffix(strings.TrimPrefix(ph, "${"), "}")
			switch ph {
			case task.StepFunctionPlaceholder:
				subs[key] = g.stepARN
				invoke = append(invoke, subs[key])
			case task.ApprovalFunctionPlaceholder:
				subs[key] = g.approvalARN
				invoke = append(invoke, subs[key])
			default:
				// Formatted here: the child may be in another stack.
				subs[key] = g.machineARN(b.machines[m.p.Children[ph]])
			}
		}
		sm := awsstepfunctions.NewStateMachine(g.stack, jsii.String("Pipeline"+m.id), &awsstepfunctions.StateMachineProps{
			StateMachineName:        jsii.String(m.name),
			StateMachineType:        machineType(m),
			DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(m.p.Definition)),
			DefinitionSubstitutions: &subs,
			Comment:                 jsii.String("Stepline pipeline " + m.p.Name),
			TracingEnabled:          jsii.Bool(true),
			Logs: &awsstepfunctions.LogOptions{
				Destination:          logGroup,
				Level:                awsstepfunctions.LogLevel_ALL,
				IncludeExecutionData: jsii.Bool(false),
			},
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		m.sm = sm
		if len(invoke) > 0 {
			sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("InvokeFunctions"),
				Actions:   jsii.Strings("lambda:InvokeFunction"),
				Resources: &invoke,
			}))
		}
		g.grantChildren(m)
		rules := []nagRule{{"AwsSolutions-IAM5",
			"Step Functions log delivery (logs:CreateLogDelivery and related) and X-Ray tracing (xray:PutTraceSegments and related) have no resource-level permissions: they need Resource *.",
			[]string{"Resource::*"}}}
		if len(m.p.Children) > 0 {
			rules = append(rules, nagRule{"AwsSolutions-IAM5",
				"A sub-pipeline step (startExecution.sync:2) describes and stops the child execution it started; execution ARNs end in a run id unknown until the run starts, so the grant names the child state machine and leaves the run open.",
				[]string{`/^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:.+:\*$/g`}})
		}
		suppress(sm, rules...)
		lintExempt(sm, redundantDependsOn)
	}
}

// machineType is the workflow type of m's state machine: what the
// compiler decided for its pipeline (compiler.WorkflowOf, the rule
// validate and compile follow), Express only when the pipeline can run as
// one.
func machineType(m *machine) awsstepfunctions.StateMachineType {
	if compiler.WorkflowOf(m.p.Model).Type == pipeline.WorkflowExpress {
		return awsstepfunctions.StateMachineType_EXPRESS
	}
	return awsstepfunctions.StateMachineType_STANDARD
}

// grantChildren lets a pipeline start its sub-pipelines and wait for them
// (the permissions startExecution.sync:2 needs: start, describe and stop
// the child's executions, and the managed rule that reports their end).
func (g *group) grantChildren(m *machine) {
	if len(m.p.Children) == 0 {
		return
	}
	var starts, executions []*string
	for _, ph := range m.p.Resources {
		name, ok := m.p.Children[ph]
		if !ok {
			continue
		}
		child := g.b.machines[name]
		starts = append(starts, g.machineARN(child))
		executions = append(executions, executionARN(g.stack, child.name))
	}
	m.sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("StartChildren"),
		Actions:   jsii.Strings("states:StartExecution"),
		Resources: &starts,
	}))
	m.sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WatchChildren"),
		Actions:   jsii.Strings("states:DescribeExecution", "states:StopExecution"),
		Resources: &executions,
	}))
	m.sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:     jsii.String("ChildCompletionEvents"),
		Actions: jsii.Strings("events:PutTargets", "events:PutRule", "events:DescribeRule"),
		Resources: jsii.Strings(*g.stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("events"),
			Resource:     jsii.String("rule"),
			ResourceName: jsii.String("StepFunctionsGetEventsForStepFunctionsExecutionRule"),
			ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		})),
	}))
}

// machineARN is the ARN of m's state machine formatted in the group's
// stack, whichever stack m is in.
func (g *group) machineARN(m *machine) *string {
	if m.g == g {
		return m.arn
	}
	return g.stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("states"),
		Resource:     jsii.String("stateMachine"),
		ResourceName: jsii.String(m.name),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

// executionARN is the ARN pattern of a state machine's executions,
// formatted in stack.
func executionARN(stack awscdk.Stack, machineName string) *string {
	return stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("states"),
		Resource:     jsii.String("execution"),
		ResourceName: jsii.String(machineName + ":*"),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}
