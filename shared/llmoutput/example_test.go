package llmoutput_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepline/stepline/shared/llmoutput"
)

func ExampleParse() {
	raw := "Here is my assessment:\n```json\n{'confidence': '0.8', summary: 'Disk on db-1 is 91% full', next_step_context: '', 'host': 'db-1',}\n```"
	res := llmoutput.Parse(raw, llmoutput.ParseOptions{})
	out, _ := json.Marshal(res.Output)
	fmt.Println(res.Outcome)
	fmt.Println(string(out))
	fmt.Println(res.Flags)

	res = llmoutput.Parse(`{"confidence": 85, "summary": "Disk full", "next_step_context": ""}`, llmoutput.ParseOptions{})
	fmt.Println(res.Outcome, res.Errors[0].Path, res.Errors[0].Code)
	// Output:
	// accepted
	// {"confidence":0.8,"summary":"Disk on db-1 is 91% full","next_step_context":"","proceed":true,"host":"db-1"}
	// [fenced surrounding_text trailing_comma single_quotes unquoted_keys number_string]
	// rejected confidence out_of_range
}

func ExampleResult_Feedback() {
	res := llmoutput.Parse(`{"confidence": "high", "summary": "Disk full"}`, llmoutput.ParseOptions{})
	fmt.Println(res.Feedback())
	// Output:
	// Your previous reply was rejected (2 problems):
	// - confidence: confidence must be a number from 0 to 1; got the string "high" [wrong_type]
	// - next_step_context: next_step_context is required: a string, "" when there is nothing to pass on [missing_field]
	// Your reply was:
	// ````
	// {"confidence": "high", "summary": "Disk full"}
	// ````
	// Reply again with exactly one JSON object that matches the required schema, and nothing before or after it: no prose, no code fence.
}

// canned answers from a list, as a model would over successive calls.
type canned []string

func (c *canned) Complete(_ context.Context, req llmoutput.Request) (llmoutput.Completion, error) {
	reply := (*c)[0]
	*c = (*c)[1:]
	return llmoutput.Completion{Content: reply, FinishReason: llmoutput.FinishStop, Model: "model-a", Provider: "example"}, nil
}

func ExampleComplete() {
	model := &canned{
		`{"confidence": 0.9, "summary": "A flag", "next_step_context": "", "task_type": "coding", "complexity": "simple", "tools_needed": [], "approach": "Edit main.go"}`,
		`{"confidence": 0.9, "summary": "A flag", "next_step_context": "", "task_type": "code", "complexity": "simple", "tools_needed": ["go"], "approach": "Edit main.go"}`,
	}
	msgs := []llmoutput.Message{{Role: llmoutput.RoleUser, Content: "Add a --verbose flag to the CLI"}}
	res, err := llmoutput.Complete(context.Background(), model, msgs, llmoutput.TaskAnalysisSchema())
	if err != nil {
		fmt.Println("transport error:", err)
		return
	}
	task, err := llmoutput.ReadTaskAnalysis(&res.Data)
	fmt.Println(res.Success, res.Attempts, res.Data.Confidence, task.TaskType, task.ToolsNeeded, err)
	// Output:
	// true 2 0.9 code [go] <nil>
}

func ExampleNew() {
	out := llmoutput.New(1, "Webhook delivered: HTTP 200", `{"queued":true}`)
	if err := out.SetExtra("status_code", 200); err != nil {
		fmt.Println(err)
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b), len(out.Validate()))
	// Output:
	// {"confidence":1,"summary":"Webhook delivered: HTTP 200","next_step_context":"{\"queued\":true}","proceed":true,"status_code":200} 0
}
