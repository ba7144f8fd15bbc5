package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// RunCheckpoints runs the conformance suite of store.Checkpointer.
// newCheckpointer must return a fresh, empty checkpointer for every call.
func RunCheckpoints(t *testing.T, newCheckpointer func(t *testing.T) store.Checkpointer) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, store.Checkpointer)
	}{
		{"save and load", testCheckpointRoundTrip},
		{"repeat is a no-op", testCheckpointRepeat},
		{"never goes backwards", testCheckpointBackwards},
		{"history must be contiguous", testCheckpointGaps},
		{"replayed events must match", testCheckpointReplay},
		{"unknown run", testCheckpointUnknown},
		{"invalid", testCheckpointInvalid},
		{"values are set, replaced and deleted", testCheckpointValues},
		{"values repeat or conflict", testCheckpointValuesRepeat},
		{"refused saves write no values", testCheckpointValuesRefused},
		{"many events and values at once", testCheckpointMany},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newCheckpointer(t)) })
	}
}

func event(seq int64, typ, state string) store.HistoryEvent {
	e := store.HistoryEvent{
		Seq:   seq,
		Time:  t0.Add(time.Duration(seq) * time.Millisecond).In(elsewhere),
		Type:  typ,
		State: state,
	}
	if typ == "TaskSucceeded" {
		e.Detail = json.RawMessage(fmt.Sprintf(`{"output": {"status": "completed", "seq": %d}}`, seq))
	}
	return e
}

// history returns events from..to of a plausible run.
func history(from, to int64) []store.HistoryEvent {
	types := []string{"StateEntered", "TaskScheduled", "TaskSucceeded", "StateExited"}
	var out []store.HistoryEvent
	for seq := from; seq <= to; seq++ {
		out = append(out, event(seq, types[(seq-1)%4], fmt.Sprintf("Step %d", (seq-1)/4)))
	}
	return out
}

func checkpoint(run string, seq int64) store.Checkpoint {
	return store.Checkpoint{
		RunID:     run,
		Seq:       seq,
		Snapshot:  json.RawMessage(fmt.Sprintf(`{"state":"Step %d","seq":%d,"vars":{"steps":{}}}`, seq/4, seq)),
		UpdatedAt: t0.Add(time.Duration(seq) * time.Millisecond).In(elsewhere),
	}
}

func sameCheckpoint(t *testing.T, got, want store.Checkpoint) {
	t.Helper()
	want.UpdatedAt = want.UpdatedAt.UTC()
	got.UpdatedAt = got.UpdatedAt.UTC()
	if g, w := canon(t, got), canon(t, want); g != w {
		t.Errorf("checkpoint differs\n got: %s\nwant: %s", g, w)
	}
}

func sameHistory(t *testing.T, got, want []store.HistoryEvent) {
	t.Helper()
	norm := func(in []store.HistoryEvent) []store.HistoryEvent {
		out := make([]store.HistoryEvent, len(in))
		for i, e := range in {
			e.Time = e.Time.UTC()
			out[i] = e
		}
		return out
	}
	if g, w := canon(t, norm(got)), canon(t, norm(want)); g != w {
		t.Errorf("history differs\n got: %s\nwant: %s", g, w)
	}
}

func testCheckpointRoundTrip(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 4), history(1, 4)))
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 9), history(5, 9)))
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-2", 2), history(1, 2)))
	// A checkpoint without new events is fine once history is complete.
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-3", 0), nil))

	got, err := c.LoadCheckpoint(ctx, "run-1")
	must(t, err)
	sameCheckpoint(t, got, checkpoint("run-1", 9))
	events, err := c.History(ctx, "run-1")
	must(t, err)
	sameHistory(t, events, history(1, 9))

	got, err = c.LoadCheckpoint(ctx, "run-2")
	must(t, err)
	sameCheckpoint(t, got, checkpoint("run-2", 2))
	events, err = c.History(ctx, "run-2")
	must(t, err)
	sameHistory(t, events, history(1, 2))

	got, err = c.LoadCheckpoint(ctx, "run-3")
	must(t, err)
	sameCheckpoint(t, got, checkpoint("run-3", 0))
}

