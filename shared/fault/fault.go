// Package fault defines the typed errors that cross the boundary between a
// step handler and the state machine that runs it.
//
// The Go type name of each error is part of the state machine contract: the
// Lambda runtime reports it as the errorType of a failed invocation, and the
// compiler's Retry and Catch rules match on it. The local engine derives the
// same names with [Name]. Renaming a type here renames an ASL error; the
// names are pinned in fault_test.go.
package fault

import (
	"errors"
	"fmt"
	"time"
)

// ExecutorTimeout reports that an executor call did not answer within its
// deadline (the step's timeout_seconds or the executor's own). Retryable.
type ExecutorTimeout struct{ Msg string }

// ExecutorUnavailable reports a transport failure or a server-side error
// (connection refused or reset, a truncated body, HTTP 5xx). Retryable.
type ExecutorUnavailable struct{ Msg string }

// RateLimited reports HTTP 429 or a provider's throttling answer. RetryAfter
// is the wait the server asked for, zero when it named none. Retryable.
type RateLimited struct {
	Msg        string
	RetryAfter time.Duration
}

// ExecutorRejected reports a request the provider refused for reasons a
// retry cannot fix: 400, 401, 403, 404, an unknown model.
type ExecutorRejected struct{ Msg string }

// InvalidOutput reports a reply that is not a valid LLMOutput after the
// structured-output runner's re-asks were spent. Retryable: a fresh call may
// answer well.
type InvalidOutput struct{ Msg string }

// ModelRefused reports a refusal or a content-filter stop. Not retryable.
type ModelRefused struct{ Msg string }

// ConfigError reports a step configuration that cannot run: a missing
// secret, a malformed URL, an executor_config value of the wrong type.
type ConfigError struct{ Msg string }

// TemplateError reports a Liquid template that failed to render.
type TemplateError struct{ Msg string }

// AgentIterationsExhausted reports an agent step whose tool loop made its
// profile's max_iterations model calls (tool turns and re-asks alike)
// without a valid final answer. Not retryable: the same loop would spend
// the same again; a Catch can route it.
type AgentIterationsExhausted struct{ Msg string }

// AgentDeadlineExceeded reports an agent step whose tool loop ran out of
// time (the step's timeout, less the margin kept to record the step)
// before the model gave a valid final answer. Not retryable, for the
// reason above.
type AgentDeadlineExceeded struct{ Msg string }

// RunEnded is not a failure: a step's deciding Task (a step, a human
// step's or a sub-pipeline's decision, a group's join, a human check)
// decided that the run ends there — stopped, escalated, aborted, or failed
// by its gate, budget or policy. Msg is the Task's answer (a task.Response
// as JSON, bounded by package steprun). The state machine's Catch of
// NameRunEnded reads it from the error's Cause and ends the run in the
// terminal state its status names, so that a step that completes goes
// straight to the next Task without an outcome Choice. No retrier matches
// it. Its ASL name is NameRunEnded, not its Go type name: a name with a
// dot, which no Go type can have, so no other error is ever caught as one
// (the step function's Lambda adapter reports it under that name).
type RunEnded struct{ Msg string }

func (e *RunEnded) Error() string                 { return e.Msg }
func (e *ExecutorTimeout) Error() string          { return e.Msg }
func (e *ExecutorUnavailable) Error() string      { return e.Msg }
func (e *RateLimited) Error() string              { return e.Msg }
func (e *ExecutorRejected) Error() string         { return e.Msg }
func (e *InvalidOutput) Error() string            { return e.Msg }
func (e *ModelRefused) Error() string             { return e.Msg }
func (e *ConfigError) Error() string              { return e.Msg }
func (e *TemplateError) Error() string            { return e.Msg }
func (e *AgentIterationsExhausted) Error() string { return e.Msg }
func (e *AgentDeadlineExceeded) Error() string    { return e.Msg }

// Error names as they appear in ASL Retry and Catch rules.
const (
	NameExecutorTimeout     = "ExecutorTimeout"
	NameExecutorUnavailable = "ExecutorUnavailable"
	NameRateLimited         = "RateLimited"
	NameExecutorRejected    = "ExecutorRejected"
	NameInvalidOutput       = "InvalidOutput"
	NameModelRefused        = "ModelRefused"
	NameConfigError         = "ConfigError"
	NameTemplateError       = "TemplateError"

	NameAgentIterationsExhausted = "AgentIterationsExhausted"
	NameAgentDeadlineExceeded    = "AgentDeadlineExceeded"

	NameRunEnded = "Stepline.RunEnded"
)

