package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/asl"
)

// env is what a state's JSONata sees. extra adds fields to $states.
// $states.context is left out for a state whose expressions do not read
// it.
func (r *run) env(p *path, extra map[string]any) *evalEnv {
	states := make(map[string]any, 2+len(extra))
	states["input"] = p.Input
	if sp := r.prog.states[p.State]; sp == nil || sp.readsContext {
		states["context"] = r.contextObj(p)
	}
	for k, v := range extra {
		states[k] = v
	}
	return &evalEnv{states: states, vars: p}
}

func (r *run) contextObj(p *path) map[string]any {
	ctx := map[string]any{
		"Execution": r.execCtx,
		"State": map[string]any{
			"Name":        p.State,
			"EnteredTime": isoTime(p.Entered),
			"RetryCount":  float64(p.Retries),
		},
		"StateMachine": r.smCtx,
	}
	if p.Token != "" && r.prog.states[p.State].resource == asl.ResourceLambdaInvokeWaitForTaskToken {
		ctx["Task"] = map[string]any{"Token": p.Token}
	}
	return ctx
}

// lookupVar finds a variable in the path's scope or an outer one.
func (p *path) lookupVar(name string) (any, bool) {
	for q := p; q != nil; q = q.parent {
		if v, ok := q.Vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// step advances a runnable path by one state (or one part of a state).
func (r *run) step(p *path) {
	if r.paths[p.ID] != p {
		return // aborted meanwhile
	}
	sp := r.prog.states[p.State]
	switch p.Phase {
	case phaseEnter:
		p.Entered = r.now()
		p.Retries, p.RetryUsed = 0, nil
		p.Token, p.Task, p.Result, p.Deadline, p.Heartbeat, p.Timeout = "", nil, nil, time.Time{}, 0, 0
		r.record(p, "StateEntered", map[string]any{"type": sp.state.Type(), "input": p.Input})
		p.Phase = phaseRun
		r.runState(p, sp)
	case phaseRun:
		r.runState(p, sp)
	case phaseResult:
		env := r.env(p, map[string]any{"result": p.Result})
		if f := r.leave(p, sp, env, sp.output, sp.assign, p.Result, sp.next); f != nil {
			r.stateFail(p, sp, f)
		}
	}
}

func (r *run) runState(p *path, sp *stateProg) {
	switch st := sp.state.(type) {
	case *asl.Pass:
		if f := r.leave(p, sp, r.env(p, nil), sp.output, sp.assign, p.Input, sp.next); f != nil {
			r.stateFail(p, sp, f)
		}
	case *asl.Succeed:
		if f := r.leave(p, sp, r.env(p, nil), sp.output, nil, p.Input, ""); f != nil {
			r.stateFail(p, sp, f)
		}
	case *asl.Fail:
		env := r.env(p, nil)
		f := &failure{}
		var bad *failure
		f.Error, bad = r.stringValue(sp.failError, env, "Error")
		if bad == nil {
			f.Cause, bad = r.stringValue(sp.failCause, env, "Cause")
		}
		if bad != nil {
			f = bad
		}
		r.pathFail(p, f)
	case *asl.Choice:
		r.choice(p, sp)
	case *asl.Wait:
		r.wait(p, sp, st)
	case *asl.Task:
		r.task(p, sp)
	case *asl.Parallel:
		r.parallel(p, sp)
	case *asl.Map:
		r.mapState(p, sp)
	}
}

func (r *run) stringValue(t *tmpl, env *evalEnv, field string) (string, *failure) {
	if t == nil {
		return "", nil
	}
	v, err := t.eval(env)
	if err != nil {
		return "", asFailure(err)
	}
	s, ok := v.(string)
	if !ok {
		return "", &failure{Error: asl.StatesQueryEvaluationError, Cause: fmt.Sprintf("the field '%s' must be a string", field)}
	}
	return s, nil
}

// intValue evaluates a numeric field; absent gives 0.
func (r *run) intValue(t *tmpl, env *evalEnv, field string, min int) (int, *failure) {
	if t == nil {
		return 0, nil
	}
	v, err := t.eval(env)
	if err != nil {
		return 0, asFailure(err)
	}
	n, ok := v.(float64)
	if !ok || n != math.Trunc(n) || n < float64(min) || n > math.MaxInt32 {
		return 0, &failure{Error: asl.StatesQueryEvaluationError,
			Cause: fmt.Sprintf("the field '%s' must be an integer of at least %d, got %v", field, min, v)}
	}
	return int(n), nil
}

// leave evaluates Assign and Output (both against the values on state
// entry), assigns the variables and moves p to next, or ends the path when
// next is "".
func (r *run) leave(p *path, sp *stateProg, env *evalEnv, output *tmpl, assign []assignProg, def any, next string) *failure {
	vals := make([]any, len(assign))
	for i, a := range assign {
		v, err := a.val.eval(env)
		if err != nil {
			return asFailure(err)
		}
		vals[i] = v
	}
	out := def
	if output != nil {
		v, err := output.eval(env)
		if err != nil {
			return asFailure(err)
		}
		out = v
	}
	for i, a := range assign {
		r.setVar(p, a.name, vals[i])
	}
	detail := map[string]any{"output": out}
	if next != "" {
		detail["next"] = next
	}
	r.record(p, "StateExited", detail)
	r.stopWork(p)
	p.Task, p.Result, p.Token, p.Until = nil, nil, "", time.Time{}
	if next == "" {
		p.Output = out
		p.Phase = phaseDone
		r.pathDone(p)
		return nil
	}
	p.State, p.Input, p.Phase = next, out, phaseEnter
	r.runnable = append(r.runnable, p)
	return nil
}

// stateFail handles an error of the path's current state: a matching
// Retrier schedules another attempt, else a matching Catcher moves on,
// else the path fails.
func (r *run) stateFail(p *path, sp *stateProg, f *failure) {
	if f.Error != asl.StatesRuntime && f.Error != asl.StatesDataLimitExceeded {
		for i, rt := range sp.retry {
			if !asl.Matches(rt.ErrorEquals, f.Error) {
				continue
			}
			if len(p.RetryUsed) != len(sp.retry) {
				p.RetryUsed = make([]int, len(sp.retry))
			}
			if p.RetryUsed[i] >= rt.Attempts() {
				break
			}
			delay := r.backoff(rt, p.RetryUsed[i])
			p.RetryUsed[i]++
			p.Retries++
			p.Phase = phaseRetry
			p.Until = r.now().Add(delay)
			typ := "StateRetried"
			if _, ok := sp.state.(*asl.Task); ok {
				typ = "TaskRetried"
			}
			r.record(p, typ, map[string]any{"error": f.Error, "cause": f.Cause, "retrier": i,
				"retryCount": p.Retries, "delaySeconds": delay.Seconds()})
			r.effects = append(r.effects, effect{p: p, kind: effTimer, until: p.Until})
			return
		}
		for _, ct := range sp.catches {
			if !asl.Matches(ct.errorEquals, f.Error) {
				continue
			}
			errOut := map[string]any{"Error": f.Error, "Cause": f.Cause}
			env := r.env(p, map[string]any{"errorOutput": errOut})
			r.record(p, "CatchTaken", map[string]any{"error": f.Error, "cause": f.Cause, "next": ct.next})
			if bad := r.leave(p, sp, env, ct.output, ct.assign, errOut, ct.next); bad != nil {
				r.pathFail(p, bad)
			}
			return
		}
	}
	r.pathFail(p, f)
}

// backoff is the wait before retry number n (0-based) of rt.
func (r *run) backoff(rt asl.Retrier, n int) time.Duration {
	secs := float64(rt.Interval()) * math.Pow(rt.Backoff(), float64(n))
	if rt.MaxDelaySeconds > 0 && secs > float64(rt.MaxDelaySeconds) {
		secs = float64(rt.MaxDelaySeconds)
	}
	if rt.JitterStrategy == asl.JitterFull {
		secs *= r.e.cfg.Rand.Float64()
	}
	if secs > 365*24*3600 {
		secs = 365 * 24 * 3600
	}
	return time.Duration(secs * float64(time.Second))
}

// pathDone ends a path that reached a terminal state.
func (r *run) pathDone(p *path) {
	parent := p.parent
	if parent == nil {
		r.snap.Status = StatusSucceeded
		r.snap.Output = p.Output
		r.record(nil, "ExecutionSucceeded", map[string]any{"output": p.Output})
		return
	}
	psp := r.prog.states[parent.State]
	kind := "BranchSucceeded"
	if _, ok := psp.state.(*asl.Map); ok {
		kind = "MapIterationSucceeded"
	}
	r.record(parent, kind, map[string]any{"index": p.Index})
	parent.Results[p.Index] = p.Output
	parent.Done[p.Index] = true
	r.removeChild(parent, p)
	if _, ok := psp.state.(*asl.Map); ok {
		r.startIterations(parent, psp)
	}
	for _, d := range parent.Done {
		if !d {
			return
		}
	}
	results := parent.Results
	parent.Results, parent.Done, parent.Items, parent.Next = nil, nil, nil, 0
	parent.Result = results
	parent.Phase = phaseResult
	r.runnable = append(r.runnable, parent)
}

func (r *run) removeChild(parent, c *path) {
	for i, q := range parent.Children {
		if q == c {
			parent.Children = append(parent.Children[:i], parent.Children[i+1:]...)
			break
		}
	}
	r.abort(c)
}

// pathFail ends a path with an error: the run fails, or the Parallel or Map
// state holding the path fails with the same error.
func (r *run) pathFail(p *path, f *failure) {
	p.Phase, p.Err = phaseFailed, f
	parent := p.parent
	if parent == nil {
		r.stopWork(p)
		r.snap.Status = StatusFailed
		r.snap.Error, r.snap.Cause = f.Error, f.Cause
		r.record(nil, "ExecutionFailed", map[string]any{"error": f.Error, "cause": f.Cause})
		return
	}
	psp := r.prog.states[parent.State]
	kind := "BranchFailed"
	if _, ok := psp.state.(*asl.Map); ok {
		kind = "MapIterationFailed"
	}
	r.record(parent, kind, map[string]any{"index": p.Index, "error": f.Error, "cause": f.Cause})
	for _, c := range parent.Children {
		r.abort(c)
	}
	parent.Children, parent.Results, parent.Done, parent.Items, parent.Next = nil, nil, nil, nil, 0
	r.stateFail(parent, psp, f)
}

func (r *run) choice(p *path, sp *stateProg) {
	env := r.env(p, nil)
	for _, ch := range sp.choices {
		v, err := ch.cond.eval(env)
		if err != nil {
			r.stateFail(p, sp, asFailure(err))
			return
		}
		b, ok := v.(bool)
		if !ok {
			r.stateFail(p, sp, &failure{Error: asl.StatesQueryEvaluationError,
				Cause: fmt.Sprintf("the Condition of a rule of state '%s' returned %s, not a boolean", p.State, describe(v))})
			return
		}
		if b {
			if f := r.leave(p, sp, env, ch.output, ch.assign, p.Input, ch.next); f != nil {
				r.stateFail(p, sp, f)
			}
			return
		}
	}
	if sp.defaultNext == "" {
		r.stateFail(p, sp, &failure{Error: asl.StatesNoChoiceMatched,
			Cause: fmt.Sprintf("no Condition of state '%s' held and it has no Default", p.State)})
		return
	}
	if f := r.leave(p, sp, env, sp.output, sp.assign, p.Input, sp.defaultNext); f != nil {
		r.stateFail(p, sp, f)
	}
}

func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 80 {
		return fmt.Sprintf("a %T", v)
	}
	return string(b)
}

func (r *run) wait(p *path, sp *stateProg, st *asl.Wait) {
	env := r.env(p, nil)
	now := r.now()
	var until time.Time
	if sp.seconds != nil {
		n, f := r.intValue(sp.seconds, env, "Seconds", 0)
		if f != nil {
			r.stateFail(p, sp, f)
			return
		}
		until = now.Add(time.Duration(n) * time.Second)
	} else {
		s, f := r.stringValue(sp.timestamp, env, "Timestamp")
		if f != nil {
			r.stateFail(p, sp, f)
			return
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			r.stateFail(p, sp, &failure{Error: asl.StatesQueryEvaluationError,
				Cause: fmt.Sprintf("the field 'Timestamp' is not an RFC 3339 time: %q", s)})
			return
		}
		until = t
	}
	if !until.After(now) {
		if f := r.leave(p, sp, env, sp.output, sp.assign, p.Input, sp.next); f != nil {
			r.stateFail(p, sp, f)
		}
		return
	}
	p.Phase, p.Until = phaseWait, until
	r.record(p, "WaitStarted", map[string]any{"until": until})
	r.effects = append(r.effects, effect{p: p, kind: effTimer, until: until})
}

func (r *run) task(p *path, sp *stateProg) {
	tokenTask := sp.resource == asl.ResourceLambdaInvokeWaitForTaskToken
	childTask := isStartExecution(sp.resource)
	p.Token = ""
	if tokenTask || childTask {
		p.Token = newToken(r.id)
	}
	env := r.env(p, nil)
	timeout, f := r.intValue(sp.timeout, env, "TimeoutSeconds", 1)
	if f != nil {
		r.taskError(p, sp, f)
		return
	}
	heartbeat, f := r.intValue(sp.heartbeat, env, "HeartbeatSeconds", 1)
	if f != nil {
		r.taskError(p, sp, f)
		return
	}
	var args any = p.Input
	if sp.args != nil {
		v, err := sp.args.eval(env)
		if err != nil {
			r.taskError(p, sp, asFailure(err))
			return
		}
		args = v
	}
	call, f := r.taskCall(p, sp, args)
	if f != nil {
		r.taskError(p, sp, f)
		return
	}
	now := r.now()
	p.Task, p.Timeout, p.Result, p.TokenDone = call, timeout, nil, false
	p.Deadline, p.Heartbeat, p.BeatAt = time.Time{}, 0, time.Time{}
	if p.Token != "" {
		if timeout > 0 {
			p.Deadline = now.Add(time.Duration(timeout) * time.Second)
		}
		if tokenTask && heartbeat > 0 {
			p.Heartbeat, p.BeatAt = heartbeat, now
		}
	}
	p.Phase = phaseTask
	var payload any = call.Payload
	if b, err := r.encode(call.Payload); err == nil {
		// Encoded once for the event and the handler.
		call.encoded = b
		payload = call.encoded
	}
	detail := map[string]any{"resource": call.Resource, "retryCount": p.Retries, "payload": payload}
	if call.Function != "" {
		detail["function"] = call.Function
	}
	if timeout > 0 {
		detail["timeoutSeconds"] = timeout
	}
	r.record(p, "TaskScheduled", detail)
	r.effects = append(r.effects, effect{p: p, kind: effInvoke})
	if tokenTask {
		r.armDeadline(p)
	}
}

// taskError reports a failure of a Task before its invocation.
func (r *run) taskError(p *path, sp *stateProg, f *failure) {
	r.record(p, "TaskFailed", map[string]any{"error": f.Error, "cause": f.Cause})
	r.stateFail(p, sp, f)
}

func isStartExecution(resource string) bool {
	return resource == asl.ResourceStartExecutionSync || resource == "arn:aws:states:::states:startExecution.sync"
}

func isLambda(resource string) bool {
	return resource == asl.ResourceLambdaInvoke || resource == asl.ResourceLambdaInvokeWaitForTaskToken
}

// taskCall turns a Task's arguments into an invocation.
func (r *run) taskCall(p *path, sp *stateProg, args any) (*taskCall, *failure) {
	call := &taskCall{Resource: sp.resource, Payload: args}
	obj, _ := args.(map[string]any)
	switch {
	case isLambda(sp.resource):
		fn, _ := obj["FunctionName"].(string)
		if fn == "" {
			return nil, &failure{Error: asl.StatesRuntime, Cause: "the Arguments of a lambda:invoke task need a FunctionName string"}
		}
		call.Function = fn
		call.Payload = obj["Payload"]
	case isStartExecution(sp.resource):
		arn, _ := obj["StateMachineArn"].(string)
		if arn == "" {
			return nil, &failure{Error: asl.StatesRuntime, Cause: "the Arguments of a startExecution task need a StateMachineArn string"}
		}
		input := obj["Input"]
		if input == nil {
			input = map[string]any{}
		}
		if s, ok := input.(string); ok { // .sync:2 also accepts Input as JSON text
			var v any
			if json.Unmarshal([]byte(s), &v) == nil {
				input = v
			}
		}
		raw, err := json.Marshal(input)
		if err != nil {
			return nil, &failure{Error: asl.StatesRuntime, Cause: "the Input of a startExecution task is not JSON"}
		}
		name, _ := obj["Name"].(string)
		if name == "" {
			// Deterministic, so that a resumed parent finds the child it
			// started; without blanks (a Map's states may have them), so
			// that the ID is one word on a command line.
			name = strings.ReplaceAll(fmt.Sprintf("%s%s/%s@%d", r.id, p.ID, sp.name, p.Retries), " ", "_")
		}
		call.Payload = input
		call.Child = &ChildRequest{ParentRunID: r.id, ParentState: sp.name, RunID: name, StateMachine: arn,
			Input: raw, Token: p.Token}
	}
	return call, nil
}

func (r *run) parallel(p *path, sp *stateProg) {
	var in any = p.Input
	if sp.args != nil {
		v, err := sp.args.eval(r.env(p, nil))
		if err != nil {
			r.stateFail(p, sp, asFailure(err))
			return
		}
		in = v
	}
	n := len(sp.branches)
	p.Results, p.Done, p.Children = make([]any, n), make([]bool, n), nil
	p.Phase = phaseChildren
	for i, b := range sp.branches {
		r.spawn(p, sp, i, b, in)
	}
}

func (r *run) spawn(p *path, sp *stateProg, i int, sc *scope, in any) {
	c := &path{ID: fmt.Sprintf("%s/%s#%d", p.ID, sp.name, i), Index: i, State: sc.startAt, Input: in,
		Vars: map[string]any{}, parent: p}
	p.Children = append(p.Children, c)
	r.paths[c.ID] = c
	r.runnable = append(r.runnable, c)
}

func (r *run) mapState(p *path, sp *stateProg) {
	env := r.env(p, nil)
	var items []any
	if sp.items != nil {
		v, err := sp.items.eval(env)
		if err != nil {
			r.stateFail(p, sp, asFailure(err))
			return
		}
		arr, ok := v.([]any)
		if !ok {
			r.stateFail(p, sp, &failure{Error: asl.StatesQueryEvaluationError,
				Cause: fmt.Sprintf("the field 'Items' of state '%s' returned %s, not an array", p.State, describe(v))})
			return
		}
		items = arr
	} else {
		arr, ok := p.Input.([]any)
		if !ok {
			r.stateFail(p, sp, &failure{Error: asl.StatesRuntime,
				Cause: fmt.Sprintf("the input of Map state '%s' is not an array and it has no Items", p.State)})
			return
		}
		items = arr
	}
	conc, f := r.intValue(sp.maxConcurrency, env, "MaxConcurrency", 0)
	if f != nil {
		r.stateFail(p, sp, f)
		return
	}
	if conc == 0 || conc > InlineMapConcurrencyLimit {
		conc = InlineMapConcurrencyLimit
	}
	selected := make([]any, len(items))
	for i, it := range items {
		selected[i] = it
		if sp.selector == nil {
			continue
		}
		ctx := r.contextObj(p)
		ctx["Map"] = map[string]any{"Item": map[string]any{"Index": float64(i), "Value": it}}
		e := &evalEnv{states: map[string]any{"input": p.Input, "context": ctx}, vars: p}
		v, err := sp.selector.eval(e)
		if err != nil {
			r.stateFail(p, sp, asFailure(err))
			return
		}
		selected[i] = v
	}
	if len(selected) == 0 {
		p.Result = []any{}
		p.Phase = phaseResult
		r.runnable = append(r.runnable, p)
		return
	}
	p.Items, p.Next, p.MaxConc = selected, 0, conc
	p.Results, p.Done, p.Children = make([]any, len(selected)), make([]bool, len(selected)), nil
	p.Phase = phaseChildren
	r.startIterations(p, sp)
}

func (r *run) startIterations(p *path, sp *stateProg) {
	for p.Next < len(p.Items) && len(p.Children) < p.MaxConc {
		i := p.Next
		in := p.Items[i]
		p.Items[i] = nil
		p.Next++
		r.record(p, "MapIterationStarted", map[string]any{"index": i})
		r.spawn(p, sp, i, sp.processor, in)
	}
}

// stateError carries a failure through Go error returns.
type stateError struct{ f failure }

func (e *stateError) Error() string { return e.f.Error + ": " + e.f.Cause }

func queryError(format string, args ...any) error {
	return &stateError{failure{Error: asl.StatesQueryEvaluationError, Cause: fmt.Sprintf(format, args...)}}
}

func asFailure(err error) *failure {
	var se *stateError
	if errors.As(err, &se) {
		f := se.f
		return &f
	}
	return &failure{Error: asl.StatesRuntime, Cause: err.Error()}
}
