package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// tickAt is a whole-second tick: t0 without its nanoseconds.
var tickAt = t0.Truncate(time.Second)

func tickClaim(schedule string, tick time.Time, holder string) store.TickClaim {
	return store.TickClaim{Schedule: schedule, Tick: tick, Holder: holder, RunID: "run-" + holder, ClaimedAt: t0.Add(time.Second)}
}

func sameTick(t *testing.T, got, want store.TickClaim) {
	t.Helper()
	if got.Schedule != want.Schedule || !got.Tick.Equal(want.Tick) || got.Tick.Location() != time.UTC ||
		got.Holder != want.Holder || got.RunID != want.RunID || !got.ClaimedAt.Equal(want.ClaimedAt) {
		t.Fatalf("tick claim %+v, want %+v (times in UTC)", got, want)
	}
}

// testClaimTickRules: the first claim of a tick wins; its holder may
// claim it again, nobody else may; other ticks and schedules are
// independent, also a tick one second away.
func testClaimTickRules(t *testing.T, s store.Store) {
	ctx := context.Background()
	first := tickClaim("nightly", tickAt.In(elsewhere), "a")
	got, claimed, err := s.ClaimTick(ctx, first)
	must(t, err)
	if !claimed {
		t.Fatalf("first claim refused: stored %+v", got)
	}
	want := first
	want.Tick = tickAt
	sameTick(t, got, want)

	tests := []struct {
		name    string
		c       store.TickClaim
		claimed bool
		stored  store.TickClaim
	}{
		{"same holder again", tickClaim("nightly", tickAt, "a"), true, want},
		{"another holder, same tick", tickClaim("nightly", tickAt, "b"), false, want},
		{"another holder, same tick in another zone", tickClaim("nightly", tickAt.In(elsewhere), "c"), false, want},
		{"a second before", tickClaim("nightly", tickAt.Add(-time.Second), "b"), true, tickClaim("nightly", tickAt.Add(-time.Second), "b")},
		{"a second after", tickClaim("nightly", tickAt.Add(time.Second), "b"), true, tickClaim("nightly", tickAt.Add(time.Second), "b")},
		{"another schedule", tickClaim("hourly", tickAt, "b"), true, tickClaim("hourly", tickAt, "b")},
		{"a schedule named with separators", tickClaim("night#ly%", tickAt, "b"), true, tickClaim("night#ly%", tickAt, "b")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, claimed, err := s.ClaimTick(ctx, tt.c)
			must(t, err)
			if claimed != tt.claimed {
				t.Fatalf("claimed = %v, want %v (stored %+v)", claimed, tt.claimed, got)
			}
			sameTick(t, got, tt.stored)
		})
	}
}

func testClaimTickInvalid(t *testing.T, s store.Store) {
	ok := tickClaim("nightly", tickAt, "a")
	tests := []struct {
		name string
		edit func(*store.TickClaim)
	}{
		{"empty schedule", func(c *store.TickClaim) { c.Schedule = "" }},
		{"long schedule", func(c *store.TickClaim) { c.Schedule = strings.Repeat("s", store.MaxIDBytes+1) }},
		{"empty holder", func(c *store.TickClaim) { c.Holder = "" }},
		{"empty run ID", func(c *store.TickClaim) { c.RunID = "" }},
		{"zero tick", func(c *store.TickClaim) { c.Tick = time.Time{} }},
		{"tick with nanoseconds", func(c *store.TickClaim) { c.Tick = c.Tick.Add(time.Nanosecond) }},
		{"no claim time", func(c *store.TickClaim) { c.ClaimedAt = time.Time{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			_, _, err := s.ClaimTick(context.Background(), c)
			mustErr(t, err, store.ErrInvalid)
		})
	}
	// Nothing was written: the valid claim is still free.
	if _, claimed, err := s.ClaimTick(context.Background(), ok); err != nil || !claimed {
		t.Fatalf("claim after refused ones: claimed=%v err=%v", claimed, err)
	}
}

// testClaimTickConcurrent: many claimers of one tick at once, exactly one
// wins, and every loser is told who did.
func testClaimTickConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners, holders := 0, map[string]bool{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, claimed, err := s.ClaimTick(ctx, tickClaim("nightly", tickAt, fmt.Sprintf("h%02d", i)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if claimed {
				winners++
			}
			holders[got.Holder] = true
		}()
	}
	wg.Wait()
	if winners != 1 || len(holders) != 1 {
		t.Fatalf("%d winners, stored holders %v: want exactly one of each", winners, holders)
	}
}

// testListRunsStageOffset: the stage filter and pages by offset, alone
// and with the other filters, at the ends of the list and past them.
func testListRunsStageOffset(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := func(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }
	runs := []store.Run{
		fullRun("p1", "a", at(1)), fullRun("t1", "a", at(2)), fullRun("p2", "b", at(3)),
		fullRun("t2", "b", at(4)), fullRun("p3", "a", at(5)), fullRun("n1", "a", at(6)),
	}
	for i := range runs {
		switch runs[i].ID[0] {
		case 't':
			runs[i].Stage = store.StageTesting
		case 'n':
			runs[i].Stage = ""
		}
	}
	createRuns(t, s, runs...)
	must(t, s.UpdateRun(ctx, "p2", store.RunUpdate{Status: store.RunCompleted, CompletedAt: tp(at(7))}))
	tests := []struct {
		name string
		f    store.RunFilter
		want string
	}{
		{"production", store.RunFilter{Stage: store.StageProduction}, "p3,p2,p1"},
		{"testing", store.RunFilter{Stage: store.StageTesting}, "t2,t1"},
		{"production pipeline a", store.RunFilter{Stage: store.StageProduction, Pipeline: "a"}, "p3,p1"},
		{"production completed", store.RunFilter{Stage: store.StageProduction, Status: store.RunCompleted}, "p2"},
		{"testing running pipeline b", store.RunFilter{Stage: store.StageTesting, Status: store.RunRunning, Pipeline: "b"}, "t2"},
		{"offset 0", store.RunFilter{Offset: 0, Limit: 2}, "n1,p3"},
		{"offset 1", store.RunFilter{Offset: 1, Limit: 2}, "p3,t2"},
		{"offset to the last", store.RunFilter{Offset: 5, Limit: 2}, "p1"},
		{"offset at the end", store.RunFilter{Offset: 6, Limit: 2}, ""},
		{"offset past the end", store.RunFilter{Offset: 7}, ""},
		{"offset pipeline a", store.RunFilter{Pipeline: "a", Offset: 1, Limit: 2}, "p3,t1"},
		{"offset running", store.RunFilter{Status: store.RunRunning, Offset: 2}, "t2,t1,p1"},
		{"offset production", store.RunFilter{Stage: store.StageProduction, Offset: 1}, "p2,p1"},
		{"offset team sre", store.RunFilter{Team: "sre", Offset: 4}, "t1,p1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListRuns(ctx, tt.f)
			must(t, err)
			if ids(got) != tt.want {
				t.Errorf("ListRuns(%+v) = [%s], want [%s]", tt.f, ids(got), tt.want)
			}
		})
	}
	for _, f := range []store.RunFilter{
		{Stage: "staging"}, {Offset: -1}, {Offset: store.MaxRunOffset + 1},
	} {
		_, err := s.ListRuns(ctx, f)
		mustErr(t, err, store.ErrInvalid)
	}
	if _, err := s.ListRuns(ctx, store.RunFilter{Offset: store.MaxRunOffset}); err != nil {
		t.Fatalf("offset at the maximum: %v", err)
	}
}