// Retryable lists the error names a step's retry: policy retries. Low
// confidence is a decision, not an error, and is never retried.
var Retryable = []string{NameExecutorTimeout, NameExecutorUnavailable, NameRateLimited, NameInvalidOutput}

// LambdaServiceErrors lists the errors of the Lambda service itself that
// every Task retries whatever the step's retry: policy says.
var LambdaServiceErrors = []string{
	"Lambda.ServiceException",
	"Lambda.AWSLambdaException",
	"Lambda.SdkClientException",
	"Lambda.TooManyRequestsException",
}

// Name returns the ASL error name of err: the type name of the first fault
// in its chain, or "" when the chain holds none.
func Name(err error) string {
	if f := Find(err); f != nil {
		return typeName(f)
	}
	return ""
}

// Find returns the first fault in err's chain, or nil.
func Find(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if typeName(e) != "" {
			return e
		}
	}
	return nil
}

// IsRetryable reports whether err's fault is one a retry: policy retries.
func IsRetryable(err error) bool {
	n := Name(err)
	for _, r := range Retryable {
		if n == r {
			return true
		}
	}
	return false
}

// Surface returns an error whose dynamic type is err's fault and whose
// message is err's full message, so that the Lambda runtime reports the
// fault's name as errorType without losing the wrapping context. An error
// without a fault is returned unchanged.
func Surface(err error) error {
	f := Find(err)
	if f == nil || f == err {
		return err
	}
	msg := err.Error()
	switch f := f.(type) {
	case *ExecutorTimeout:
		return &ExecutorTimeout{Msg: msg}
	case *ExecutorUnavailable:
		return &ExecutorUnavailable{Msg: msg}
	case *RateLimited:
		return &RateLimited{Msg: msg, RetryAfter: f.RetryAfter}
	case *ExecutorRejected:
		return &ExecutorRejected{Msg: msg}
	case *InvalidOutput:
		return &InvalidOutput{Msg: msg}
	case *ModelRefused:
		return &ModelRefused{Msg: msg}
	case *ConfigError:
		return &ConfigError{Msg: msg}
	case *TemplateError:
		return &TemplateError{Msg: msg}
	case *AgentIterationsExhausted:
		return &AgentIterationsExhausted{Msg: msg}
	case *AgentDeadlineExceeded:
		return &AgentDeadlineExceeded{Msg: msg}
	case *RunEnded:
		return f // its message is the answer the state machine parses
	}
	return err
}

func typeName(err error) string {
	switch err.(type) {
	case *ExecutorTimeout:
		return NameExecutorTimeout
	case *ExecutorUnavailable:
		return NameExecutorUnavailable
	case *RateLimited:
		return NameRateLimited
	case *ExecutorRejected:
		return NameExecutorRejected
	case *InvalidOutput:
		return NameInvalidOutput
	case *ModelRefused:
		return NameModelRefused
	case *ConfigError:
		return NameConfigError
	case *TemplateError:
		return NameTemplateError
	case *AgentIterationsExhausted:
		return NameAgentIterationsExhausted
	case *AgentDeadlineExceeded:
		return NameAgentDeadlineExceeded
	case *RunEnded:
		return NameRunEnded
	}
	return ""
}

// Errorf is a convenience for building a fault message with fmt verbs.
func Errorf[T any, P interface {
	*T
	error
}](format string, args ...any) error {
	var v T
	p := P(&v)
	setMsg(p, fmt.Sprintf(format, args...))
	return p
}

func setMsg(err error, msg string) {
	switch e := err.(type) {
	case *ExecutorTimeout:
		e.Msg = msg
	case *ExecutorUnavailable:
		e.Msg = msg
	case *RateLimited:
		e.Msg = msg
	case *ExecutorRejected:
		e.Msg = msg
	case *InvalidOutput:
		e.Msg = msg
	case *ModelRefused:
		e.Msg = msg
	case *ConfigError:
		e.Msg = msg
	case *TemplateError:
		e.Msg = msg
	case *AgentIterationsExhausted:
		e.Msg = msg
	case *AgentDeadlineExceeded:
		e.Msg = msg
	case *RunEnded:
		e.Msg = msg
	}
}