func testCheckpointRepeat(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 4), history(1, 4)))
	tests := []struct {
		name   string
		cp     store.Checkpoint
		events []store.HistoryEvent
	}{
		{"same call", checkpoint("run-1", 4), history(1, 4)},
		{"same checkpoint, no events", checkpoint("run-1", 4), nil},
		{"same checkpoint, some events", checkpoint("run-1", 4), history(3, 4)},
		{"snapshot re-indented", func() store.Checkpoint {
			cp := checkpoint("run-1", 4)
			var b bytes.Buffer
			must(t, json.Indent(&b, cp.Snapshot, "", "  "))
			cp.Snapshot = b.Bytes()
			return cp
		}(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			must(t, c.SaveCheckpoint(ctx, tt.cp, tt.events))
			events, err := c.History(ctx, "run-1")
			must(t, err)
			sameHistory(t, events, history(1, 4))
		})
	}
	// Continuing with the events since the last save, and a few already
	// saved ones again, appends only the new ones.
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 6), history(3, 6)))
	events, err := c.History(ctx, "run-1")
	must(t, err)
	sameHistory(t, events, history(1, 6))
}

func testCheckpointBackwards(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 8), history(1, 8)))
	mustErr(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 7), nil), store.ErrConflict)
	mustErr(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 0), nil), store.ErrConflict)
	other := checkpoint("run-1", 8)
	other.Snapshot = json.RawMessage(`{"state":"elsewhere"}`)
	mustErr(t, c.SaveCheckpoint(ctx, other, nil), store.ErrConflict)
	got, err := c.LoadCheckpoint(ctx, "run-1")
	must(t, err)
	sameCheckpoint(t, got, checkpoint("run-1", 8))
}

func testCheckpointGaps(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 4), history(1, 4)))
	tests := []struct {
		name   string
		cp     store.Checkpoint
		events []store.HistoryEvent
	}{
		{"missing first new event", checkpoint("run-1", 6), history(6, 6)},
		{"missing last event", checkpoint("run-1", 6), history(5, 5)},
		{"no events for a new seq", checkpoint("run-1", 5), nil},
		{"hole in the middle", checkpoint("run-1", 8), append(history(5, 6), history(8, 8)...)},
		{"new run not starting at 1", checkpoint("run-2", 3), history(2, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustErr(t, c.SaveCheckpoint(ctx, tt.cp, tt.events), store.ErrInvalid)
		})
	}
	got, err := c.LoadCheckpoint(ctx, "run-1")
	must(t, err)
	sameCheckpoint(t, got, checkpoint("run-1", 4))
	events, err := c.History(ctx, "run-1")
	must(t, err)
	sameHistory(t, events, history(1, 4)) // refused saves wrote nothing
	_, err = c.LoadCheckpoint(ctx, "run-2")
	mustErr(t, err, store.ErrNotFound)
}

func testCheckpointReplay(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 4), history(1, 4)))
	changed := history(4, 6)
	changed[0].Type = "TaskFailed"
	mustErr(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 6), changed), store.ErrConflict)
	changed = history(3, 6)
	changed[0].Detail = json.RawMessage(`{"output":"other"}`)
	mustErr(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 6), changed), store.ErrConflict)
	events, err := c.History(ctx, "run-1")
	must(t, err)
	sameHistory(t, events, history(1, 4))
}

func testCheckpointUnknown(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	_, err := c.LoadCheckpoint(ctx, "no-such-run")
	mustErr(t, err, store.ErrNotFound)
	events, err := c.History(ctx, "no-such-run")
	must(t, err)
	if len(events) != 0 {
		t.Errorf("unknown run has %d events", len(events))
	}
}

