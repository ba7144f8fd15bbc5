package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/store"
)

// savesJournal is a memJournal that keeps what each save carried.
type savesJournal struct {
	*memJournal
	mu   sync.Mutex
	list []save
}

type save struct {
	events   []string // types
	snapshot string
	values   map[string]string // "" for a deletion
}

func newSavesJournal() *savesJournal { return &savesJournal{memJournal: newJournal()} }

func (j *savesJournal) SaveCheckpoint(ctx context.Context, cp store.Checkpoint, events []store.HistoryEvent) error {
	if err := j.memJournal.SaveCheckpoint(ctx, cp, events); err != nil {
		return err
	}
	s := save{events: eventTypes(events), snapshot: string(cp.Snapshot), values: map[string]string{}}
	for k, v := range cp.Values {
		s.values[k] = string(v)
	}
	j.mu.Lock()
	j.list = append(j.list, s)
	j.mu.Unlock()
	return nil
}

func (j *savesJournal) saves() []save {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]save(nil), j.list...)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// pureThenTask is: Start (Pass, assigns) → Route (Choice) → Work (Task)
// → Again (Pass, assigns again) → Done (Succeed).
func pureThenTask(t *testing.T) *asl.StateMachine {
	t.Helper()
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Start"}
	must(t, def.States.Add("Start", &asl.Pass{Assign: map[string]any{
		"same": "unchanged", "big": asl.Expr("$pad('', 20000, 'x')"), "n": 1}, Next: "Route"}))
	must(t, def.States.Add("Route", &asl.Choice{Choices: []asl.ChoiceRule{
		{Condition: asl.Expr("$n = 1"), Next: "Work"}}, Default: "Done"}))
	must(t, def.States.Add("Work", &asl.Task{Resource: asl.ResourceLambdaInvoke,
		Arguments: map[string]any{"FunctionName": "echo", "Payload": map[string]any{"n": asl.Expr("$n")}},
		Output:    asl.Expr("$states.result.Payload"), Next: "Again"}))
	must(t, def.States.Add("Again", &asl.Pass{Assign: map[string]any{"same": "unchanged", "n": 2}, Next: "Done"}))
	must(t, def.States.Add("Done", &asl.Succeed{Output: map[string]any{"n": asl.Expr("$n"), "len": asl.Expr("$length($big)")}}))
	return def
}

func TestCheckpointsWhenDurabilityNeedsThem(t *testing.T) {
	j := newSavesJournal()
	e := New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"echo": echo}})
	res, err := e.Start(context.Background(), "c", pureThenTask(t), json.RawMessage(`{"k":"v"}`))
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `{"n":2,"len":20000}`)

	saves := j.saves()
	if len(saves) != 2 {
		for _, s := range saves {
			t.Logf("save: %v", s.events)
		}
		t.Fatalf("%d checkpoints, want 2: before the task runs and at the end", len(saves))
	}
	first, last := saves[0], saves[1]
	if want := "ExecutionStarted StateEntered:Start StateExited:Start StateEntered:Route StateExited:Route " +
		"StateEntered:Work TaskScheduled:Work"; strings.Join(first.events, " ") != want {
		t.Errorf("first checkpoint holds %v, want %s", first.events, want)
	}
	if want := "TaskSucceeded:Work StateExited:Work StateEntered:Again StateExited:Again " +
		"StateEntered:Done StateExited:Done ExecutionSucceeded"; strings.Join(last.events, " ") != want {
		t.Errorf("last checkpoint holds %v, want %s", last.events, want)
	}
	if got, want := keys(first.values), []string{"input", "var:big:", "var:n:", "var:same:"}; !slices.Equal(got, want) {
		t.Errorf("first checkpoint writes values %v, want %v", got, want)
	}
	// Only n changed: same was assigned the value it had, big and the
	// input were not touched.
	if got, want := keys(last.values), []string{"var:n:"}; !slices.Equal(got, want) {
		t.Errorf("last checkpoint writes values %v, want %v", got, want)
	}
	if last.values["var:n:"] != "2" || first.values["input"] != `{"k":"v"}` {
		t.Errorf("values: first %v, last %v", first.values["input"], last.values["var:n:"])
	}
	// The snapshot holds neither the variables nor the input.
	for i, s := range saves {
		if len(s.snapshot) > 2000 || strings.Contains(s.snapshot, "xxxx") {
			t.Errorf("snapshot %d is %d bytes: %.200s", i, len(s.snapshot), s.snapshot)
		}
	}
	// And the stored checkpoint has them all.
	cp, err := j.LoadCheckpoint(context.Background(), "c")
	must(t, err)
	if got, want := len(cp.Values), 4; got != want || string(cp.Values["var:n:"]) != "2" {
		t.Errorf("stored values: %d (%s), want %d with n = 2", got, keys(asStrings(cp.Values)), want)
	}
}

