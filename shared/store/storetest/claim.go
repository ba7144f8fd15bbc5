package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

const lease = 30 * time.Second

func runClaim(run, holder string, pid int, expires time.Time) store.RunClaim {
	return store.RunClaim{RunID: run, Holder: holder, PID: pid, Host: "host-" + holder, ExpiresAt: expires}
}

func sameClaim(t *testing.T, got, want store.RunClaim) {
	t.Helper()
	if got.RunID != want.RunID || got.Holder != want.Holder || got.PID != want.PID || got.Host != want.Host ||
		!got.ExpiresAt.Equal(want.ExpiresAt) || got.ExpiresAt.Location() != time.UTC {
		t.Fatalf("claim %+v, want %+v (expiry in UTC)", got, want)
	}
}

// testRunClaimRules: a claim held by "a" until t0+lease, met by another
// claim at instants below, at and above its expiry, by its own holder, and
// with a takeover naming it or another holder.
func testRunClaimRules(t *testing.T, s store.Store) {
	ctx := context.Background()
	expiry := t0.Add(lease)
	tests := []struct {
		name     string
		holder   string
		takeover string
		at       time.Time
		claimed  bool
	}{
		{"another holder before expiry", "b", "", expiry.Add(-time.Nanosecond), false},
		{"another holder at expiry", "b", "", expiry, true},
		{"another holder after expiry", "b", "", expiry.Add(time.Hour), true},
		{"the holder renews before expiry", "a", "", expiry.Add(-time.Nanosecond), true},
		{"the holder renews after expiry", "a", "", expiry.Add(time.Hour), true},
		{"takeover of the holder before expiry", "b", "a", t0, true},
		{"takeover of someone else before expiry", "b", "c", t0, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := fmt.Sprintf("run-%d", i)
			first := runClaim(run, "a", 100, expiry.In(elsewhere))
			got, claimed, err := s.ClaimRun(ctx, first, "", t0)
			must(t, err)
			if !claimed {
				t.Fatalf("first claim refused, stored %+v", got)
			}
			sameClaim(t, got, runClaim(run, "a", 100, expiry.UTC()))

			next := runClaim(run, tt.holder, 200, tt.at.Add(lease))
			got, claimed, err = s.ClaimRun(ctx, next, tt.takeover, tt.at)
			must(t, err)
			if claimed != tt.claimed {
				t.Fatalf("claimed = %v, want %v (stored %+v)", claimed, tt.claimed, got)
			}
			want := next
			if !tt.claimed {
				want = runClaim(run, "a", 100, expiry)
			}
			sameClaim(t, got, want)
			// What is stored now decides a third claimer at the same instant.
			third := runClaim(run, "z", 300, tt.at.Add(2*lease))
			got, claimed, err = s.ClaimRun(ctx, third, "", tt.at)
			must(t, err)
			if claimed {
				t.Fatalf("a third claimer took a claim in force: %+v", got)
			}
			sameClaim(t, got, want)
		})
	}
}

func testRunClaimRelease(t *testing.T, s store.Store) {
	ctx := context.Background()
	claim := func(run, holder string, at time.Time) (store.RunClaim, bool) {
		t.Helper()
		got, claimed, err := s.ClaimRun(ctx, runClaim(run, holder, 1, at.Add(lease)), "", at)
		must(t, err)
		return got, claimed
	}
	if _, ok := claim("r1", "a", t0); !ok {
		t.Fatal("first claim refused")
	}
	must(t, s.ReleaseRun(ctx, "r1", "b")) // not b's: left alone
	if got, ok := claim("r1", "b", t0); ok {
		t.Fatalf("release by another holder freed the run: %+v", got)
	}
	must(t, s.ReleaseRun(ctx, "r1", "a"))
	if got, ok := claim("r1", "b", t0); !ok {
		t.Fatalf("after its holder released it, the run is still claimed: %+v", got)
	}
	must(t, s.ReleaseRun(ctx, "never-claimed", "a"))
	mustErr(t, s.ReleaseRun(ctx, "", "a"), store.ErrInvalid)
	mustErr(t, s.ReleaseRun(ctx, "r1", ""), store.ErrInvalid)
	// Claims of different runs are independent.
	if got, ok := claim("r2", "a", t0); !ok {
		t.Fatalf("claim of another run refused: %+v", got)
	}
}

func testRunClaimInvalid(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		name  string
		claim store.RunClaim
		now   time.Time
		ok    bool
	}{
		{"valid", runClaim("r", "a", 1, t0.Add(time.Nanosecond)), t0, true},
		{"expires at now", runClaim("r2", "a", 1, t0), t0, false},
		{"expires before now", runClaim("r3", "a", 1, t0.Add(-time.Second)), t0, false},
		{"no run ID", runClaim("", "a", 1, t0.Add(lease)), t0, false},
		{"no holder", runClaim("r4", "", 1, t0.Add(lease)), t0, false},
		{"negative PID", runClaim("r5", "a", -1, t0.Add(lease)), t0, false},
		{"zero PID", runClaim("r6", "a", 0, t0.Add(lease)), t0, true},
		{"no time", runClaim("r7", "a", 1, t0.Add(lease)), time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, claimed, err := s.ClaimRun(ctx, tt.claim, "", tt.now)
			if tt.ok {
				must(t, err)
				if !claimed {
					t.Fatal("valid claim refused")
				}
				return
			}
			mustErr(t, err, store.ErrInvalid)
		})
	}
}

// testRunClaimConcurrent: of 20 claimers of one run at once, exactly one
// wins, and every loser is told who.
func testRunClaimConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n = 20
	var wg sync.WaitGroup
	type answer struct {
		holder  string
		stored  store.RunClaim
		claimed bool
		err     error
	}
	answers := make([]answer, n)
	for i := range n {
		wg.Go(func() {
			holder := fmt.Sprintf("h%02d", i)
			stored, claimed, err := s.ClaimRun(ctx, runClaim("contended", holder, i, t0.Add(lease)), "", t0)
			answers[i] = answer{holder, stored, claimed, err}
		})
	}
	wg.Wait()
	winner := ""
	for _, a := range answers {
		must(t, a.err)
		if a.claimed {
			if winner != "" {
				t.Fatalf("both %s and %s claimed the run", winner, a.holder)
			}
			winner = a.holder
		}
	}
	if winner == "" {
		t.Fatal("no claimer won")
	}
	for _, a := range answers {
		if !a.claimed && a.stored.Holder != winner {
			t.Errorf("%s was told the holder is %q, want %q", a.holder, a.stored.Holder, winner)
		}
	}
}
