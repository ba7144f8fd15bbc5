package infra

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/shared/metrics"
	"github.com/stepline/stepline/shared/task"
)

// Metrics the functions emit in embedded metric format, in MetricNamespace.
const (
	// MetricRuns counts finished runs (Count), dimensions Pipeline and
	// Status (completed, stopped, escalated, aborted, failed): the recorder
	// emits one when a run ends.
	MetricRuns = "Runs"
	// MetricStepConfidence is a step's effective confidence (None, 0..1),
	// dimensions Pipeline and Step: the step function, per recorded step.
	MetricStepConfidence = "StepConfidence"
	// MetricInputTokens and MetricOutputTokens count model tokens (Count),
	// dimension Pipeline: the step function, per recorded step.
	MetricInputTokens  = "InputTokens"
	MetricOutputTokens = "OutputTokens"
	// MetricCost is a step's model cost in US dollars (None), dimension
	// Pipeline: the step function, per recorded step.
	MetricCost = "CostUSD"
	// MetricTaskErrors counts the step function's failed Tasks (Count),
	// dimension Pipeline, and Function (step) for the total: every error
	// it returns except a step's answer that ends the run, which it
	// returns as a Stepline.RunEnded error for the state machine to catch
	// (see package compiler) and which Lambda's own Errors metric counts.
	MetricTaskErrors = metrics.TaskErrors
)

// Dimension names of the metrics.
const (
	DimPipeline = "Pipeline"
	DimStatus   = "Status"
	DimStep     = "Step"
	DimFunction = "Function"
)

// runStatuses are the run statuses the dashboard shows.
var runStatuses = []string{task.StatusCompleted, task.StatusStopped, task.StatusEscalated, task.StatusAborted, task.StatusFailed}

// stepErrorThreshold is how many failed step function Tasks in five
// minutes raise its alarm: executor failures surface as Task errors that
// the state machine retries, so one alone is not an incident.
const stepErrorThreshold = 5

var fiveMinutes = awscdk.Duration_Minutes(jsii.Number(5))

func metric(name, stat string, dims map[string]string) awscloudwatch.Metric {
	d := map[string]*string{}
	for k, v := range dims {
		d[k] = jsii.String(v)
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(MetricNamespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &d,
		Statistic:     jsii.String(stat),
		Period:        fiveMinutes,
	})
}

// alarm adds an alarm on m to stack, sent to topic.
func alarm(stack awscdk.Stack, topic awssns.ITopic, id string, m awscloudwatch.IMetric, threshold float64, desc string) {
	a := awscloudwatch.NewAlarm(stack, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:             m,
		AlarmDescription:   jsii.String(desc),
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	a.AddAlarmAction(awscloudwatchactions.NewSnsAction(topic))
}

// addMonitoring adds the core's alarms, all sent to the alarm topic:
// failed runs of any pipeline (the recorder's Runs metric by Status
// alone), function errors and undelivered events. The step function's
// alarm reads Stepline's TaskErrors, not Lambda's Errors: a step that
// stops, escalates or aborts the run answers with an error the state
// machine catches (Stepline.RunEnded), which Lambda counts as a function
// error although nothing failed. A crash or timeout of the function,
// which TaskErrors cannot see, fails its Task and ends in a failed run
// once retries are spent: the RunsFailed alarm.
func (b *builder) addMonitoring() {
	alarm(b.stack, b.alarmTopic, "RunsFailed", metric(MetricRuns, "Sum", map[string]string{DimStatus: task.StatusFailed}), 1,
		"Stepline: a run failed (an executor failure, or an error the state machine could not catch); the Runs metric by Pipeline says which")
	for _, name := range Functions() {
		if name == FunctionStep {
			alarm(b.stack, b.alarmTopic, constructID(name)+"Errors",
				metric(MetricTaskErrors, "Sum", map[string]string{DimFunction: metrics.FunctionStep}), stepErrorThreshold,
				fmt.Sprintf("Stepline: %d or more %s function Tasks failed in 5 minutes (executor or configuration errors; runs that a step ended are not counted); the TaskErrors metric by Pipeline says which", stepErrorThreshold, name))
			continue
		}
		alarm(b.stack, b.alarmTopic, constructID(name)+"Errors",
			b.functions[name].MetricErrors(&awscloudwatch.MetricOptions{Period: fiveMinutes, Statistic: jsii.String("Sum")}), 1,
			fmt.Sprintf("Stepline: the %s function returned errors", name))
	}
	alarm(b.stack, b.alarmTopic, "UndeliveredEvents", b.deadLetters.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
		Period: fiveMinutes, Statistic: jsii.String("Maximum"),
	}), 1, "Stepline: a trigger, schedule or status change could not be delivered (see the DeadLetters queue)")
}