func testCheckpointInvalid(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	tests := []struct {
		name   string
		modify func(*store.Checkpoint, *[]store.HistoryEvent)
	}{
		{"no run", func(cp *store.Checkpoint, _ *[]store.HistoryEvent) { cp.RunID = "" }},
		{"no snapshot", func(cp *store.Checkpoint, _ *[]store.HistoryEvent) { cp.Snapshot = nil }},
		{"snapshot not JSON", func(cp *store.Checkpoint, _ *[]store.HistoryEvent) { cp.Snapshot = json.RawMessage("{") }},
		{"no time", func(cp *store.Checkpoint, _ *[]store.HistoryEvent) { cp.UpdatedAt = time.Time{} }},
		{"negative seq", func(cp *store.Checkpoint, ev *[]store.HistoryEvent) { cp.Seq = -1; *ev = nil }},
		{"events out of order", func(_ *store.Checkpoint, ev *[]store.HistoryEvent) { (*ev)[0], (*ev)[1] = (*ev)[1], (*ev)[0] }},
		{"duplicate seq", func(_ *store.Checkpoint, ev *[]store.HistoryEvent) { (*ev)[1].Seq = 1 }},
		{"event beyond checkpoint", func(cp *store.Checkpoint, _ *[]store.HistoryEvent) { cp.Seq = 2 }},
		{"event without type", func(_ *store.Checkpoint, ev *[]store.HistoryEvent) { (*ev)[2].Type = "" }},
		{"detail not JSON", func(_ *store.Checkpoint, ev *[]store.HistoryEvent) { (*ev)[2].Detail = json.RawMessage("{") }},
		{"value not JSON", func(cp *store.Checkpoint, _ *[]store.HistoryEvent) {
			cp.Values = map[string]json.RawMessage{"var:x:": json.RawMessage(`{"a":`)}
		}},
		{"value with an empty key", func(cp *store.Checkpoint, _ *[]store.HistoryEvent) {
			cp.Values = map[string]json.RawMessage{"": json.RawMessage(`1`)}
		}},
		{"value key with a NUL byte", func(cp *store.Checkpoint, _ *[]store.HistoryEvent) {
			cp.Values = map[string]json.RawMessage{"a\x00b": json.RawMessage(`1`)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp, events := checkpoint("run-1", 4), history(1, 4)
			tt.modify(&cp, &events)
			mustErr(t, c.SaveCheckpoint(ctx, cp, events), store.ErrInvalid)
		})
	}
	_, err := c.LoadCheckpoint(ctx, "run-1")
	mustErr(t, err, store.ErrNotFound)
}

// values builds a Checkpoint.Values; a "" value stands for a deletion.
func values(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			m[kv[i]] = nil
			continue
		}
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

func withValues(cp store.Checkpoint, v map[string]json.RawMessage) store.Checkpoint {
	cp.Values = v
	return cp
}

func testCheckpointValues(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	must(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-1", 4), values(
		"input", `{"trigger":{"id":7}}`,
		"var:steps:", `{"a":{"summary":"one"}}`,
		"var:x:/Fan#0", `1`,
	)), history(1, 4)))
	must(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-2", 2), values("var:steps:", `"run 2"`)), history(1, 2)))
	// A checkpoint without values keeps them all.
	must(t, c.SaveCheckpoint(ctx, checkpoint("run-1", 6), history(5, 6)))
	got, err := c.LoadCheckpoint(ctx, "run-1")
	must(t, err)
	sameCheckpoint(t, got, withValues(checkpoint("run-1", 6), values(
		"input", `{"trigger":{"id":7}}`,
		"var:steps:", `{"a":{"summary":"one"}}`,
		"var:x:/Fan#0", `1`,
	)))
	// Replace one, delete one (and one never stored), add one.
	must(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-1", 9), values(
		"var:steps:", `{"a":{"summary":"one"},"b":{"summary":"two"}}`,
		"var:x:/Fan#0", "",
		"var:never:", "",
		"var:y:", `[true, null]`,
	)), history(7, 9)))
	got, err = c.LoadCheckpoint(ctx, "run-1")
	must(t, err)
	sameCheckpoint(t, got, withValues(checkpoint("run-1", 9), values(
		"input", `{"trigger":{"id":7}}`,
		"var:steps:", `{"a":{"summary":"one"},"b":{"summary":"two"}}`,
		"var:y:", `[true,null]`,
	)))
	// Another run's values are its own.
	got, err = c.LoadCheckpoint(ctx, "run-2")
	must(t, err)
	sameCheckpoint(t, got, withValues(checkpoint("run-2", 2), values("var:steps:", `"run 2"`)))
	// Deleting every value leaves none.
	must(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-2", 3), values("var:steps:", "")), history(3, 3)))
	got, err = c.LoadCheckpoint(ctx, "run-2")
	must(t, err)
	if got.Values != nil {
		t.Errorf("values after deleting them all: %v", got.Values)
	}
}

