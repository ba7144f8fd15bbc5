package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// hookServer records the paths and bodies posted to it and answers as a
// webhook step expects.
type hookServer struct {
	mu    sync.Mutex
	calls []string // "path body"
}

func (h *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.calls = append(h.calls, r.URL.Path+" "+string(b))
	h.mu.Unlock()
	fmt.Fprint(w, `{"confidence": 0.9, "summary": "done", "next_step_context": ""}`)
}

func (h *hookServer) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

// humanTimeoutPipeline waits a second for an approval, then follows
// policy; its escalate notification and its next step post to url.
func humanTimeoutPipeline(name, policy, url string) string {
	return fmt.Sprintf(`name: %[1]s
stage: production
notifications:
  escalate:
    - {channel: webhook, config: {url: "%[3]s/escalated"}, template: "{{ current_step }}: {{ escalation_reason }}"}
steps:
  - {name: approve, executor: human, timeout_seconds: 1, on_failure: %[2]s}
  - {name: after, executor: webhook, executor_config: {url: "%[3]s/after"}}
`, name, policy, url)
}

// TestServeTimesOutHumanSteps: under stepline serve, a human step whose
// approval nobody gives times out after its timeout_seconds, and the run
// follows the step's on_failure: continue runs the next step, abort fails
// the run and sends the escalate notification.
func TestServeTimesOutHumanSteps(t *testing.T) {
	hook := &hookServer{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	dir := t.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	if err := os.MkdirAll(pipelines, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, policy string }{{"goes-on", "continue"}, {"stops", "abort"}} {
		if err := os.WriteFile(filepath.Join(pipelines, p.name+".yaml"), []byte(humanTimeoutPipeline(p.name, p.policy, srv.URL)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--dir", filepath.Join(dir, "state"), "--pipelines", pipelines},
			env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }})
	}()
	defer func() {
		cancel()
		<-done
	}()
	base := ""
	for deadline := time.Now().Add(20 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`serving on (http://\S+)`).FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("serve did not start:\n%s\n%s", out.String(), errOut.String())
	}
	type runView struct {
		Run struct {
			Status      string
			Reason      string
			StartedAt   time.Time `json:"started_at"`
			CompletedAt time.Time `json:"completed_at"`
		}
		Steps []struct {
			Name   string
			Status string
			Error  string
		}
	}
	get := func(id string) runView {
		resp, err := http.Get(base + "/runs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v runView
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return v
	}
	cases := []struct {
		pipeline string
		status   string
		steps    string
		hooks    []string
	}{
		{"goes-on", "completed", "after completed, approve failed", []string{"/after"}},
		{"stops", "failed", "approve failed", []string{"/escalated approve: "}},
	}
	for _, c := range cases {
		t.Run(c.pipeline, func(t *testing.T) {
			before := len(hook.got())
			resp, err := http.Post(base+"/pipelines/"+c.pipeline+"/runs", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			var started struct {
				RunID string `json:"run_id"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&started)
			resp.Body.Close()
			if started.RunID == "" {
				t.Fatalf("no run started: %d", resp.StatusCode)
			}
			var v runView
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if v = get(started.RunID); v.Run.Status == c.status {
					break
				}
			}
			if v.Run.Status != c.status {
				t.Fatalf("run %s is %q (%s), want %q\n%s", started.RunID, v.Run.Status, v.Run.Reason, c.status, errOut.String())
			}
			var steps []string
			for _, s := range v.Steps {
				steps = append(steps, s.Name+" "+s.Status)
				if s.Name == "approve" && !strings.Contains(s.Error, "States.Timeout") {
					t.Errorf("the human step's error %q does not say it timed out", s.Error)
				}
			}
			sort.Strings(steps)
			if got := strings.Join(steps, ", "); got != c.steps {
				t.Errorf("steps %q, want %q", got, c.steps)
			}
			if took := v.Run.CompletedAt.Sub(v.Run.StartedAt); took < time.Second || took > 3*time.Second {
				t.Errorf("the run ended %v after it started, want just over the step's 1 s timeout", took)
			}
			// The notification goes out once the step has recorded the
			// run's end: wait for it a while.
			sent := hook.got()[before:]
			for deadline := time.Now().Add(5 * time.Second); len(sent) < len(c.hooks) && time.Now().Before(deadline); sent = hook.got()[before:] {
				time.Sleep(20 * time.Millisecond)
			}
			if len(sent) != len(c.hooks) {
				t.Fatalf("outbound calls %q, want %q", sent, c.hooks)
			}
			for i, h := range c.hooks {
				if !strings.HasPrefix(sent[i], h) {
					t.Errorf("outbound call %q, want %q…", sent[i], h)
				}
			}
		})
	}
}

// TestAttachedRunTimesOut: stepline run asking for an approval on the
// terminal stops asking when the approval expires, and the run goes on
// under the step's failure policy.
func TestAttachedRunTimesOut(t *testing.T) {
	hook := &hookServer{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	path := writeFile(t, "attached.yaml", humanTimeoutPipeline("attached", "continue", srv.URL))
	stdin, never := io.Pipe() // a terminal nobody types on
	defer never.Close()
	var out, errOut bytes.Buffer
	began := time.Now()
	code := dispatch(context.Background(), []string{"run", "--dir", t.TempDir(), path}, env{
		stdin: stdin, stdout: &out, stderr: &errOut, getenv: func(string) string { return "" },
		terminal: func(io.Reader) bool { return true },
	})
	took := time.Since(began)
	if code != exitOK || !strings.Contains(out.String(), `approval needed for step "approve"`) ||
		!strings.Contains(out.String(), "approve                      timed out waiting for approval") ||
		!regexp.MustCompile(`run run-\S+: completed`).MatchString(out.String()) {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if took < time.Second || took > 5*time.Second {
		t.Errorf("the run took %v, want just over the step's 1 s timeout", took)
	}
	if sent := hook.got(); len(sent) != 1 || !strings.HasPrefix(sent[0], "/after") {
		t.Errorf("outbound calls %q, want the next step's", sent)
	}
}
