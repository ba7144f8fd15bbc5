package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/shared/task"
)

// StateMachines is the Step Functions call the recorder reads pipelines
// with (satisfied by *sfn.Client).
type StateMachines interface {
	DescribeStateMachine(ctx context.Context, in *sfn.DescribeStateMachineInput, optFns ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error)
}

var _ StateMachines = (*sfn.Client)(nil)

// definitions reads a pipeline's facts from its deployed state machine:
// every compiled definition starts with a Pass state that assigns the
// variable "pipeline" (name, stage, vars, include, budget,
// notifications), the same facts every Task of the run is sent.
type definitions struct {
	sfn StateMachines
}

var _ Pipelines = definitions{}

// Pipeline implements Pipelines.
func (d definitions) Pipeline(ctx context.Context, stateMachineARN string) (task.Pipeline, error) {
	out, err := d.sfn.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(stateMachineARN)})
	if err != nil {
		return task.Pipeline{}, fmt.Errorf("describe state machine: %w", err)
	}
	return task.PipelineOf([]byte(aws.ToString(out.Definition)))
}
