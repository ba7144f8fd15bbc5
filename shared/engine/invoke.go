package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/stepline/stepline/shared/asl"
)

// inlineCall is a task invocation dispatched, waiting to run.
type inlineCall struct {
	ctx      context.Context
	cancel   context.CancelFunc
	call     taskCall
	deadline time.Time
	pathID   string
	ticket   int64
}

// toWorker runs ic on a worker goroutine.
func (r *run) toWorker(ic *inlineCall) {
	r.e.workers.run(func() { r.invoke(ic, nil) })
}

// runInline runs ic on the driver: the invocation is the run's only work
// in flight and nothing else can complete meanwhile but a token or the
// run's deadline, which wait for it. Handing each call to a worker and
// its completion back to the driver cost two goroutine switches per step,
// each waking a second thread on a machine with two or more processors
// (about an eighth of a step's CPU in BenchmarkRun of shared/local). It
// reports whether the call outlived its deadline: the loop was then taken
// over by a new driver and this one must not touch the run again.
func (r *run) runInline(ctx context.Context, ic *inlineCall) (takenOver bool) {
	// An empty critical section: takeOver's lock orders the new driver
	// after everything this one did before the call.
	r.qmu.Lock()
	//lint:ignore SA2001 the critical section is a happens-before edge, empty on purpose
	r.qmu.Unlock()
	return r.invoke(ic, func() { r.takeOver(ctx) })
}

// preemption is how another goroutine ends the call the driver runs
// (run.preempt): stop abandons it and starts a new driver, unless the
// call ended first.
type preemption struct{ stop func() }

// invoke runs a task's invocation (the run counts it in r.hard and r.wg;
// invoke posts its completion, counted once, and marks it done in r.wg).
// ic.deadline, when set, bounds it: when it passes first, States.Timeout
// is posted at once, the call, whose context is cancelled, is abandoned
// (it may still be running when the run ends), and onTimeout, when given,
// is called; invoke then reports that the timeout came first, as it does
// when the run's deadline preempted the call (onTimeout is given for a
// call on the driver, which the deadline must not wait for). When the
// run stops (its context ends), the call is waited for, so that a
// stopped run leaves no handler running.
func (r *run) invoke(ic *inlineCall, onTimeout func()) (timedOutFirst bool) {
	ctx, cancel := ic.ctx, ic.cancel
	var settled atomic.Bool
	// finish posts the call's completion unless the call, its timeout or
	// its preemption came first; a dropped completion only counts the
	// call as ended.
	finish := func(c completion, drop bool) bool {
		if !settled.CompareAndSwap(false, true) {
			return false // another of these came first
		}
		c.kind, c.pathID, c.ticket, c.hard = kindInvoked, ic.pathID, ic.ticket, true
		if drop || ctx.Err() != nil {
			c.ticket = 0 // cancelled: whatever came back is not the task's result
		}
		r.post(c)
		r.wg.Done()
		return true
	}
	if onTimeout != nil {
		// While the driver runs the call, the run's deadline can still
		// end the run: it preempts the call (see runDeadline).
		p := &preemption{stop: func() {
			if finish(completion{}, true) {
				cancel()
				onTimeout()
			}
		}}
		r.preempt.Store(p)
		defer r.preempt.CompareAndSwap(p, nil)
	}
	if !ic.deadline.IsZero() {
		timeout := ic.deadline.Sub(r.now())
		if timeout <= 0 {
			finish(completion{fail: timedOut()}, false)
			return false
		}
		expire := func() {
			if finish(completion{fail: timedOut()}, false) {
				cancel()
				if onTimeout != nil {
					onTimeout()
				}
			}
		}
		if _, real := r.e.cfg.Clock.(SystemClock); real {
			// A timer rather than a goroutine asleep on one: a call
			// that ends before its deadline (nearly every one) then
			// costs no goroutine start and exit, and no wake-up of a
			// sleeping goroutine when it ends (about 4% of a step's CPU
			// in BenchmarkRun of shared/local).
			t := time.AfterFunc(timeout, func() {
				if ctx.Err() == nil {
					expire()
				}
			})
			defer t.Stop()
		} else {
			sleep, stop := context.WithCancel(ctx)
			defer stop()
			clock := r.e.cfg.Clock
			go func() {
				if clock.Sleep(sleep, timeout) == nil {
					expire()
				}
			}()
		}
	}
	return !finish(r.call(ctx, ic.call), false)
}

