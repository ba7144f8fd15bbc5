package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/pipeline"
)

// Delivery of events and schedules: how long EventBridge keeps trying a
// target before the event goes to the dead-letter queue.
const (
	eventRetries  = 8
	eventMaxAgeH  = 24
	scheduleRetry = 3
)

// RunStatuses are the execution statuses the recorder is sent.
var RunStatuses = []string{"RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}

// addTriggers adds each pipeline's EventBridge rules (package plan decides
// their patterns and targets), its EventBridge Scheduler schedule, and the
// rule for events that name their pipeline. The rules of a pipeline in
// stage testing are created disabled: real events do not start testing
// pipelines (events that name one go to the ingest function, whose stage
// gate decides).
// Schedules run in any stage.
func (b *builder) addTriggers() {
	for _, m := range b.ordered() {
		if t := m.p.Trigger; t != nil {
			for _, r := range t.Rules() {
				b.addRule(m, r)
			}
		}
		if m.p.Schedule != "" {
			b.addSchedule(m)
		}
	}
	b.addExplicitRule()
}

func (b *builder) addRule(m *machine, r plan.Rule) {
	var target awsevents.IRuleTarget
	switch r.Target {
	case plan.TargetStateMachine:
		target = awseventstargets.NewSfnStateMachine(m.sm, &awseventstargets.SfnStateMachineProps{
			Input: awsevents.RuleTargetInput_FromObject(map[string]any{
				"trigger": awsevents.EventField_FromPath(jsii.String("$.detail")),
			}),
			DeadLetterQueue: b.deadLetters,
			RetryAttempts:   jsii.Number(eventRetries),
			MaxEventAge:     awscdk.Duration_Hours(jsii.Number(eventMaxAgeH)),
		})
	case plan.TargetIngest:
		target = b.ingestTarget(m.p.Name)
	}
	desc := "Stepline: starts " + m.p.Name + " (" + r.Target.String() + ")"
	rule := awsevents.NewRule(b.stack, jsii.String("Pipeline"+m.id+r.ID), &awsevents.RuleProps{
		Description: jsii.String(desc),
		Enabled:     jsii.Bool(m.p.Model.Stage == pipeline.StageProduction),
		// Replaced below by the compiled pattern, which the typed
		// EventPattern cannot hold (anything-but, exists).
		EventPattern: &awsevents.EventPattern{DetailType: jsii.Strings(plan.DetailType)},
		Targets:      &[]awsevents.IRuleTarget{target},
	})
	rule.Node().DefaultChild().(awsevents.CfnRule).AddPropertyOverride(jsii.String("EventPattern"), r.Pattern)
}

// ingestTarget sends a trigger event to the ingest function as
// {"pipeline": <name>, "trigger": <detail>, "event": {"id", "source",
// "time"}}; without a name, the event names its pipeline in the detail.
func (b *builder) ingestTarget(pipeline string) awsevents.IRuleTarget {
	input := map[string]any{
		"trigger": awsevents.EventField_FromPath(jsii.String("$.detail")),
		"event": map[string]any{
			"id":     awsevents.EventField_EventId(),
			"source": awsevents.EventField_Source(),
			"time":   awsevents.EventField_Time(),
		},
	}
	if pipeline != "" {
		input["pipeline"] = pipeline
	}
	return awseventstargets.NewLambdaFunction(b.functions[FunctionIngest], &awseventstargets.LambdaFunctionProps{
		Event:           awsevents.RuleTargetInput_FromObject(input),
		DeadLetterQueue: b.deadLetters,
		RetryAttempts:   jsii.Number(eventRetries),
		MaxEventAge:     awscdk.Duration_Hours(jsii.Number(eventMaxAgeH)),
	})
}

// addExplicitRule sends the trigger events that name their pipeline
// (detail.pipeline) to the ingest function, which starts that pipeline as
// the webhook would: by name, whatever its trigger.match says.
func (b *builder) addExplicitRule() {
	rule := awsevents.NewRule(b.stack, jsii.String("NamedTriggers"), &awsevents.RuleProps{
		Description:  jsii.String("Stepline: trigger events that name their pipeline, to the ingest function"),
		EventPattern: &awsevents.EventPattern{DetailType: jsii.Strings(plan.DetailType)},
		Targets:      &[]awsevents.IRuleTarget{b.ingestTarget("")},
	})
	rule.Node().DefaultChild().(awsevents.CfnRule).AddPropertyOverride(jsii.String("EventPattern"), plan.ExplicitPattern())
}

// addSchedule starts the pipeline on its schedule.cron (in
// schedule.timezone, UTC by default) with the
// trigger a scheduled run has: source "scheduler" and the schedule's
// summary, severity, labels and team.
func (b *builder) addSchedule(m *machine) {
	s := m.p.Model.Schedule
	labels := map[string]any{}
	for k, v := range s.Labels {
		labels[k] = v
	}
	trigger := map[string]any{
		"source":      "scheduler",
		"pipeline":    m.p.Name,
		"severity":    s.Severity,
		"summary":     s.Summary,
		"team":        s.Team,
		"labels":      labels,
		"metadata":    map[string]any{"cron": s.Cron, "schedule_arn": awsscheduler.ContextAttribute_ScheduleArn()},
		"received_at": awsscheduler.ContextAttribute_ScheduledTime(),
	}
	zone, zoneName := awscdk.TimeZone_ETC_UTC(), "UTC"
	if s.TimeZone != "" {
		zone, zoneName = awscdk.TimeZone_Of(jsii.String(s.TimeZone)), s.TimeZone
	}
	awsscheduler.NewSchedule(b.stack, jsii.String("Pipeline"+m.id+"Schedule"), &awsscheduler.ScheduleProps{
		Description: jsii.String("Stepline: runs " + m.p.Name + " on " + s.Cron + " (" + zoneName + ")"),
		Schedule:    awsscheduler.ScheduleExpression_Expression(jsii.String(m.p.Schedule), zone),
		Target: awsschedulertargets.NewStepFunctionsStartExecution(m.sm, &awsschedulertargets.ScheduleTargetBaseProps{
			Input:           awsscheduler.ScheduleTargetInput_FromObject(map[string]any{"trigger": trigger}),
			DeadLetterQueue: b.deadLetters,
			RetryAttempts:   jsii.Number(scheduleRetry),
			MaxEventAge:     awscdk.Duration_Hours(jsii.Number(1)),
		}),
	})
}

// addStatusRule sends every status change of the pipelines' executions to
// the recorder, so that a run is recorded and notified even when it fails
// where the state machine cannot catch it (a timeout, an abort, a
// States.Runtime error).
func (b *builder) addStatusRule() {
	var arns []any
	for _, m := range b.ordered() {
		arns = append(arns, m.arn)
	}
	statuses := make([]any, len(RunStatuses))
	for i, s := range RunStatuses {
		statuses[i] = s
	}
	awsevents.NewRule(b.stack, jsii.String("RunStatusChanges"), &awsevents.RuleProps{
		Description: jsii.String("Stepline: execution status changes of the pipelines, to the recorder"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.states"),
			DetailType: jsii.Strings("Step Functions Execution Status Change"),
			Detail: &map[string]any{
				"stateMachineArn": arns,
				"status":          statuses,
			},
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(b.functions[FunctionRecorder], &awseventstargets.LambdaFunctionProps{
			DeadLetterQueue: b.deadLetters,
			RetryAttempts:   jsii.Number(eventRetries),
			MaxEventAge:     awscdk.Duration_Hours(jsii.Number(eventMaxAgeH)),
		})},
	})
}