func asStrings(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func TestPureLoopIsCheckpointedEveryMaxPendingEvents(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Count"}
	must(t, def.States.Add("Count", &asl.Pass{Assign: map[string]any{"i": asl.Expr("$exists($i) ? $i + 1 : 1")}, Next: "More"}))
	must(t, def.States.Add("More", &asl.Choice{Choices: []asl.ChoiceRule{
		{Condition: asl.Expr("$i < 700"), Next: "Count"}}, Default: "Done"}))
	must(t, def.States.Add("Done", &asl.Succeed{Output: asl.Expr("$i")}))
	j := newSavesJournal()
	res, err := New(Config{Journal: j, Clock: newClock(true)}).Start(context.Background(), "loop", def, nil)
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `700`)
	// A checkpoint is due once maxPendingEvents are pending: after the
	// step that reaches the count, which records a few events.
	saves := j.saves()
	if len(saves) < 2 {
		t.Fatalf("%d checkpoints", len(saves))
	}
	for i, s := range saves {
		last := i == len(saves)-1
		if n := len(s.events); n >= maxPendingEvents+3 || !last && n < maxPendingEvents {
			t.Errorf("checkpoint %d holds %d events, want about %d", i, n, maxPendingEvents)
		}
	}
}

// TestScopeVariablesAreDeleted runs a Parallel whose branches assign
// variables of their own: they are saved while the branches wait, and
// deleted when the branches end.
func TestScopeVariablesAreDeleted(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Both"}
	branch := func(name string) asl.Branch {
		b := asl.Branch{StartAt: name + "Set"}
		must(t, b.States.Add(name+"Set", &asl.Pass{Assign: map[string]any{"local" + name: name}, Next: name + "Work"}))
		must(t, b.States.Add(name+"Work", &asl.Task{Resource: asl.ResourceLambdaInvoke,
			Arguments: map[string]any{"FunctionName": "echo", "Payload": asl.Expr("$local" + name)},
			Output:    asl.Expr("$states.result.Payload & $local" + name), End: true}))
		return b
	}
	must(t, def.States.Add("Both", &asl.Parallel{Branches: []asl.Branch{branch("A"), branch("B")},
		Assign: map[string]any{"out": asl.Expr("$states.result")}, Next: "Done"}))
	must(t, def.States.Add("Done", &asl.Succeed{Output: asl.Expr("$out")}))
	j := newSavesJournal()
	res, err := New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"echo": echo}}).
		Start(context.Background(), "p", def, nil)
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `["AA","BB"]`)
	saves := j.saves()
	if got, want := keys(saves[0].values), []string{"input", "var:localA:/Both#0", "var:localB:/Both#1"}; !slices.Equal(got, want) {
		t.Errorf("first checkpoint writes %v, want %v", got, want)
	}
	cp, err := j.LoadCheckpoint(context.Background(), "p")
	must(t, err)
	if got, want := keys(asStrings(cp.Values)), []string{"input", "var:out:"}; !slices.Equal(got, want) {
		t.Errorf("stored values at the end: %v, want %v", got, want)
	}
}

// TestResumeVersion1Snapshot resumes a run whose checkpoint was written in
// the first format, with the input and the variables in the snapshot.
func TestResumeVersion1Snapshot(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Set"}
	must(t, def.States.Add("Set", &asl.Pass{Assign: map[string]any{"greeting": asl.Expr("'hi ' & $states.input.name")}, Next: "Ask"}))
	must(t, def.States.Add("Ask", &asl.Task{Resource: asl.ResourceLambdaInvokeWaitForTaskToken,
		Arguments: map[string]any{"FunctionName": "human", "Payload": map[string]any{"token": asl.Expr("$states.context.Task.Token")}},
		Next:      "Done"}))
	must(t, def.States.Add("Done", &asl.Succeed{Output: map[string]any{
		"greeting": asl.Expr("$greeting"), "answer": asl.Expr("$states.input"), "name": asl.Expr("$states.context.Execution.Input.name")}}))
	j, h := newJournal(), &human{}
	e := New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"human": h.handler}})
	res, err := e.Start(context.Background(), "old", def, json.RawMessage(`{"name":"ann"}`))
	mustResult(t, res, err, StatusWaiting)

	// Rewrite the checkpoint as version 1 wrote it.
	j.mu.Lock()
	cp := j.cps["old"]
	var snap map[string]any
	must(t, json.Unmarshal(cp.Snapshot, &snap))
	vals := j.values["old"]
	var input, greeting any
	must(t, json.Unmarshal(vals["input"], &input))
	must(t, json.Unmarshal(vals["var:greeting:"], &greeting))
	snap["v"], snap["input"] = 1, input
	snap["root"].(map[string]any)["vars"] = map[string]any{"greeting": greeting}
	cp.Snapshot, _ = json.Marshal(snap)
	j.cps["old"] = cp
	j.values["old"] = nil
	j.mu.Unlock()

	e = New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"human": h.handler}, Definitions: defs{"": def}})
	res, err = e.SendTaskSuccess(context.Background(), h.last(), json.RawMessage(`"yes"`))
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `{"greeting":"hi ann","answer":"yes","name":"ann"}`)
	stored, err := j.LoadCheckpoint(context.Background(), "old")
	must(t, err)
	if got := fmt.Sprint(keys(asStrings(stored.Values))); got != "[input var:greeting:]" {
		t.Errorf("values after the first checkpoint in the new format: %s", got)
	}
}

