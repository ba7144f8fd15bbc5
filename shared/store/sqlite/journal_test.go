package sqlite_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// TestJournalRoundTrip saves checkpoints whose keys, states and details
// need escaping or are absent, and reads back exactly what was saved:
// each value as its last checkpoint set it (a later deletion removes it,
// a later set brings it back), the last snapshot, every event in order
// with its detail as written apart from white space around it (JSON
// null kept apart from no detail).
func TestJournalRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	at := time.Date(2026, 12, 3, 9, 0, 0, 123456789, time.UTC)
	saves := []struct {
		vals   map[string]json.RawMessage
		events []store.HistoryEvent
	}{
		{map[string]json.RawMessage{`k"1\`: json.RawMessage(`{"a": "x\ny"}`), "k2": json.RawMessage(`null`), "日本": json.RawMessage(`[1, 2]`)},
			[]store.HistoryEvent{{Seq: 1, Type: "ExecutionStarted"}, {Seq: 2, Type: "StateEntered", State: "a\"b\u2028", Detail: json.RawMessage(`null`)}}},
		{map[string]json.RawMessage{"k2": nil, "k3": json.RawMessage(`"v"`)},
			[]store.HistoryEvent{{Seq: 3, Type: "TaskScheduled", State: "s", Detail: json.RawMessage(` {"p": 1} `)}}},
		{map[string]json.RawMessage{"k2": json.RawMessage(`2`), "k3": nil}, []store.HistoryEvent{{Seq: 4, Type: "StateExited", State: "s"}}},
	}
	var all []store.HistoryEvent
	for i, sv := range saves {
		for j := range sv.events {
			sv.events[j].Time = at.Add(time.Duration(sv.events[j].Seq) * time.Millisecond)
		}
		all = append(all, sv.events...)
		cp := store.Checkpoint{RunID: "r1", Seq: sv.events[len(sv.events)-1].Seq, UpdatedAt: at,
			Snapshot: json.RawMessage(`{"save":` + string(rune('0'+i)) + `}`), Values: sv.vals}
		if err := s.SaveCheckpoint(ctx, cp, sv.events); err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	cp, err := s.LoadCheckpoint(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{`k"1\`: `{"a": "x\ny"}`, "k2": `2`, "日本": `[1, 2]`}
	if cp.Seq != 4 || string(cp.Snapshot) != `{"save":2}` || !cp.UpdatedAt.Equal(at) || len(cp.Values) != len(want) {
		t.Fatalf("loaded %+v", cp)
	}
	for k, v := range want {
		if string(cp.Values[k]) != v {
			t.Errorf("value %q = %s, want %s", k, cp.Values[k], v)
		}
	}
	got, err := s.History(ctx, "r1")
	if err != nil || len(got) != len(all) {
		t.Fatalf("history: %d events, %v", len(got), err)
	}
	for i := range all {
		g, w := got[i], all[i]
		if g.Seq != w.Seq || g.Type != w.Type || g.State != w.State || !g.Time.Equal(w.Time) || string(g.Detail) != strings.TrimSpace(string(w.Detail)) || (g.Detail == nil) != (w.Detail == nil) {
			t.Errorf("event %d = %+v, want %+v", i, g, w)
		}
	}
	if h, err := s.History(ctx, "none"); err != nil || h != nil {
		t.Errorf("history of no run: %v, %v", h, err)
	}
}
