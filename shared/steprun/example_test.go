package steprun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

func ExampleHandler_Handle() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "steprun")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "runs.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	replies, _ := executor.ParseResponses("replies.yaml", []byte(
		`triage: [{confidence: 0.6, summary: "disk almost full", next_step_context: ""}]`))
	h := &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: replies})}

	step, _ := json.Marshal(pipeline.Step{Name: "triage", Executor: "scripted",
		PromptTemplate: "Triage the {{ severity }} alert",
		Gate:           pipeline.Gate{ConfidenceThreshold: 0.75, OnLowConfidence: pipeline.LowEscalate}})
	resp, err := h.Handle(ctx, task.Request{
		Mode:     task.ModeStep,
		Step:     step,
		Pipeline: task.Pipeline{Name: "alerts", Stage: pipeline.StageTesting, Include: []string{"severity"}, RunEndedError: true},
		Run:      task.Run{ID: "run-42"},
		Trigger:  json.RawMessage(`{"severity": "critical"}`),
		Attempt:  1,
	})
	// The gate ends the run: the Task fails with Stepline.RunEnded, which
	// the state machine catches and sends to its "Run escalated" state.
	ended, ok := steprun.EndedAnswer(err)
	if !ok {
		fmt.Println(resp.Status, err)
		return
	}
	fmt.Println(fault.Name(err))
	fmt.Println(ended.Status)
	fmt.Println(ended.Reason)
	// Output:
	// Stepline.RunEnded
	// escalated
	// step "triage" escalated: confidence 0.6 is below the threshold 0.75: disk almost full
}