func testCheckpointValuesRepeat(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	saved := withValues(checkpoint("run-1", 4), values("var:a:", `{"n": 1}`, "var:b:", `"b"`, "var:gone:", ""))
	must(t, c.SaveCheckpoint(ctx, saved, history(1, 4)))
	tests := []struct {
		name string
		cp   store.Checkpoint
		want error // nil: accepted as a repeat
	}{
		{"same call", saved, nil},
		{"values re-indented", withValues(checkpoint("run-1", 4), values("var:a:", "{\n  \"n\": 1\n}", "var:b:", `"b"`)), nil},
		{"some of the values", withValues(checkpoint("run-1", 4), values("var:b:", `"b"`)), nil},
		{"a different value", withValues(checkpoint("run-1", 4), values("var:a:", `{"n": 2}`)), store.ErrConflict},
		{"a value that is not stored", withValues(checkpoint("run-1", 4), values("var:c:", `3`)), store.ErrConflict},
		{"deleting a stored value", withValues(checkpoint("run-1", 4), values("var:b:", "")), store.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.SaveCheckpoint(ctx, tt.cp, nil)
			if tt.want == nil {
				must(t, err)
			} else {
				mustErr(t, err, tt.want)
			}
			got, err := c.LoadCheckpoint(ctx, "run-1")
			must(t, err)
			sameCheckpoint(t, got, withValues(checkpoint("run-1", 4), values("var:a:", `{"n":1}`, "var:b:", `"b"`)))
		})
	}
}

func testCheckpointValuesRefused(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	must(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-1", 4), values("var:a:", `1`)), history(1, 4)))
	mustErr(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-1", 3), values("var:a:", `2`)), nil), store.ErrConflict)
	mustErr(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-1", 8), values("var:a:", "", "var:b:", `2`)), history(6, 8)), store.ErrInvalid)
	changed := history(4, 6)
	changed[0].Type = "TaskFailed"
	mustErr(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-1", 6), values("var:a:", `3`)), changed), store.ErrConflict)
	got, err := c.LoadCheckpoint(ctx, "run-1")
	must(t, err)
	sameCheckpoint(t, got, withValues(checkpoint("run-1", 4), values("var:a:", `1`)))
}

func testCheckpointMany(t *testing.T, c store.Checkpointer) {
	ctx := context.Background()
	all := map[string]json.RawMessage{}
	first := map[string]json.RawMessage{}
	for i := range 37 {
		k, v := fmt.Sprintf("var:v%d:", i), json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
		first[k], all[k] = v, v
	}
	must(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-1", 40), first), history(1, 40)))
	second := map[string]json.RawMessage{}
	for i := range 37 {
		k := fmt.Sprintf("var:v%d:", i)
		switch {
		case i < 20:
			second[k] = nil
			delete(all, k)
		case i < 30:
			second[k] = json.RawMessage(fmt.Sprintf(`[%d]`, i))
			all[k] = second[k]
		}
	}
	must(t, c.SaveCheckpoint(ctx, withValues(checkpoint("run-1", 75), second), history(41, 75)))
	got, err := c.LoadCheckpoint(ctx, "run-1")
	must(t, err)
	sameCheckpoint(t, got, withValues(checkpoint("run-1", 75), all))
	events, err := c.History(ctx, "run-1")
	must(t, err)
	sameHistory(t, events, history(1, 75))
}
