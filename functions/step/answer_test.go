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
