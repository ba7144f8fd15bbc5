package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// snapshotVersion is the version of the checkpoint format below. A change
// that old checkpoints cannot be read with bumps it. Version 1 kept the
// run's input and the variables in the snapshot; version 2 keeps them as
// checkpoint values (see valueKey). Both are read.
const snapshotVersion = 2

// snapshot is a run's execution state. A checkpoint stores it in two
// parts: the snapshot proper, rewritten by every checkpoint, which holds
// what changes at every step (each path's state, phase, input and task in
// flight) and stays small; and values, written only when they change: the
// run's input and every variable. Task payloads and results are dropped
// from the snapshot as soon as the state that used them is left.
type snapshot struct {
	V         int           `json:"v"`
	RunID     string        `json:"runId"`
	Machine   string        `json:"machine,omitempty"`
	DefHash   string        `json:"defHash"`
	Status    Status        `json:"status"`
	Input     any           `json:"-"` // the value inputKey
	V1Input   any           `json:"input,omitempty"`
	StartTime time.Time     `json:"startTime"`
	Deadline  time.Time     `json:"deadline,omitzero"` // the machine's TimeoutSeconds
	Output    any           `json:"output,omitempty"`
	Error     string        `json:"error,omitempty"`
	Cause     string        `json:"cause,omitempty"`
	Parent    *ChildRequest `json:"parent,omitempty"`
	Root      *path         `json:"root"`
}

// phase is where a path stands in its current state.
type phase string

const (
	phaseEnter    phase = ""         // about to enter State
	phaseRun      phase = "run"      // entered; run the state's work (again, after a retry wait)
	phaseTask     phase = "task"     // a task's invocation is in flight (re-run on resume)
	phaseToken    phase = "token"    // a task waits for its token
	phaseResult   phase = "result"   // a task's result is in, Output and Assign to do
	phaseRetry    phase = "retry"    // waiting until Until before running the state again
	phaseWait     phase = "wait"     // a Wait state, until Until
	phaseChildren phase = "children" // a Parallel or Map state runs its branches or iterations
	phaseDone     phase = "done"     // the path ended (Succeed or End); Output set
	phaseFailed   phase = "failed"   // the path failed; Err set
)

// failure is an error as states see it: a name and a cause.
type failure struct {
	Error string `json:"error"`
	Cause string `json:"cause,omitempty"`
}

// path is one thread of execution: the top level, a Parallel branch or a Map
// iteration. Each path is a variable scope.
type path struct {
	ID    string `json:"id"`              // "" for the top level; parent ID + "/" + state + "#" + index
	Index int    `json:"index,omitempty"` // branch or iteration index
	State string `json:"state"`
	Phase phase  `json:"phase,omitempty"`
	Input any    `json:"input"`

	Vars   map[string]any `json:"-"`              // the values varKey(ID, name)
	V1Vars map[string]any `json:"vars,omitempty"` // version 1 snapshots: Vars

	Entered   time.Time `json:"entered,omitzero"`
	Retries   int       `json:"retries,omitempty"`   // $states.context.State.RetryCount
	RetryUsed []int     `json:"retryUsed,omitempty"` // attempts used per Retrier
	Until     time.Time `json:"until,omitzero"`

	// The current task.
	Token     string    `json:"token,omitempty"`
	Deadline  time.Time `json:"deadline,omitzero"`   // a token task's TimeoutSeconds, absolute
	Heartbeat int       `json:"heartbeat,omitempty"` // a token task's HeartbeatSeconds
	BeatAt    time.Time `json:"beatAt,omitzero"`     // last heartbeat (or start)
	Timeout   int       `json:"timeout,omitempty"`   // TimeoutSeconds of the invocation
	Task      *taskCall `json:"task,omitempty"`
	Result    any       `json:"result,omitempty"`
	TokenDone bool      `json:"tokenDone,omitempty"` // the token completed while the invocation still ran

	// Parallel and Map.
	Children []*path `json:"children,omitempty"`
	Items    []any   `json:"items,omitempty"` // Map: every iteration's input
	Next     int     `json:"next,omitempty"`  // Map: the next iteration to start
	MaxConc  int     `json:"maxConc,omitempty"`
	Results  []any   `json:"results,omitempty"`
	Done     []bool  `json:"done,omitempty"`

	Output any      `json:"output,omitempty"`
	Err    *failure `json:"err,omitempty"`

	parent *path              // in memory only
	ticket int64              // the in-flight effect whose completion counts
	cancel context.CancelFunc // cancels the in-flight effect
	soft   context.CancelFunc // cancels the token deadline timer
}

// taskCall is a scheduled invocation, kept so that it can run again.
type taskCall struct {
	Resource string        `json:"resource"`
	Function string        `json:"function,omitempty"`
	Payload  any           `json:"payload"`
	Child    *ChildRequest `json:"child,omitempty"`

	encoded rawJSON // Payload encoded when scheduled; nil after a load
}

// Checkpoint value keys: the run's input, and each variable by name and
// the ID of the path (scope) holding it. A variable name has no ':', so
// the name ends at the first one after the prefix.
const (
	inputKey  = "input"
	varPrefix = "var:"
)

func varKey(pathID, name string) string { return varPrefix + name + ":" + pathID }

func parseVarKey(k string) (pathID, name string, ok bool) {
	rest, ok := strings.CutPrefix(k, varPrefix)
	if !ok {
		return "", "", false
	}
	name, pathID, ok = strings.Cut(rest, ":")
	return pathID, name, ok && name != ""
}

// decodeSnapshot reads a checkpoint: its snapshot and its values. v1 is
// set for a version 1 checkpoint, whose input and variables are in the
// snapshot (its next checkpoint must write them as values).
func decodeSnapshot(raw json.RawMessage, values map[string]json.RawMessage) (s *snapshot, v1 bool, err error) {
	s = &snapshot{}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, false, fmt.Errorf("decode snapshot: %w", err)
	}
	if s.V != snapshotVersion && s.V != 1 {
		return nil, false, fmt.Errorf("decode snapshot: version %d, want %d", s.V, snapshotVersion)
	}
	if s.Root == nil {
		return nil, false, fmt.Errorf("decode snapshot: no root path")
	}
	paths := map[string]*path{}
	link(s.Root, nil, paths)
	if s.V == 1 {
		s.Input, s.V1Input = s.V1Input, nil
		for _, p := range paths {
			for k, v := range p.V1Vars {
				p.Vars[k] = v
			}
			p.V1Vars = nil
		}
		s.V = snapshotVersion
		return s, true, nil
	}
	for k, b := range values {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, false, fmt.Errorf("decode snapshot: value %q: %w", k, err)
		}
		if k == inputKey {
			s.Input = v
			continue
		}
		id, name, ok := parseVarKey(k)
		if !ok {
			return nil, false, fmt.Errorf("decode snapshot: unknown value %q", k)
		}
		p := paths[id]
		if p == nil {
			return nil, false, fmt.Errorf("decode snapshot: variable %q of path %q, which does not exist", name, id)
		}
		p.Vars[name] = v
	}
	return s, false, nil
}

// link sets the in-memory parent pointers and indexes paths by ID.
func link(p *path, parent *path, index map[string]*path) {
	p.parent = parent
	index[p.ID] = p
	if p.Vars == nil {
		p.Vars = map[string]any{}
	}
	for _, c := range p.Children {
		link(c, p, index)
	}
}
