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
	"slices"
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

func (e *RunEnded) Error() string { return e.Msg }

func (*RunEnded) faultName() string { return NameRunEnded }

func (e *RunEnded) withMsg(m string) error { c := *e; c.Msg = m; return &c }

// fault is what every error type here provides: its ASL error name, and
// a copy of itself with another message (Surface, Errorf).
type fault interface {
	error
	faultName() string
	withMsg(msg string) error
}

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

func (*ExecutorTimeout) faultName() string          { return NameExecutorTimeout }
func (*ExecutorUnavailable) faultName() string      { return NameExecutorUnavailable }
func (*RateLimited) faultName() string              { return NameRateLimited }
func (*ExecutorRejected) faultName() string         { return NameExecutorRejected }
func (*InvalidOutput) faultName() string            { return NameInvalidOutput }
func (*ModelRefused) faultName() string             { return NameModelRefused }
func (*ConfigError) faultName() string              { return NameConfigError }
func (*TemplateError) faultName() string            { return NameTemplateError }
func (*AgentIterationsExhausted) faultName() string { return NameAgentIterationsExhausted }
func (*AgentDeadlineExceeded) faultName() string    { return NameAgentDeadlineExceeded }

// withMsg copies the whole value, so fields other than Msg (RateLimited's
// RetryAfter) are kept.
func (e *ExecutorTimeout) withMsg(m string) error          { c := *e; c.Msg = m; return &c }
func (e *ExecutorUnavailable) withMsg(m string) error      { c := *e; c.Msg = m; return &c }
func (e *RateLimited) withMsg(m string) error              { c := *e; c.Msg = m; return &c }
func (e *ExecutorRejected) withMsg(m string) error         { c := *e; c.Msg = m; return &c }
func (e *InvalidOutput) withMsg(m string) error            { c := *e; c.Msg = m; return &c }
func (e *ModelRefused) withMsg(m string) error             { c := *e; c.Msg = m; return &c }
func (e *ConfigError) withMsg(m string) error              { c := *e; c.Msg = m; return &c }
func (e *TemplateError) withMsg(m string) error            { c := *e; c.Msg = m; return &c }
func (e *AgentIterationsExhausted) withMsg(m string) error { c := *e; c.Msg = m; return &c }
func (e *AgentDeadlineExceeded) withMsg(m string) error    { c := *e; c.Msg = m; return &c }

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

// Retryable returns the error names a step's retry: policy retries, in a
// new slice the caller may change. Low confidence is a decision, not an
// error, and is never retried.
func Retryable() []string {
	return []string{NameExecutorTimeout, NameExecutorUnavailable, NameRateLimited, NameInvalidOutput}
}

// LambdaServiceErrors returns the errors of the Lambda service itself that
// every Task retries whatever the step's retry: policy says, in a new
// slice the caller may change.
func LambdaServiceErrors() []string {
	return []string{
		"Lambda.ServiceException",
		"Lambda.AWSLambdaException",
		"Lambda.SdkClientException",
		"Lambda.TooManyRequestsException",
	}
}

// Name returns the ASL error name of err: the type name of the first fault
// in its chain, or "" when the chain holds none.
func Name(err error) string {
	if f, ok := Find(err).(fault); ok {
		return f.faultName()
	}
	return ""
}

// Find returns the first fault in err's chain, or nil.
func Find(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(fault); ok {
			return e
		}
	}
	return nil
}

// IsRetryable reports whether err's fault is one a retry: policy retries.
func IsRetryable(err error) bool {
	return slices.Contains(Retryable(), Name(err))
}

// Surface returns an error whose dynamic type is err's fault and whose
// message is err's full message, so that the Lambda runtime reports the
// fault's name as errorType without losing the wrapping context. An error
// without a fault is returned unchanged.
func Surface(err error) error {
	f, ok := Find(err).(fault)
	if !ok || error(f) == err {
		return err
	}
	if ended, ok := f.(*RunEnded); ok {
		return ended // its message is the answer the state machine parses
	}
	return f.withMsg(err.Error())
}

// Errorf is a convenience for building a fault message with fmt verbs.
func Errorf[T any, P interface {
	*T
	fault
}](format string, args ...any) error {
	var v T
	return P(&v).withMsg(fmt.Sprintf(format, args...))
}
