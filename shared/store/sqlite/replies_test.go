package sqlite_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

func TestReplies(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	if _, err := s.GetReplies(ctx, "r1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a run never scripted: %v, want ErrNotFound", err)
	}
	if err := s.SetConsumed(ctx, "r1", map[string]int{"a": 1}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("counts of a run never scripted: %v, want ErrNotFound", err)
	}
	if err := s.SetReplies(ctx, "r1", sqlite.Replies{Source: "/tmp/r.yaml"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetReplies(ctx, "r1")
	if err != nil || got.Source != "/tmp/r.yaml" || len(got.Consumed) != 0 {
		t.Fatalf("got %+v, %v", got, err)
	}
	want := map[string]int{"triage": 2, "triage:verifier": 1}
	if err := s.SetConsumed(ctx, "r1", want); err != nil {
		t.Fatal(err)
	}
	if got, err = s.GetReplies(ctx, "r1"); err != nil || !reflect.DeepEqual(got.Consumed, want) {
		t.Fatalf("after SetConsumed: %+v, %v", got, err)
	}
	// Counts given again replace theirs; the others stay.
	if err := s.SetConsumed(ctx, "r1", map[string]int{"triage": 3, "fix": 1}); err != nil {
		t.Fatal(err)
	}
	want = map[string]int{"triage": 3, "triage:verifier": 1, "fix": 1}
	if got, err = s.GetReplies(ctx, "r1"); err != nil || !reflect.DeepEqual(got.Consumed, want) {
		t.Fatalf("after SetConsumed of some: %+v, %v", got, err)
	}
	// Nothing given changes nothing.
	if err := s.SetConsumed(ctx, "r1", nil); err != nil {
		t.Fatal(err)
	}
	if got, err = s.GetReplies(ctx, "r1"); err != nil || !reflect.DeepEqual(got.Consumed, want) {
		t.Fatalf("after SetConsumed of none: %+v, %v", got, err)
	}
	// Recording the run again replaces source and counts.
	if err := s.SetReplies(ctx, "r1", sqlite.Replies{Source: "/tmp/other.yaml", Consumed: map[string]int{"x": 1}}); err != nil {
		t.Fatal(err)
	}
	if got, err = s.GetReplies(ctx, "r1"); err != nil || got.Source != "/tmp/other.yaml" || !reflect.DeepEqual(got.Consumed, map[string]int{"x": 1}) {
		t.Fatalf("after SetReplies again: %+v, %v", got, err)
	}
	for name, err := range map[string]error{
		"no run ID":      s.SetReplies(ctx, "", sqlite.Replies{Source: "/x"}),
		"no source":      s.SetReplies(ctx, "r2", sqlite.Replies{}),
		"negative count": s.SetReplies(ctx, "r2", sqlite.Replies{Source: "/x", Consumed: map[string]int{"a": -1}}),
		"negative set":   s.SetConsumed(ctx, "r1", map[string]int{"a": -1}),
	} {
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
