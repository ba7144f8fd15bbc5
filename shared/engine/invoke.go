package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/asl"
)

// invoke runs a task's invocation on a worker goroutine. deadline, when
// set, bounds it (States.Timeout).
func (r *run) invoke(ctx context.Context, call taskCall, deadline time.Time) completion {
	var timeout time.Duration
	if !deadline.IsZero() {
		timeout = deadline.Sub(r.now())
		if timeout <= 0 {
			return completion{fail: timedOut()}
		}
	}
	switch {
	case isLambda(call.Resource):
		h, ok := r.e.cfg.Resources.Handler(call.Resource, call.Function)
		if !ok {
			return completion{fail: &failure{Error: "Lambda.ResourceNotFoundException",
				Cause: fmt.Sprintf("Function not found: %s", call.Function)}}
		}
		out, f := r.callHandler(ctx, h, call.Payload, timeout)
		if f != nil {
			return completion{fail: f}
		}
		if call.Resource == asl.ResourceLambdaInvokeWaitForTaskToken {
			return completion{waiting: true}
		}
		payload, f := decodeResult(out)
		if f != nil {
			return completion{fail: f}
		}
		return completion{value: map[string]any{
			"ExecutedVersion": "$LATEST",
			"Payload":         payload,
			"SdkHttpMetadata": map[string]any{
				"HttpHeaders":    map[string]any{"Content-Type": "application/json"},
				"HttpStatusCode": float64(200),
			},
			"SdkResponseMetadata": map[string]any{"RequestId": sfnUUID()},
			"StatusCode":          float64(200),
		}}
	case isStartExecution(call.Resource):
		return r.startChild(ctx, call, timeout)
	default:
		h, ok := r.e.cfg.Resources.Handler(call.Resource, "")
		if !ok {
			return completion{fail: &failure{Error: asl.StatesRuntime,
				Cause: fmt.Sprintf("no handler for resource %q", call.Resource)}}
		}
		out, f := r.callHandler(ctx, h, call.Payload, timeout)
		if f != nil {
			return completion{fail: f}
		}
		v, f := decodeResult(out)
		if f != nil {
			return completion{fail: f}
		}
		return completion{value: v}
	}
}

func timedOut() *failure {
	return &failure{Error: asl.StatesTimeout, Cause: "the task ran longer than its TimeoutSeconds"}
}

func decodeResult(out json.RawMessage) (any, *failure) {
	if len(out) > MaxPayloadBytes {
		return nil, &failure{Error: asl.StatesDataLimitExceeded,
			Cause: fmt.Sprintf("the task result is %d bytes, over the %d-byte limit", len(out), MaxPayloadBytes)}
	}
	v, err := decodeJSON(out, nil)
	if err != nil {
		return nil, &failure{Error: "Lambda.Unknown", Cause: "the handler returned invalid JSON: " + err.Error()}
	}
	return v, nil
}

type handlerResult struct {
	out json.RawMessage
	err error
}

// callHandler runs h with payload, bounded by timeout (0: none) and ctx.
// A panic is reported as a function error named after the panic value's
// type, as the Lambda Go runtime does.
func (r *run) callHandler(ctx context.Context, h Handler, payload any, timeout time.Duration) (json.RawMessage, *failure) {
	in, err := json.Marshal(payload)
	if err != nil {
		return nil, &failure{Error: asl.StatesRuntime, Cause: "the task payload is not JSON: " + err.Error()}
	}
	res, timed := withTimeout(ctx, r.e.cfg.Clock, timeout, func(ctx context.Context) handlerResult {
		out, err := h(ctx, in)
		return handlerResult{out, err}
	}, func(v any) handlerResult {
		return handlerResult{err: &panicError{v}}
	})
	if timed {
		return nil, timedOut()
	}
	if ctx.Err() != nil && res.err == nil && res.out == nil {
		return nil, &failure{Error: asl.StatesRuntime, Cause: "the run was stopped"}
	}
	if res.err != nil {
		name := ErrorName(res.err)
		if pe, ok := res.err.(*panicError); ok {
			name = typeName(pe.v)
		}
		return nil, &failure{Error: name, Cause: lambdaCause(name, res.err.Error())}
	}
	return res.out, nil
}

