package main

import (
	"context"
	"fmt"

	"github.com/stepline/stepline/functions/internal/states"
	"github.com/stepline/stepline/shared/task"
)

// StateMachines is the Step Functions call the recorder reads pipelines
// with (satisfied by *states.Client): a state machine's definition.
type StateMachines interface {
	Definition(ctx context.Context, stateMachineARN string) (string, error)
}

var _ StateMachines = (*states.Client)(nil)

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
	def, err := d.sfn.Definition(ctx, stateMachineARN)
	if err != nil {
		return task.Pipeline{}, fmt.Errorf("describe state machine: %w", err)
	}
	return task.PipelineOf([]byte(def))
}