// addMonitoring adds a pipeline stack's alarm on its dead-letter queue
// and, with Props.PipelineMonitoring, each pipeline's alarms (failed runs,
// timed-out executions) and dashboard.
func (g *group) addMonitoring() {
	if !g.inCore() {
		alarm(g.stack, g.alarmTopic, "UndeliveredEvents", g.deadLetters.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: fiveMinutes, Statistic: jsii.String("Maximum"),
		}), 1, "Stepline: a trigger, schedule or status change of this stack's pipelines could not be delivered (see its DeadLetters queue)")
	}
	for _, m := range g.machines {
		if machineType(m) != awsstepfunctions.StateMachineType_EXPRESS {
			continue
		}
		// An Express workflow's end reaches no recorder: a run that times
		// out (Express's 5 minutes) stays running in the table, and only
		// the state machine's own metric tells.
		alarm(g.stack, g.alarmTopic, "Pipeline"+m.id+"ExpressTimedOut", m.sm.MetricTimedOut(&awscloudwatch.MetricOptions{Period: fiveMinutes, Statistic: jsii.String("Sum")}), 1,
			fmt.Sprintf("Stepline: an execution of %s (an Express workflow) timed out; its run record stays running", m.p.Name))
	}
	if !g.b.cfg.props.PipelineMonitoring {
		return
	}
	for _, m := range g.machines {
		alarm(g.stack, g.alarmTopic, "Pipeline"+m.id+"RunsFailed",
			metric(MetricRuns, "Sum", map[string]string{DimPipeline: m.p.Name, DimStatus: task.StatusFailed}), 1,
			fmt.Sprintf("Stepline: a run of %s failed (an executor failure, or an error the state machine could not catch)", m.p.Name))
		alarm(g.stack, g.alarmTopic, "Pipeline"+m.id+"ExecutionsTimedOut", m.sm.MetricTimedOut(&awscloudwatch.MetricOptions{Period: fiveMinutes, Statistic: jsii.String("Sum")}), 1,
			fmt.Sprintf("Stepline: an execution of %s timed out", m.p.Name))
		g.addDashboard(m)
	}
}

// addDashboard adds a pipeline's dashboard: runs by status, executions,
// step confidence, tokens and cost.
func (g *group) addDashboard(m *machine) {
	pipelineDim := map[string]string{DimPipeline: m.p.Name}
	var runs []awscloudwatch.IMetric
	for _, s := range runStatuses {
		runs = append(runs, metric(MetricRuns, "Sum", map[string]string{DimPipeline: m.p.Name, DimStatus: s}).With(&awscloudwatch.MetricOptions{Label: jsii.String(s)}))
	}
	opts := &awscloudwatch.MetricOptions{Period: fiveMinutes, Statistic: jsii.String("Sum")}
	executions := []awscloudwatch.IMetric{
		m.sm.MetricStarted(opts), m.sm.MetricSucceeded(opts), m.sm.MetricFailed(opts),
		m.sm.MetricTimedOut(opts), m.sm.MetricAborted(opts),
	}
	var confidence []awscloudwatch.IMetric
	for _, step := range m.p.Steps {
		confidence = append(confidence, metric(MetricStepConfidence, "Average",
			map[string]string{DimPipeline: m.p.Name, DimStep: step}).With(&awscloudwatch.MetricOptions{Label: jsii.String(step)}))
	}
	graph := func(title string, left []awscloudwatch.IMetric, stacked bool) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title:   jsii.String(title),
			Left:    &left,
			Stacked: jsii.Bool(stacked),
			Width:   jsii.Number(12),
			Height:  jsii.Number(6),
		})
	}
	awscloudwatch.NewDashboard(g.stack, jsii.String("Pipeline"+m.id+"Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String(physicalName(g.b.cfg.names.prefix, m.p.Name, 255)),
		Widgets: &[]*[]awscloudwatch.IWidget{
			{graph("Runs by status", runs, true), graph("Executions", executions, false)},
			{graph("Step confidence (average)", confidence, false), graph("Tokens", []awscloudwatch.IMetric{
				metric(MetricInputTokens, "Sum", pipelineDim).With(&awscloudwatch.MetricOptions{Label: jsii.String("input")}),
				metric(MetricOutputTokens, "Sum", pipelineDim).With(&awscloudwatch.MetricOptions{Label: jsii.String("output")}),
			}, true)},
			{graph("Cost (USD)", []awscloudwatch.IMetric{metric(MetricCost, "Sum", pipelineDim)}, false)},
		},
	})
}