// TestDefinitionSizeLimit runs a definition over Step Functions' 1 MiB
// limit: refused by default, run when Config.MaxDefinitionBytes allows it.
func TestDefinitionSizeLimit(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Big"}
	must(t, def.States.Add("Big", &asl.Pass{Output: map[string]any{"pad": strings.Repeat("x", asl.MaxDefinitionBytes)}, Next: "Done"}))
	must(t, def.States.Add("Done", &asl.Succeed{Output: asl.Expr("$length($states.input.pad)")}))
	tests := []struct {
		name    string
		max     int
		wantErr string
	}{
		{"default limit", 0, "over the 1048576-byte limit"},
		{"a lower limit", 1000, "over the 1000-byte limit"},
		{"raised", 2 << 20, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Config{Journal: newJournal(), Clock: newClock(true), MaxDefinitionBytes: tt.max})
			res, err := e.Start(context.Background(), "big", def, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			res = mustResult(t, res, err, StatusSucceeded)
			jsonEqual(t, res.Output, fmt.Sprint(asl.MaxDefinitionBytes))
		})
	}
	// Other problems are still reported for a large definition.
	bad := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Big"}
	must(t, bad.States.Add("Big", &asl.Pass{Output: map[string]any{"pad": strings.Repeat("x", asl.MaxDefinitionBytes)}, Next: "Nowhere"}))
	_, err := New(Config{Journal: newJournal(), MaxDefinitionBytes: 2 << 20}).Start(context.Background(), "bad", bad, nil)
	if err == nil || !strings.Contains(err.Error(), "Nowhere") {
		t.Errorf("err = %v, want the missing Next target", err)
	}
}

// TestVariable reads a waiting run's top-level variables from its
// checkpoint, in either format, and nothing for a variable it does not
// have or a run that does not exist.
func TestVariable(t *testing.T) {
	ctx := context.Background()
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Set"}
	must(t, def.States.Add("Set", &asl.Pass{Assign: map[string]any{
		"greeting": asl.Expr("'hi ' & $states.input.name"), "facts": map[string]any{"name": "p", "n": 2}}, Next: "Ask"}))
	must(t, def.States.Add("Ask", &asl.Task{Resource: asl.ResourceLambdaInvokeWaitForTaskToken,
		Arguments: map[string]any{"FunctionName": "human", "Payload": map[string]any{"token": asl.Expr("$states.context.Task.Token")}},
		Next:      "Done"}))
	must(t, def.States.Add("Done", &asl.Succeed{}))
	j, h := newJournal(), &human{}
	e := New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"human": h.handler}})
	res, err := e.Start(ctx, "r", def, json.RawMessage(`{"name":"ann"}`))
	mustResult(t, res, err, StatusWaiting)

	check := func(when string) {
		t.Helper()
		v, ok, err := e.Variable(ctx, "r", "greeting")
		if err != nil || !ok || v != "hi ann" {
			t.Errorf("%s: greeting = %v, %v, %v; want hi ann", when, v, ok, err)
		}
		v, ok, err = e.Variable(ctx, "r", "facts")
		if b, _ := json.Marshal(v); err != nil || !ok || string(b) != `{"n":2,"name":"p"}` {
			t.Errorf("%s: facts = %s, %v, %v", when, b, ok, err)
		}
		if v, ok, err := e.Variable(ctx, "r", "missing"); err != nil || ok || v != nil {
			t.Errorf("%s: missing = %v, %v, %v; want nothing", when, v, ok, err)
		}
	}
	check("current format")

	// The same checkpoint as version 1 wrote it: the variables in the
	// snapshot.
	j.mu.Lock()
	cp := j.cps["r"]
	var snap map[string]any
	must(t, json.Unmarshal(cp.Snapshot, &snap))
	vars := map[string]any{}
	for k, raw := range j.values["r"] {
		if name, ok := strings.CutPrefix(k, "var:"); ok {
			var v any
			must(t, json.Unmarshal(raw, &v))
			vars[strings.TrimSuffix(name, ":")] = v
		}
	}
	snap["v"], snap["input"] = 1, map[string]any{"name": "ann"}
	snap["root"].(map[string]any)["vars"] = vars
	cp.Snapshot, _ = json.Marshal(snap)
	j.cps["r"] = cp
	j.values["r"] = nil
	j.mu.Unlock()
	check("version 1")

	if _, _, err := e.Variable(ctx, "nobody", "greeting"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a run without a checkpoint: %v, want store.ErrNotFound", err)
	}
}
