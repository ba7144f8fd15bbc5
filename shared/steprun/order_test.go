package steprun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/task"
)

// TestRecordsInExecutionOrder: steps whose Tasks start within one
// millisecond of each other (one Index) are listed in the order they
// started, not by name; a step that starts in the next millisecond comes
// after them whatever its start within it.
func TestRecordsInExecutionOrder(t *testing.T) {
	const reply = `['{"confidence": 0.9, "summary": "s", "next_step_context": ""}']`
	e := newEnv(t, "zz: "+reply+"\nmm: "+reply+"\naa: "+reply+"\nab: "+reply+"\n")
	base := testStart.Add(time.Second) // Index 1000
	for _, s := range []struct {
		name string
		at   time.Duration
	}{
		{"zz", 0},                         // at the millisecond's start
		{"mm", 999 * time.Microsecond},    // below the next one
		{"aa", 999_999 * time.Nanosecond}, // one nanosecond below it
		{"ab", time.Millisecond},          // at it: Index 1001
	} {
		e.clock = base.Add(s.at)
		if _, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, seqStep(s.name, "hi"))); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := e.st.ListSteps(context.Background(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Name)
	}
	if strings.Join(got, ",") != "zz,mm,aa,ab" {
		t.Errorf("records listed %v, want [zz mm aa ab] (the order their Tasks started)", got)
	}
}
