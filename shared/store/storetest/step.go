package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/store"
)

func testPutStepRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	full := fullStep("run-1", "diagnose", 0, 1)
	skipped := store.StepRecord{RunID: "run-1", Name: "notify", Index: 1000, Attempt: 1, Status: store.StepSkipped}
	must(t, s.PutStep(ctx, full))
	must(t, s.PutStep(ctx, skipped))
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	sameSteps(t, got, []store.StepRecord{full, skipped})
	if len(got) == 2 && (got[1].PrimaryConfidence != nil || got[1].CostUSD != nil || got[1].Output != nil || got[1].Flags != nil) {
		t.Errorf("absent fields came back set: %+v", got[1])
	}
}

func testPutStepRepeat(t *testing.T, s store.Store) {
	ctx := context.Background()
	rec := fullStep("run-1", "diagnose", 0, 1)
	must(t, s.PutStep(ctx, rec))
	must(t, s.PutStep(ctx, rec))
	// The same record with its times in another zone and its JSON
	// re-indented is still the same record.
	again := rec
	again.StartedAt, again.FinishedAt = rec.StartedAt.UTC(), rec.FinishedAt.UTC()
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "\t")
	must(t, enc.Encode(rec.Output))
	again.Output = json.RawMessage(buf.String())
	must(t, s.PutStep(ctx, again))
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	sameSteps(t, got, []store.StepRecord{rec})
}

func testPutStepConflict(t *testing.T, s store.Store) {
	ctx := context.Background()
	rec := fullStep("run-1", "diagnose", 0, 1)
	must(t, s.PutStep(ctx, rec))
	tests := []struct {
		name   string
		modify func(*store.StepRecord)
	}{
		{"other status", func(r *store.StepRecord) { r.Status = store.StepFailed; r.Error = "timeout" }},
		{"other output", func(r *store.StepRecord) { r.Output = json.RawMessage(`{"confidence":0.1}`) }},
		{"other confidence", func(r *store.StepRecord) { r.EffectiveConfidence = f64(0.51) }},
		{"no cost", func(r *store.StepRecord) { r.CostUSD = nil }},
		{"other finish time", func(r *store.StepRecord) { r.FinishedAt = r.FinishedAt.Add(time.Nanosecond) }},
		{"other index", func(r *store.StepRecord) { r.Index = 7 }},
		{"other flags", func(r *store.StepRecord) { r.Flags = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := rec
			tt.modify(&other)
			mustErr(t, s.PutStep(ctx, other), store.ErrConflict)
		})
	}
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	sameSteps(t, got, []store.StepRecord{rec})
}

func testPutStepCuts(t *testing.T, s store.Store) {
	ctx := context.Background()
	rec := fullStep("run-1", "diagnose", 0, 1)
	// "é" is two bytes; the cut must not split it.
	rec.RawResponse = strings.Repeat("a", store.MaxRawResponseBytes-1) + "é" + strings.Repeat("b", 100)
	rec.Prompt = strings.Repeat("p", store.MaxPromptBytes+1)
	rec.Error = strings.Repeat("e", store.MaxTextBytes+1)
	must(t, s.PutStep(ctx, rec))
	must(t, s.PutStep(ctx, rec)) // still a repeat after cutting
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	if len(got) != 1 {
		t.Fatalf("got %d records, want 1", len(got))
	}
	g := got[0]
	if g.RawResponse != strings.Repeat("a", store.MaxRawResponseBytes-1) || !utf8.ValidString(g.RawResponse) {
		t.Errorf("raw response cut to %d bytes (valid UTF-8: %v), want %d", len(g.RawResponse), utf8.ValidString(g.RawResponse), store.MaxRawResponseBytes-1)
	}
	if len(g.Prompt) != store.MaxPromptBytes || len(g.Error) != store.MaxTextBytes {
		t.Errorf("prompt %d bytes, error %d bytes; want %d and %d", len(g.Prompt), len(g.Error), store.MaxPromptBytes, store.MaxTextBytes)
	}
	wantFlags := "verifier_disagreed," + store.FlagRawResponseCut + "," + store.FlagPromptCut
	if strings.Join(g.Flags, ",") != wantFlags {
		t.Errorf("flags = %v, want %s", g.Flags, wantFlags)
	}
}

