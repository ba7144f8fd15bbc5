package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "stepline")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "stepline.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, store.Run{ID: "run-1", Pipeline: "disk-full", Status: store.RunRunning, StartedAt: start}); err != nil {
		log.Fatal(err)
	}
	step := store.StepRecord{RunID: "run-1", Name: "diagnose", Attempt: 1, Status: store.StepCompleted,
		Output: json.RawMessage(`{"confidence":0.9,"summary":"logs filled the disk","next_step_context":""}`)}
	for range 2 { // a retried write stores the record once
		if err := s.PutStep(ctx, step); err != nil {
			log.Fatal(err)
		}
		if err := s.AddUsage(ctx, "run-1", "diagnose#1", store.Usage{InputTokens: 1200, OutputTokens: 300}); err != nil {
			log.Fatal(err)
		}
	}
	end := start.Add(time.Minute)
	if err := s.UpdateRun(ctx, "run-1", store.RunUpdate{Status: store.RunCompleted, CompletedAt: &end}); err != nil {
		log.Fatal(err)
	}

	run, steps, err := s.GetRunWithSteps(ctx, "run-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.ID, run.Status, run.Usage.InputTokens, run.Usage.OutputTokens)
	for _, st := range steps {
		fmt.Println(st.Name, st.Attempt, st.Status)
	}
	// Output:
	// run-1 completed 1200 300
	// diagnose 1 completed
}
