package engine_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/engine/enginetest"
)

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
		Journal:   enginetest.NewJournal(), // in memory; a real one persists (package shared/store/sqlite)
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
