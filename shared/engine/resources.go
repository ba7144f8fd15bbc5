package engine

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/stepline/stepline/shared/fault"
)

// Handler is in-process code a Task runs: a Lambda function's handler, or
// the code behind any other resource. It receives the Lambda Payload (or,
// for other resources, the evaluated Arguments) and returns its JSON
// result. An error fails the task; its ASL error name is derived as the
// Lambda Go runtime derives errorType (see ErrorName).
type Handler func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error)

// Resources resolves a Task's resource to a Handler.
type Resources interface {
	// Handler returns the handler for a Task. For the Lambda integrations
	// (lambda:invoke and lambda:invoke.waitForTaskToken) function is the
	// task's FunctionName argument, for instance a "${StepFunctionArn}"
	// placeholder; for any other resource it is "". ok is false when
	// nothing serves the task, which then fails with
	// Lambda.ResourceNotFoundException (or States.Runtime for non-Lambda
	// resources).
	Handler(resource, function string) (h Handler, ok bool)
}

// Functions serves Lambda functions by FunctionName; it resolves no other
// resource.
type Functions map[string]Handler

var _ Resources = Functions(nil)

// Handler implements Resources.
func (f Functions) Handler(resource, function string) (Handler, bool) {
	if function == "" {
		return nil, false
	}
	h, ok := f[function]
	return h, ok
}

// ChildStarter runs the child state machines of
// states:startExecution.sync:2 tasks. The engine's caller wires it to start
// the child pipeline as its own run, linked to the parent, typically with
// Engine.Start and the WithParent option.
type ChildStarter interface {
	// StartChild starts the child run described by req and runs it until it
	// ends or pauses. A Result with Status SUCCEEDED or FAILED completes the
	// parent's task at once; WAITING leaves the parent's task pending until
	// the child ends later and completes req.Token (the engine does that
	// itself for children started with WithParent(req.Token)). An error
	// fails the parent's task with States.TaskFailed. StartChild may be
	// called again for the same req.RunID when the parent resumes after a
	// crash; it should then continue or report that run (Resume) rather
	// than start another, and report WAITING when that run is being driven
	// at the moment (ErrRunActive): it completes the parent when it ends.
	StartChild(ctx context.Context, req ChildRequest) (Result, error)
}

// ChildRequest describes a child run to start.
type ChildRequest struct {
	ParentRunID  string
	ParentState  string
	RunID        string          // the child's run ID: the task's Name argument, or derived from the parent's
	StateMachine string          // the task's StateMachineArn argument
	Input        json.RawMessage // the task's Input argument
	Token        string          // completes the parent's task (SendTaskSuccess/SendTaskFailure)
}

// ErrorName returns the ASL error name of a handler error as the Lambda Go
// runtime (aws-lambda-go) reports it, after fault.Surface: the fault's type
// name when err's chain holds one of package fault's errors, otherwise the
// pointer-stripped Go type name of err (for instance "errorString" for
// errors.New).
func ErrorName(err error) string {
	if n := fault.Name(err); n != "" {
		return n
	}
	return typeName(err)
}

func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return "Error"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return "Error"
	}
	return t.Name()
}

// lambdaCause renders the Cause Step Functions reports for a failed Lambda
// function: the function's error response as JSON text.
func lambdaCause(name, msg string) string {
	b, _ := json.Marshal(struct {
		ErrorMessage string `json:"errorMessage"`
		ErrorType    string `json:"errorType"`
	}{msg, name})
	return string(b)
}
