package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stepline/stepline/shared/store"
)

func testAddUsage(t *testing.T, s store.Store) {
	ctx := context.Background()
	createRuns(t, s, minimalRun("run-1", "p", t0))
	check := func(want store.Usage) {
		t.Helper()
		got, err := s.GetRun(ctx, "run-1")
		must(t, err)
		if g, w := canon(t, got.Usage), canon(t, want); g != w {
			t.Errorf("usage = %s, want %s", g, w)
		}
	}
	must(t, s.AddUsage(ctx, "run-1", "diagnose#1", store.Usage{InputTokens: 100, OutputTokens: 10}))
	check(store.Usage{InputTokens: 100, OutputTokens: 10}) // unpriced stays nil
	must(t, s.AddUsage(ctx, "run-1", "diagnose#2", store.Usage{InputTokens: 50, OutputTokens: 5, CostUSD: f64(0.25)}))
	check(store.Usage{InputTokens: 150, OutputTokens: 15, CostUSD: f64(0.25)})
	must(t, s.AddUsage(ctx, "run-1", "diagnose#2", store.Usage{InputTokens: 50, OutputTokens: 5, CostUSD: f64(0.25)}))
	check(store.Usage{InputTokens: 150, OutputTokens: 15, CostUSD: f64(0.25)}) // the repeat counted once
	must(t, s.AddUsage(ctx, "run-1", "verify#1", store.Usage{InputTokens: 1, CostUSD: f64(0.125)}))
	must(t, s.AddUsage(ctx, "run-1", "notify#1", store.Usage{}))
	check(store.Usage{InputTokens: 151, OutputTokens: 15, CostUSD: f64(0.375)})
	// UpdateRun with Usage replaces the totals; AddUsage keeps counting from there.
	must(t, s.UpdateRun(ctx, "run-1", store.RunUpdate{Status: store.RunRunning, Usage: &store.Usage{InputTokens: 1000}}))
	check(store.Usage{InputTokens: 1000})
	must(t, s.AddUsage(ctx, "run-1", "final#1", store.Usage{OutputTokens: 7, CostUSD: f64(0.5)}))
	check(store.Usage{InputTokens: 1000, OutputTokens: 7, CostUSD: f64(0.5)})
}

func testAddUsageErrors(t *testing.T, s store.Store) {
	ctx := context.Background()
	createRuns(t, s, minimalRun("run-1", "p", t0))
	mustErr(t, s.AddUsage(ctx, "no-such-run", "k", store.Usage{InputTokens: 1}), store.ErrNotFound)
	mustErr(t, s.AddUsage(ctx, "run-1", "", store.Usage{InputTokens: 1}), store.ErrInvalid)
	mustErr(t, s.AddUsage(ctx, "run-1", "k", store.Usage{InputTokens: -1}), store.ErrInvalid)
	mustErr(t, s.AddUsage(ctx, "run-1", "k", store.Usage{CostUSD: f64(-1)}), store.ErrInvalid)
	got, err := s.GetRun(ctx, "run-1")
	must(t, err)
	if got.Usage.InputTokens != 0 || got.Usage.CostUSD != nil {
		t.Errorf("refused usage was added: %+v", got.Usage)
	}
	// The refused key was not marked as counted.
	must(t, s.AddUsage(ctx, "run-1", "k", store.Usage{InputTokens: 2}))
	got, err = s.GetRun(ctx, "run-1")
	must(t, err)
	if got.Usage.InputTokens != 2 {
		t.Errorf("input tokens = %d, want 2", got.Usage.InputTokens)
	}
}

func testAddUsageConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	createRuns(t, s, minimalRun("run-1", "p", t0))
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		for range 2 { // every contribution is sent twice, as a retry would
			wg.Go(func() {
				errs <- s.AddUsage(ctx, "run-1", fmt.Sprintf("step-%d#1", i), store.Usage{InputTokens: int64(i), OutputTokens: 1, CostUSD: f64(0.125)})
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	got, err := s.GetRun(ctx, "run-1")
	must(t, err)
	want := store.Usage{InputTokens: n * (n - 1) / 2, OutputTokens: n, CostUSD: f64(0.125 * n)}
	if g, w := canon(t, got.Usage), canon(t, want); g != w {
		t.Errorf("usage = %s, want %s", g, w)
	}
}

// testAddUsageAnyOrder is a property: a run's totals are the sum of its
// distinct contributions whatever order they arrive in and however often
// each is redelivered. Each of several runs gets the same contributions
// in its own random order, some sent two or three times; every run must
// end with the same totals. Costs are multiples of 1/64 so that their
// float sum is exact in any order (decimal prices may differ in the last
// bit between orders; Stepline's budget check compares those totals).
func testAddUsageAnyOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	type part struct {
		key string
		u   store.Usage
	}
	parts := []part{
		{"triage#1", store.Usage{InputTokens: 1200, OutputTokens: 300, CostUSD: f64(0.015625)}},
		{"triage#2", store.Usage{InputTokens: 1100, OutputTokens: 250, CostUSD: f64(0.03125)}},
		{"verify#1", store.Usage{InputTokens: 900, OutputTokens: 80, CostUSD: f64(0.5)}},
		{"unpriced#1", store.Usage{InputTokens: 70, OutputTokens: 7}},
		{"branch-a#1", store.Usage{InputTokens: 5, OutputTokens: 5, CostUSD: f64(0.25)}},
		{"branch-b#1", store.Usage{OutputTokens: 11, CostUSD: f64(0.125)}},
		{"notify#1", store.Usage{}},
	}
	want := store.Usage{InputTokens: 3275, OutputTokens: 653, CostUSD: f64(0.921875)}
	const runs = 6
	rng := rand.New(rand.NewPCG(26, 6))
	for r := range runs {
		id := fmt.Sprintf("run-%d", r)
		createRuns(t, s, minimalRun(id, "p", t0))
		var sends []part
		for _, p := range parts {
			for range 1 + rng.IntN(3) {
				sends = append(sends, p)
			}
		}
		rng.Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] })
		var order []string
		for _, p := range sends {
			must(t, s.AddUsage(ctx, id, p.key, p.u))
			order = append(order, p.key)
		}
		got, err := s.GetRun(ctx, id)
		must(t, err)
		if g, w := canon(t, got.Usage), canon(t, want); g != w {
			t.Errorf("%s, contributions in order %v: usage = %s, want %s", id, order, g, w)
		}
	}
}
