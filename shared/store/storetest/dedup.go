package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

func testClaimRules(t *testing.T, s store.Store) {
	ctx := context.Background()
	const window = 5 * time.Minute
	tests := []struct {
		name    string
		holder  store.RunStatus // "" = the holder's run was never created
		elapsed time.Duration   // from the holder's claim to the new claim
		window  time.Duration
		dedup   bool
	}{
		{"running, within window", store.RunRunning, time.Minute, window, true},
		{"running, long after window", store.RunRunning, 48 * time.Hour, window, true},
		{"waiting, after window", store.RunWaiting, time.Hour, window, true},
		{"completed, within window", store.RunCompleted, window - time.Nanosecond, window, true},
		{"completed, at window end", store.RunCompleted, window, window, false},
		{"failed, after window", store.RunFailed, time.Hour, window, false},
		{"interrupted, within window", store.RunInterrupted, time.Minute, window, true},
		{"interrupted, after window", store.RunInterrupted, time.Hour, window, false},
		{"completed, zero window", store.RunCompleted, time.Nanosecond, 0, false},
		{"running, zero window", store.RunRunning, time.Hour, 0, true},
		{"not created yet, within grace", "", store.DedupPendingGrace - time.Second, 0, true},
		{"not created yet, after grace", "", store.DedupPendingGrace, 0, false},
		{"not created yet, window longer than grace", "", store.DedupPendingGrace + time.Minute, time.Hour, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pipeline, fp := "p", fmt.Sprintf("fp-%d", i)
			holder, newcomer := fmt.Sprintf("holder-%d", i), fmt.Sprintf("new-%d", i)
			claimAt := t0.Add(time.Duration(i) * time.Hour)
			existing, claimed, err := s.ClaimDedup(ctx, pipeline, fp, holder, tt.window, claimAt)
			must(t, err)
			if !claimed || existing != "" {
				t.Fatalf("first claim: existing %q claimed %v", existing, claimed)
			}
			if tt.holder != "" {
				r := minimalRun(holder, pipeline, claimAt)
				r.Fingerprint = fp
				createRuns(t, s, r)
				if tt.holder != store.RunRunning {
					must(t, s.UpdateRun(ctx, holder, store.RunUpdate{Status: tt.holder}))
				}
			}
			existing, claimed, err = s.ClaimDedup(ctx, pipeline, fp, newcomer, tt.window, claimAt.Add(tt.elapsed))
			must(t, err)
			if tt.dedup {
				if claimed || existing != holder {
					t.Errorf("got existing %q claimed %v, want dedup against %q", existing, claimed, holder)
				}
				return
			}
			if !claimed || existing != "" {
				t.Errorf("got existing %q claimed %v, want the claim", existing, claimed)
			}
			// The newcomer holds the key now: a third run dedups against it.
			third, claimed, err := s.ClaimDedup(ctx, pipeline, fp, "third", tt.window, claimAt.Add(tt.elapsed+time.Nanosecond))
			must(t, err)
			if claimed || third != newcomer {
				t.Errorf("after takeover: got existing %q claimed %v, want %q", third, claimed, newcomer)
			}
		})
	}

	t.Run("the holder claims again", func(t *testing.T) {
		for _, at := range []time.Duration{0, time.Second, 48 * time.Hour} {
			existing, claimed, err := s.ClaimDedup(ctx, "p", "again", "run-a", window, t0.Add(at))
			must(t, err)
			if !claimed || existing != "" {
				t.Errorf("claim at +%v: existing %q claimed %v, want claimed", at, existing, claimed)
			}
		}
	})
}

func testClaimKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	claims := []struct{ pipeline, fp, run string }{
		{"p", "fp", "r1"}, {"p", "fp2", "r2"}, {"q", "fp", "r3"},
		// Keys that would collide if the parts were joined naively.
		{"p#fp", "x", "r4"}, {"p", "fp#x", "r5"},
	}
	for _, c := range claims {
		existing, claimed, err := s.ClaimDedup(ctx, c.pipeline, c.fp, c.run, time.Minute, t0)
		must(t, err)
		if !claimed || existing != "" {
			t.Errorf("claim (%q, %q) for %s: existing %q claimed %v", c.pipeline, c.fp, c.run, existing, claimed)
		}
	}
	existing, claimed, err := s.ClaimDedup(ctx, "p", "fp", "r9", time.Minute, t0)
	must(t, err)
	if claimed || existing != "r1" {
		t.Errorf("existing %q claimed %v, want dedup against r1", existing, claimed)
	}
}

func testClaimInvalid(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		name              string
		pipeline, fp, run string
		window            time.Duration
		now               time.Time
	}{
		{"no pipeline", "", "fp", "r", time.Minute, t0},
		{"no fingerprint", "p", "", "r", time.Minute, t0},
		{"no run", "p", "fp", "", time.Minute, t0},
		{"negative window", "p", "fp", "r", -time.Second, t0},
		{"no time", "p", "fp", "r", time.Minute, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, claimed, err := s.ClaimDedup(ctx, tt.pipeline, tt.fp, tt.run, tt.window, tt.now)
			mustErr(t, err, store.ErrInvalid)
			if claimed {
				t.Error("claimed despite the error")
			}
		})
	}
}

// claimRace runs n concurrent claimers of one key and checks that exactly one
// wins and every other one is pointed at the winner.
func claimRace(t *testing.T, s store.Store, n int, fp string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	type result struct {
		run, existing string
		claimed       bool
		err           error
	}
	results := make(chan result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			run := fmt.Sprintf("run-%02d", i)
			<-start
			existing, claimed, err := s.ClaimDedup(ctx, "p", fp, run, 5*time.Minute, now)
			results <- result{run, existing, claimed, err}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	var winners []string
	var losers []result
	for r := range results {
		switch {
		case r.err != nil:
			t.Errorf("%s: %v", r.run, r.err)
		case r.claimed:
			winners = append(winners, r.run)
		default:
			losers = append(losers, r)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d claimers won (%v), want exactly 1", len(winners), winners)
	}
	for _, l := range losers {
		if l.existing != winners[0] {
			t.Errorf("%s was pointed at %q, the winner is %s", l.run, l.existing, winners[0])
		}
	}
}

func testClaimConcurrent(t *testing.T, s store.Store) {
	claimRace(t, s, 50, "fp", t0)
}

func testClaimConcurrentTakeover(t *testing.T, s store.Store) {
	ctx := context.Background()
	_, claimed, err := s.ClaimDedup(ctx, "p", "fp", "old", 5*time.Minute, t0)
	must(t, err)
	if !claimed {
		t.Fatal("first claim refused")
	}
	createRuns(t, s, minimalRun("old", "p", t0))
	must(t, s.UpdateRun(ctx, "old", store.RunUpdate{Status: store.RunCompleted, CompletedAt: tp(t0.Add(time.Minute))}))
	claimRace(t, s, 50, "fp", t0.Add(time.Hour))
}

func testReleaseDedup(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	claim := func(run string) (string, bool) {
		t.Helper()
		existing, claimed, err := s.ClaimDedup(ctx, "p", "fp-release", run, time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		return existing, claimed
	}
	if _, ok := claim("first"); !ok {
		t.Fatal("first claim refused")
	}
	// Another run's release leaves the claim alone.
	must(t, s.ReleaseDedup(ctx, "p", "fp-release", "someone-else"))
	if existing, ok := claim("second"); ok || existing != "first" {
		t.Fatalf("claim after a stranger's release: existing %q claimed %v, want first's claim to hold", existing, ok)
	}
	// The holder's release (its run never started) frees the key at once.
	must(t, s.ReleaseDedup(ctx, "p", "fp-release", "first"))
	if existing, ok := claim("second"); !ok || existing != "" {
		t.Fatalf("claim after release: existing %q claimed %v, want claimed", existing, ok)
	}
	if err := s.ReleaseDedup(ctx, "", "fp", "r"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("release with an empty pipeline: %v, want ErrInvalid", err)
	}
}
