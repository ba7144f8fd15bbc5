package main

import (
	"encoding/json"
	"testing"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/task"
)

// answer is a step invocation's answer: its result, or the answer a
// Stepline.RunEnded error carries (a step whose answer ends the run).
// Any other error fails the test.
func answer(t testing.TB, e *rietest.Emulator, res rietest.Result) task.Response {
	t.Helper()
	body := res.Body
	switch res.ErrorType {
	case "":
	case fault.NameRunEnded:
		body = []byte(res.Message)
	default:
		t.Fatalf("%s: %s\n%s", res.ErrorType, res.Message, e.Output())
	}
	var resp task.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return resp
}

// currentEvent is a sample step event as a definition compiled now sends
// it ($pipeline.run_ended_error), under a run of its own ("-current").
func currentEvent(t testing.TB, event []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(event, &m); err != nil {
		t.Fatal(err)
	}
	p, _ := m["pipeline"].(map[string]any)
	r, _ := m["run"].(map[string]any)
	if p == nil || r == nil {
		t.Fatalf("event without pipeline or run: %s", event)
	}
	p["run_ended_error"] = true
	r["id"] = r["id"].(string) + "-current"
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
