package compiler

import "github.com/stepline/stepline/shared/asl"

// The JSONata strings the lowering writes most, made once: asl.Expr builds
// its string at run time, and these appear in every step's states.
var (
	exprResultPayload = asl.Expr("$states.result.Payload")               // the Payload a Lambda Task's function returned
	exprResult        = asl.Expr("$states.result")                       // a Task's result
	exprErrorOutput   = asl.Expr("$states.errorOutput")                  // the error a Catch caught
	exprPayloadOutput = asl.Expr("$states.result.Payload.output")        // a step function's output
	exprPayloadUsage  = asl.Expr("$states.result.Payload.usage")         // a step function's usage
	exprUsage         = asl.Expr("$usage")                               // the run's usage
	exprInput         = asl.Expr("$states.input")                        // a state's input
	exprTaskToken     = asl.Expr("$states.context.Task.Token")           // a waiting Task's token
	exprRunID         = asl.Expr("$run.id")                              // the run's ID
	exprAttempt       = asl.Expr("$states.context.State.RetryCount + 1") // the attempt a Task makes, from 1
	exprPipeline      = asl.Expr("$pipeline")                            // the run's pipeline
	exprRun           = asl.Expr("$run")                                 // the run
	exprTrigger       = asl.Expr("$trigger")                             // the run's trigger
	exprLast          = asl.Expr("$last")                                // the last step's output
)