func testPutStepInvalid(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		name   string
		modify func(*store.StepRecord)
		want   error
	}{
		{"empty run ID", func(r *store.StepRecord) { r.RunID = "" }, store.ErrInvalid},
		{"empty name", func(r *store.StepRecord) { r.Name = "" }, store.ErrInvalid},
		{"attempt 0", func(r *store.StepRecord) { r.Attempt = 0 }, store.ErrInvalid},
		{"negative index", func(r *store.StepRecord) { r.Index = -1 }, store.ErrInvalid},
		{"unknown status", func(r *store.StepRecord) { r.Status = "done" }, store.ErrInvalid},
		{"output not JSON", func(r *store.StepRecord) { r.Output = json.RawMessage(`{"confidence":`) }, store.ErrInvalid},
		{"negative tokens", func(r *store.StepRecord) { r.OutputTokens = -3 }, store.ErrInvalid},
		{"output too large", func(r *store.StepRecord) {
			r.Output = json.RawMessage(`"` + strings.Repeat("o", store.MaxOutputBytes/2) + `"`)
			r.VerifierOutput = json.RawMessage(`"` + strings.Repeat("v", store.MaxOutputBytes/2) + `"`)
		}, store.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fullStep("run-1", "diagnose", 0, 1)
			tt.modify(&r)
			mustErr(t, s.PutStep(ctx, r), tt.want)
		})
	}
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	if len(got) != 0 {
		t.Errorf("refused records were stored: %d", len(got))
	}
}

func testListStepsOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	// Written out of order, as parallel branches and retries finish.
	recs := []store.StepRecord{
		fullStep("run-1", "report", 3000, 1),
		fullStep("run-1", "checks/logs", 1001, 1),
		fullStep("run-1", "diagnose", 0, 2),
		fullStep("run-1", "checks/disk", 1000, 1),
		fullStep("run-1", "diagnose", 0, 1),
		fullStep("run-1", "fan/10", 2000, 1),
		fullStep("run-1", "fan/2", 2000, 1),
		fullStep("run-1", "diagnose", 0, 10),
		fullStep("run-2", "other", 0, 1),
	}
	recs[2].Status, recs[4].Status = store.StepFailed, store.StepFailed
	for _, r := range recs {
		must(t, s.PutStep(ctx, r))
	}
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	var order []string
	for _, r := range got {
		order = append(order, fmt.Sprintf("%s#%d", r.Name, r.Attempt))
	}
	want := "diagnose#1,diagnose#2,diagnose#10,checks/disk#1,checks/logs#1,fan/2#1,fan/10#1,report#1"
	if strings.Join(order, ",") != want {
		t.Errorf("order = %s\nwant    %s", strings.Join(order, ","), want)
	}
	none, err := s.ListSteps(ctx, "no-such-run")
	must(t, err)
	if len(none) != 0 {
		t.Errorf("unknown run has %d steps", len(none))
	}
}

// testListStepsTies: records of one Index (steps whose Tasks started in
// the same millisecond) are in the order they started, to the
// nanosecond, whatever their names; a lower Index goes first whatever its
// start; records that started at the same instant go by name, a fan-out
// item's number compared as a number, then by attempt.
func testListStepsTies(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := func(name string, index int, started time.Duration, attempt int) store.StepRecord {
		r := fullStep("run-1", name, index, attempt)
		r.StartedAt = t0.Add(started)
		r.FinishedAt = r.StartedAt.Add(time.Millisecond)
		return r
	}
	ms := time.Millisecond
	recs := []store.StepRecord{
		at("aa", 1, ms+999_999, 1), // one nanosecond before the next millisecond
		at("mm", 1, ms+1, 1),       // one nanosecond into its millisecond
		at("zz", 1, ms, 1),         // at the millisecond's start
		at("first", 0, 5*ms, 1),    // a lower Index, a later start (a rerun's reused record)
		at("fan/10", 2, 2*ms, 1),   // a fan-out's items and join, started at one instant
		at("fan/2", 2, 2*ms, 2),
		at("fan/2", 2, 2*ms, 1),
		at("fan", 2, 2*ms, 1),
		at("fan-a/1", 2, 2*ms, 1), // another group's item
		at("late", 3, 2*ms, 1),    // a higher Index at the same start
	}
	// Written backwards, as records written in any order are listed.
	for i := len(recs) - 1; i >= 0; i-- {
		must(t, s.PutStep(ctx, recs[i]))
	}
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	var order []string
	for _, r := range got {
		order = append(order, fmt.Sprintf("%s#%d", r.Name, r.Attempt))
	}
	want := "first#1,zz#1,mm#1,aa#1,fan#1,fan-a/1#1,fan/2#1,fan/2#2,fan/10#1,late#1"
	if strings.Join(order, ",") != want {
		t.Errorf("order = %s\nwant    %s", strings.Join(order, ","), want)
	}
}

func testGetRunWithSteps(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := fullRun("run-1", "disk-full", t0)
	createRuns(t, s, r, fullRun("run-2", "disk-full", t0))
	steps := []store.StepRecord{fullStep("run-1", "diagnose", 0, 1), fullStep("run-1", "fix", 1000, 1)}
	must(t, s.PutStep(ctx, steps[1]))
	must(t, s.PutStep(ctx, steps[0]))
	must(t, s.PutStep(ctx, fullStep("run-2", "diagnose", 0, 1)))
	gotRun, gotSteps, err := s.GetRunWithSteps(ctx, "run-1")
	must(t, err)
	sameRun(t, gotRun, r)
	sameSteps(t, gotSteps, steps)

	_, _, err = s.GetRunWithSteps(ctx, "no-such-run")
	mustErr(t, err, store.ErrNotFound)
}
