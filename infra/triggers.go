package infra

import (
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
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

// RunStatuses returns the execution statuses the recorder is sent.
func RunStatuses() []string {
	return []string{"RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}
}

// addTriggers adds each pipeline's EventBridge rules (package plan decides
// their patterns and targets), its EventBridge Scheduler schedule, and the
// rule for events that name their pipeline. The rules of a pipeline in
// stage testing are created disabled: real events do not start testing
// pipelines (events that name one go to the ingest function, whose stage
// gate decides).
// Schedules run in any stage.
func (g *group) addTriggers() {
	for _, m := range g.machines {
		if t := m.p.Trigger; t != nil {
			for _, r := range t.Rules() {
				g.addRule(m, r)
			}
		}
		if m.p.Schedule != "" {
			g.addSchedule(m)
		}
	}
}

func (g *group) addRule(m *machine, r plan.Rule) {
	var target awsevents.IRuleTarget
	switch r.Target {
	case plan.TargetStateMachine:
		target = awseventstargets.NewSfnStateMachine(m.sm, &awseventstargets.SfnStateMachineProps{
			Input: awsevents.RuleTargetInput_FromObject(map[string]any{
				"trigger": awsevents.EventField_FromPath(jsii.String("$.detail")),
			}),
			DeadLetterQueue: g.deadLetters,
			RetryAttempts:   jsii.Number(eventRetries),
			MaxEventAge:     awscdk.Duration_Hours(jsii.Number(eventMaxAgeH)),
		})
	case plan.TargetIngest:
		target = ingestTarget(g.ingest, g.deadLetters, m.p.Name)
	}
	desc := "Stepline: starts " + m.p.Name + " (" + r.Target.String() + ")"
	rule := awsevents.NewRule(g.stack, jsii.String("Pipeline"+m.id+r.ID), &awsevents.RuleProps{
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
func ingestTarget(ingest awslambda.IFunction, deadLetters awssqs.IQueue, pipeline string) awsevents.IRuleTarget {
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
	return awseventstargets.NewLambdaFunction(ingest, &awseventstargets.LambdaFunctionProps{
		Event:           awsevents.RuleTargetInput_FromObject(input),
		DeadLetterQueue: deadLetters,
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
		Targets:      &[]awsevents.IRuleTarget{ingestTarget(b.functions[FunctionIngest], b.deadLetters, "")},
	})
	rule.Node().DefaultChild().(awsevents.CfnRule).AddPropertyOverride(jsii.String("EventPattern"), plan.ExplicitPattern())
}

// addSchedule starts the pipeline on its schedule.cron (in
// schedule.timezone, UTC by default) with the
// trigger a scheduled run has: source "scheduler" and the schedule's
// summary, severity, labels and team.
func (g *group) addSchedule(m *machine) {
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
	awsscheduler.NewSchedule(g.stack, jsii.String("Pipeline"+m.id+"Schedule"), &awsscheduler.ScheduleProps{
		Description: jsii.String("Stepline: runs " + m.p.Name + " on " + s.Cron + " (" + zoneName + ")"),
		Schedule:    awsscheduler.ScheduleExpression_Expression(jsii.String(m.p.Schedule), zone),
		Target: awsschedulertargets.NewStepFunctionsStartExecution(m.sm, &awsschedulertargets.ScheduleTargetBaseProps{
			Input:           awsscheduler.ScheduleTargetInput_FromObject(map[string]any{"trigger": trigger}),
			DeadLetterQueue: g.deadLetters,
			RetryAttempts:   jsii.Number(scheduleRetry),
			MaxEventAge:     awscdk.Duration_Hours(jsii.Number(1)),
		}),
	})
}

// maxStatusPattern is how long a status rule's event pattern may grow:
// EventBridge's 2,048 characters, with 20% headroom.
const maxStatusPattern = 2048 * 8 / 10

// longestARNPrefix is the longest a state machine ARN's part before the
// name can be ("arn:aws-us-gov:states:ap-southeast-1:123456789012:stateMachine:"
// and a little more).
const longestARNPrefix = 70

// addStatusRules sends every status change of the group's executions to
// the recorder, so that a run is recorded and notified even when it fails
// where the state machine cannot catch it (a timeout, an abort, a
// States.Runtime error). A rule names its state machines exactly; the
// group's machines are spread over as many rules as keep each pattern
// within maxStatusPattern (RunStatusChanges, RunStatusChanges2, …).
func (g *group) addStatusRules() {
	statuses := make([]any, len(RunStatuses()))
	for i, s := range RunStatuses() {
		statuses[i] = s
	}
	var chunks [][]any
	size := maxStatusPattern
	for _, m := range g.machines {
		n := longestARNPrefix + len(m.name) + 3
		if size+n > maxStatusPattern-300 { // 300: the rest of the pattern
			chunks = append(chunks, nil)
			size = 0
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], m.arn)
		size += n
	}
	for i, arns := range chunks {
		id := "RunStatusChanges"
		if i > 0 {
			id += strconv.Itoa(i + 1)
		}
		awsevents.NewRule(g.stack, jsii.String(id), &awsevents.RuleProps{
			Description: jsii.String("Stepline: execution status changes of the pipelines, to the recorder"),
			EventPattern: &awsevents.EventPattern{
				Source:     jsii.Strings("aws.states"),
				DetailType: jsii.Strings("Step Functions Execution Status Change"),
				Detail: &map[string]any{
					"stateMachineArn": arns,
					"status":          statuses,
				},
			},
			Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(g.recorder, &awseventstargets.LambdaFunctionProps{
				DeadLetterQueue: g.deadLetters,
				RetryAttempts:   jsii.Number(eventRetries),
				MaxEventAge:     awscdk.Duration_Hours(jsii.Number(eventMaxAgeH)),
			})},
		})
	}
}
