package local

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// timeoutPipeline has a human step that times out after a second, under
// policy, then a step that answers from the replies, and an escalate
// notification to url.
func timeoutPipeline(policy, url string) string {
	return "name: p\nstage: production\nnotifications:\n  escalate:\n    - channel: webhook\n      config: {url: \"" + url + "\"}\n" +
		"      template: \"{{ current_step }}: {{ escalation_reason }}\"\n" +
		"steps:\n  - {name: ok, executor: human, timeout_seconds: 1, on_failure: " + policy + "}\n" +
		"  - {name: after, executor: scripted}\n"
}

// notifications collects the bodies posted to it.
type notifications struct {
	mu     sync.Mutex
	bodies []string
}

func (n *notifications) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	n.mu.Lock()
	n.bodies = append(n.bodies, string(b))
	n.mu.Unlock()
}

func (n *notifications) got() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.bodies...)
}

func openNotifying(t *testing.T, dir string) *Runner {
	t.Helper()
	replies, err := executor.ParseResponses("r.yaml", []byte("after: ["+reply(0.9, "after done", "")+", "+reply(0.9, "after done", "")+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), Config{
		Dir: filepath.Join(dir, "state"),
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: replies}),
				Notifications: &notify.Dispatcher{HTTP: http.DefaultClient}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestExpireApprovals: before its approval expires a waiting run is left
// alone and the expiry is reported as the next one; at and after it, the
// human step times out and the run follows the step's failure policy.
func TestExpireApprovals(t *testing.T) {
	hook := &notifications{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	cases := []struct {
		policy string
		at     time.Duration // the Runner's now, from the approval's expiry
		fired  bool
		status store.RunStatus
		steps  map[string]string
		notify bool
	}{
		{"continue", -time.Nanosecond, false, store.RunWaiting, nil, false},
		{"continue", 0, true, store.RunCompleted, map[string]string{"ok": "failed 0", "after": "completed 0.9"}, false},
		{"continue", time.Second, true, store.RunCompleted, map[string]string{"ok": "failed 0", "after": "completed 0.9"}, false},
		{"abort", 0, true, store.RunFailed, map[string]string{"ok": "failed 0"}, true},
	}
	for _, c := range cases {
		t.Run(c.policy+" at expiry "+c.at.String(), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			writeText(t, path, timeoutPipeline(c.policy, srv.URL))
			r := openNotifying(t, dir)
			o, err := r.Run(ctx, path, json.RawMessage(`{}`), "")
			if err != nil || o.Status != store.RunWaiting || len(o.Waiting) != 1 {
				t.Fatalf("start: %+v, %v", o, err)
			}
			expiry := o.Waiting[0].ExpiresAt
			time.Sleep(time.Until(expiry) + 50*time.Millisecond) // the engine's deadline, a moment earlier, has passed too
			before := len(hook.got())
			r.now = func() time.Time { return expiry.Add(c.at) }
			fired, next, err := r.ExpireApprovals(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c.fired != (len(fired) == 1) {
				t.Fatalf("fired %+v, want fired %v", fired, c.fired)
			}
			if !c.fired && !next.Equal(expiry) {
				t.Errorf("next expiry %v, want %v", next, expiry)
			}
			run, steps, _ := r.Store.GetRunWithSteps(ctx, o.RunID)
			if run.Status != c.status {
				t.Fatalf("run %s (%s), want %s", run.Status, run.Reason, c.status)
			}
			if c.steps != nil {
				if got := finals(steps); !equalMaps(got, c.steps) {
					t.Errorf("steps %v, want %v", got, c.steps)
				}
				for _, s := range steps {
					if s.Name == "ok" && !strings.Contains(s.Error, "States.Timeout") {
						t.Errorf("the human step's record does not say it timed out: %q", s.Error)
					}
				}
			}
			sent := hook.got()[before:]
			if c.notify != (len(sent) == 1) || (c.notify && !strings.HasPrefix(sent[0], "ok: ")) {
				t.Errorf("notifications %q, want one: %v", sent, c.notify)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestServerTimesOutApprovals: while a server runs, the human steps of its
// own runs and of runs another process left waiting time out on time.
func TestServerTimesOutApprovals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	writeText(t, filepath.Join(dir, "other.yaml"), timeoutPipeline("continue", "http://127.0.0.1:9"))
	if err := os.MkdirAll(pipelines, 0o755); err != nil {
		t.Fatal(err)
	}
	writeText(t, filepath.Join(pipelines, "p.yaml"), timeoutPipeline("continue", "http://127.0.0.1:9"))

	// Another process leaves a run waiting, then the server starts one.
	elsewhere := openNotifying(t, dir)
	left, err := elsewhere.Run(ctx, filepath.Join(dir, "other.yaml"), json.RawMessage(`{}`), "")
	if err != nil || left.Status != store.RunWaiting {
		t.Fatalf("run left waiting: %+v, %v", left, err)
	}
	r := openNotifying(t, dir)
	sctx, cancel := context.WithCancel(ctx)
	srv, err := NewServer(sctx, ServerConfig{Runner: r, PipelinesDir: pipelines, ApprovalPoll: 100 * time.Millisecond,
		Signer: &approval.Signer{Key: []byte("0123456789abcdef0123456789abcdef")}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); srv.Wait() }()
	sm := srv.current().machines["p"]
	own, err := r.Start(ctx, sm, "p", json.RawMessage(`{}`), "")
	if err != nil || own.Status != store.RunWaiting {
		t.Fatalf("server's run: %+v, %v", own, err)
	}
	for _, o := range []Outcome{left, own} {
		expiry := o.Waiting[0].ExpiresAt
		var run store.Run
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if run, err = r.Store.GetRun(ctx, o.RunID); err == nil && run.Status.Terminal() {
				break
			}
		}
		if run.Status != store.RunCompleted {
			t.Fatalf("run %s is %s, want completed after its approval timed out", o.RunID, run.Status)
		}
		if late := run.CompletedAt.Sub(expiry); late < 0 || late > time.Second {
			t.Errorf("run %s ended %v after its approval expired, want within a second", o.RunID, late)
		}
	}
}
