package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/store"
)

// journal is a minimal in-memory Journal for the example.
type journal struct {
	mu   sync.Mutex
	cps  map[string]store.Checkpoint
	hist map[string][]store.HistoryEvent
}

func (j *journal) SaveCheckpoint(_ context.Context, cp store.Checkpoint, evs []store.HistoryEvent) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cps[cp.RunID] = cp
	j.hist[cp.RunID] = append(j.hist[cp.RunID], evs...)
	return nil
}

func (j *journal) LoadCheckpoint(_ context.Context, id string) (store.Checkpoint, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	cp, ok := j.cps[id]
	if !ok {
		return cp, store.ErrNotFound
	}
	return cp, nil
}

func (j *journal) History(_ context.Context, id string) ([]store.HistoryEvent, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.hist[id], nil
}

func Example() {
	def, err := asl.Parse([]byte(`{
	  "QueryLanguage": "JSONata",
	  "StartAt": "Greet",
	  "States": {
	    "Greet": {
	      "Type": "Task",
	      "Resource": "arn:aws:states:::lambda:invoke",
	      "Arguments": {"FunctionName": "greeter", "Payload": {"name": "{% $states.input.name %}"}},
	      "Output": "{% $states.result.Payload %}",
	      "End": true
	    }
	  }
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	greeter := func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		var in struct{ Name string }
		if err := json.Unmarshal(p, &in); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]string{"greeting": "hello " + in.Name})
	}
	e := engine.New(engine.Config{
		Journal:   &journal{cps: map[string]store.Checkpoint{}, hist: map[string][]store.HistoryEvent{}},
		Resources: engine.Functions{"greeter": greeter},
	})
	res, err := e.Start(context.Background(), "run-1", def, json.RawMessage(`{"name":"Ada"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, string(res.Output))
	// Output: SUCCEEDED {"greeting":"hello Ada"}
}