// call runs a task's invocation.
func (r *run) call(ctx context.Context, call taskCall) completion {
	if ctx.Err() != nil {
		return completion{fail: stopped()}
	}
	switch {
	case isLambda(call.Resource):
		h, ok := r.e.cfg.Resources.Handler(call.Resource, call.Function)
		if !ok {
			return completion{fail: &failure{Error: "Lambda.ResourceNotFoundException",
				Cause: fmt.Sprintf("Function not found: %s", call.Function)}}
		}
		out, f := r.callHandler(ctx, h, call)
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
		return r.startChild(ctx, call)
	default:
		h, ok := r.e.cfg.Resources.Handler(call.Resource, "")
		if !ok {
			return completion{fail: &failure{Error: asl.StatesRuntime,
				Cause: fmt.Sprintf("no handler for resource %q", call.Resource)}}
		}
		out, f := r.callHandler(ctx, h, call)
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

func stopped() *failure {
	return &failure{Error: asl.StatesRuntime, Cause: "the run was stopped"}
}

// timedOut is a Task past its TimeoutSeconds: States.Timeout with no
// cause, as Step Functions reports it.
func timedOut() *failure {
	return &failure{Error: asl.StatesTimeout}
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

// callHandler runs h with the call's payload. A panic is reported as a
// function error named after the panic value's type, as the Lambda Go
// runtime does.
func (r *run) callHandler(ctx context.Context, h Handler, call taskCall) (json.RawMessage, *failure) {
	in := json.RawMessage(call.encoded)
	if in == nil {
		b, err := encodeJSON(call.Payload)
		if err != nil {
			return nil, &failure{Error: asl.StatesRuntime, Cause: "the task payload is not JSON: " + err.Error()}
		}
		in = b
	}
	out, err := func() (out json.RawMessage, err error) {
		defer func() {
			if v := recover(); v != nil {
				out, err = nil, &panicError{v}
			}
		}()
		return h(ctx, in)
	}()
	if ctx.Err() != nil && err == nil && out == nil {
		return nil, stopped()
	}
	if err != nil {
		name := ErrorName(err)
		if pe, ok := err.(*panicError); ok {
			name = typeName(pe.v)
		}
		return nil, &failure{Error: name, Cause: lambdaCause(name, err.Error())}
	}
	return out, nil
}

type panicError struct{ v any }

func (p *panicError) Error() string { return fmt.Sprint(p.v) }

// startChild runs a startExecution.sync:2 task through the ChildStarter.
func (r *run) startChild(ctx context.Context, call taskCall) completion {
	if r.e.cfg.Children == nil {
		return completion{fail: &failure{Error: asl.StatesRuntime, Cause: "no ChildStarter is configured for startExecution tasks"}}
	}
	if call.Child == nil {
		return completion{fail: &failure{Error: asl.StatesRuntime, Cause: "startExecution task without a child request"}}
	}
	req := *call.Child
	res, err := func() (res Result, err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &panicError{v}
			}
		}()
		return r.e.cfg.Children.StartChild(ctx, req)
	}()
	switch {
	case ctx.Err() != nil:
		return completion{fail: stopped()}
	case err != nil:
		return completion{fail: &failure{Error: asl.StatesTaskFailed, Cause: fmt.Sprintf("start child run %q: %v", req.RunID, err)}}
	}
	switch res.Status {
	case StatusSucceeded:
		return completion{value: childTaskResult(req, res)}
	case StatusFailed, StatusTimedOut:
		return completion{fail: childFailure(req, res)}
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