type panicError struct{ v any }

func (p *panicError) Error() string { return fmt.Sprint(p.v) }

// withTimeout runs fn on its own goroutine and returns its result, or
// timed=true when timeout (measured on clock) passes first; fn's context is
// then cancelled and fn abandoned. When ctx ends first, withTimeout cancels
// fn and waits for it to return, so that a stopped run leaves no handler
// running; a zero result is returned. fn does not run at all when ctx has
// already ended.
func withTimeout[T any](ctx context.Context, clock Clock, timeout time.Duration, fn func(context.Context) T, onPanic func(any) T) (res T, timed bool) {
	if ctx.Err() != nil {
		return res, false
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan T, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- onPanic(v)
			}
		}()
		done <- fn(cctx)
	}()
	var expired chan struct{}
	if timeout > 0 {
		expired = make(chan struct{})
		go func() {
			if clock.Sleep(cctx, timeout) == nil {
				close(expired)
			}
		}()
	}
	select {
	case res = <-done:
		return res, false
	case <-expired:
		return res, true
	case <-ctx.Done():
		cancel()
		<-done
		var zero T
		return zero, false
	}
}

// startChild runs a startExecution.sync:2 task through the ChildStarter.
func (r *run) startChild(ctx context.Context, call taskCall, timeout time.Duration) completion {
	if r.e.cfg.Children == nil {
		return completion{fail: &failure{Error: asl.StatesRuntime, Cause: "no ChildStarter is configured for startExecution tasks"}}
	}
	if call.Child == nil {
		return completion{fail: &failure{Error: asl.StatesRuntime, Cause: "startExecution task without a child request"}}
	}
	req := *call.Child
	type childOut struct {
		res Result
		err error
	}
	out, timed := withTimeout(ctx, r.e.cfg.Clock, timeout, func(ctx context.Context) childOut {
		res, err := r.e.cfg.Children.StartChild(ctx, req)
		return childOut{res, err}
	}, func(v any) childOut {
		return childOut{err: &panicError{v}}
	})
	switch {
	case timed:
		return completion{fail: timedOut()}
	case ctx.Err() != nil:
		return completion{fail: &failure{Error: asl.StatesRuntime, Cause: "the run was stopped"}}
	case out.err != nil:
		return completion{fail: &failure{Error: asl.StatesTaskFailed, Cause: fmt.Sprintf("start child run %q: %v", req.RunID, out.err)}}
	}
	switch out.res.Status {
	case StatusSucceeded:
		return completion{value: childTaskResult(req, out.res)}
	case StatusFailed, StatusTimedOut:
		return completion{fail: childFailure(req, out.res)}
	default:
		return completion{waiting: true}
	}
}

// childTaskResult is the result of a startExecution.sync:2 task: the
// child's DescribeExecution response with Input and Output as JSON.
func childTaskResult(req ChildRequest, res Result) map[string]any {
	in, _ := decodeJSON(req.Input, map[string]any{})
	m := map[string]any{
		"ExecutionArn":    "arn:aws:states:local:000000000000:execution:" + req.StateMachine + ":" + req.RunID,
		"Name":            req.RunID,
		"StateMachineArn": req.StateMachine,
		"Status":          string(res.Status),
		"Input":           in,
	}
	if res.Status == StatusSucceeded {
		out, _ := decodeJSON(res.Output, nil)
		m["Output"] = out
	} else {
		m["Error"], m["Cause"] = res.Error, res.Cause
	}
	return m
}

// childFailure is how a failed child fails its parent's task:
// States.TaskFailed with the child's description as Cause.
func childFailure(req ChildRequest, res Result) *failure {
	b, _ := json.Marshal(childTaskResult(req, res))
	return &failure{Error: asl.StatesTaskFailed, Cause: string(b)}
}
