package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// TestRerunOrder: the records a rerun reuses are listed before the
// rerun's own, in the order they ran, whatever the milliseconds into the
// original run they started at: the original's slow steps (Index 9000)
// came later into their run than the rerun's first step (Index 0, or 1)
// into its own.
func TestRerunOrder(t *testing.T) {
	orig := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rerun := orig.Add(time.Hour)
	rec := func(name string, index int, started time.Time) store.StepRecord {
		return store.StepRecord{RunID: "run-1", Name: name, Index: index, Attempt: 1, Status: store.StepCompleted, StartedAt: started}
	}
	a := store.CopyForRerun(rec("a", 0, orig), "run-2")
	b := store.CopyForRerun(rec("b", 9000, orig.Add(9*time.Second)), "run-2")
	if a.Index != 0 || b.Index != 0 || b.RunID != "run-2" || !b.StartedAt.Equal(orig.Add(9*time.Second)) {
		t.Errorf("reused records: %+v, %+v; want Index 0, run-2, the original start", a, b)
	}
	recs := []store.StepRecord{
		rec("d", 1, rerun.Add(time.Millisecond)),
		rec("c", 0, rerun), // the rerun's first step, in the millisecond it started
		b, a,
	}
	store.SortSteps(recs)
	var got []string
	for _, r := range recs {
		got = append(got, r.Name)
	}
	if strings.Join(got, ",") != "a,b,c,d" {
		t.Errorf("listed %v, want [a b c d]", got)
	}
}
