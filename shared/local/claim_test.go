package local

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// holdingGate is a step function that holds the calls of one step until opened,
// counting them, and answers the others from scripted replies.
type holdingGate struct {
	inner   StepHandler
	step    string
	calls   atomic.Int32
	entered chan struct{}
	open    chan struct{}
}

func (g *holdingGate) Handle(ctx context.Context, req task.Request) (task.Response, error) {
	var cfg struct{ Name string }
	_ = json.Unmarshal(req.Step, &cfg)
	if cfg.Name == g.step && req.Mode == task.ModeStep {
		g.calls.Add(1)
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.open:
		case <-ctx.Done():
			return task.Response{}, ctx.Err()
		}
	}
	return g.inner.Handle(ctx, req)
}

// openRunner opens a Runner on dir's state whose step function is h (nil:
// scripted replies only), with lease as its claims' lease.
func openTestRunner(t *testing.T, dir string, responses string, lease time.Duration, wrap func(StepHandler) StepHandler) *Runner {
	t.Helper()
	replies, err := executor.ParseResponses("responses.yaml", []byte(responses))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), Config{
		Dir:   filepath.Join(dir, "state"),
		Lease: lease,
		Handler: func(st *sqlite.Store) StepHandler {
			var h StepHandler = &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: replies})}
			if wrap != nil {
				h = wrap(h)
			}
			return h
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func writeTestPipeline(t *testing.T, dir, content string) string {
	t.Helper()
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSecondDriverIsRefused drives a run whose step b hangs, and resumes
// and decides it from a second Runner on the same state meanwhile: both
// are refused naming the driving process, b is called once, and the first
// Runner finishes the run without a conflict.
func TestSecondDriverIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := writeTestPipeline(t, dir, "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n")
	responses := "a: [" + reply(0.9, "a", "") + "]\nb: [" + reply(0.9, "b", "") + ", " + reply(0.9, "b again", "") + "]\n"
	g := &holdingGate{step: "b", entered: make(chan struct{}, 1), open: make(chan struct{})}
	first := openTestRunner(t, dir, responses, 0, func(h StepHandler) StepHandler { g.inner = h; return g })
	second := openTestRunner(t, dir, responses, 0, nil)

	type result struct {
		o   Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := first.Run(context.Background(), path, json.RawMessage(`{}`), "run-claimed")
		done <- result{o, err}
	}()
	select {
	case <-g.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("step b never started")
	}

	host, _ := os.Hostname()
	_, err := second.Resume(context.Background(), "run-claimed")
	var driven *DrivenError
	want := "run run-claimed is being driven by process " + strconv.Itoa(os.Getpid()) + " on " + host
	if !errors.As(err, &driven) || driven.PID != os.Getpid() || driven.Host != host || !strings.Contains(err.Error(), want) {
		t.Fatalf("resume while another runner drives the run: %v, want %q", err, want)
	}
	if swept, err := second.Sweep(context.Background()); err != nil || len(swept) != 0 {
		t.Fatalf("the sweep handled a driven run: %+v, %v", swept, err)
	}
	close(g.open)
	res := <-done
	if res.err != nil || res.o.Status != store.RunCompleted {
		t.Fatalf("the first runner: %+v, %v", res.o, res.err)
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("step b called %d times, want 1", n)
	}
	// The run is not claimed any more: a resume reports where it stands.
	if o, err := second.Resume(context.Background(), "run-claimed"); err != nil || o.Status != store.RunCompleted {
		t.Errorf("resume after the first runner finished: %+v, %v", o, err)
	}
}

// TestClaimOfAGoneDriver: a claim whose holder ran on this host and is no
// longer a process is taken over at once; a live holder's, or one on
// another host, holds until its lease lapses.
func TestClaimOfAGoneDriver(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid // reaped: no process has it now
	host, _ := os.Hostname()
	cases := []struct {
		name    string
		pid     int
		host    string
		expires time.Duration // from now
		taken   bool
	}{
		{"dead process on this host", deadPID, host, time.Hour, true},
		{"live process on this host", os.Getpid(), host, time.Hour, false},
		{"process on another host", deadPID, "elsewhere.example", time.Hour, false},
		{"another host, lease about to lapse", deadPID, "elsewhere.example", 2 * time.Second, false},
		{"another host, lease lapsed", deadPID, "elsewhere.example", -time.Millisecond, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := openTestRunner(t, t.TempDir(), "", 0, nil)
			runID := "run-" + strconv.Itoa(i)
			stored := store.RunClaim{RunID: runID, Holder: "other-driver", PID: c.pid, Host: c.host, ExpiresAt: time.Now().Add(c.expires)}
			if _, ok, err := r.Store.ClaimRun(context.Background(), stored, "", stored.ExpiresAt.Add(-time.Hour)); err != nil || !ok {
				t.Fatalf("seed claim: %v %v", ok, err)
			}
			_, release, err := r.hold(context.Background(), runID)
			if c.taken {
				if err != nil {
					t.Fatalf("claim not taken over: %v", err)
				}
				release()
				return
			}
			var driven *DrivenError
			if !errors.As(err, &driven) || driven.PID != c.pid || driven.Host != c.host {
				t.Fatalf("got %v, want the run driven by %d on %s", err, c.pid, c.host)
			}
		})
	}
}

// TestClaimIsRenewedAndLost: a Runner driving a run longer than its lease
// keeps it claimed, and stops driving when another driver takes the run
// over.
func TestClaimIsRenewedAndLost(t *testing.T) {
	const lease = 300 * time.Millisecond
	dir := t.TempDir()
	path := writeTestPipeline(t, dir, "name: p\nsteps:\n  - {name: a, executor: scripted}\n")
	g := &holdingGate{step: "a", entered: make(chan struct{}, 1), open: make(chan struct{})}
	first := openTestRunner(t, dir, "a: ["+reply(0.9, "a", "")+"]\n", lease, func(h StepHandler) StepHandler { g.inner = h; return g })
	second := openTestRunner(t, dir, "", lease, nil)
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { _, runErr = first.Run(context.Background(), path, json.RawMessage(`{}`), "run-renewed") })
	select {
	case <-g.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("step a never started")
	}
	time.Sleep(3 * lease) // past the first lease: renewed meanwhile
	_, _, err := second.hold(context.Background(), "run-renewed")
	var driven *DrivenError
	if !errors.As(err, &driven) {
		t.Fatalf("after %v the claim does not hold: %v", 3*lease, err)
	}
	// Another driver takes the run over (as one finding this one gone).
	now := time.Now()
	takeover := store.RunClaim{RunID: "run-renewed", Holder: "thief", PID: 1, Host: "elsewhere", ExpiresAt: now.Add(time.Hour)}
	current, _, _ := first.Store.ClaimRun(context.Background(), takeover, "", now)
	if _, ok, err := first.Store.ClaimRun(context.Background(), takeover, current.Holder, now); err != nil || !ok {
		t.Fatalf("take over: %v %v", ok, err)
	}
	wg.Wait()
	if !errors.Is(runErr, errClaimLost) {
		t.Fatalf("the first runner went on after losing its claim: %v", runErr)
	}
	close(g.open)
}
