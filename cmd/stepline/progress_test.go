package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// scheduled is the TaskScheduled event of a Task of mode on step name.
func scheduled(at time.Time, state, mode, name string, extra map[string]any) store.HistoryEvent {
	payload := map[string]any{"mode": mode, "step": map[string]any{"name": name}}
	for k, v := range extra {
		payload[k] = v
	}
	d, _ := json.Marshal(map[string]any{"function": task.StepFunctionPlaceholder, "payload": payload})
	return store.HistoryEvent{Type: "TaskScheduled", State: state, Time: at, Detail: d}
}

func succeededAt(at time.Time, state string, r task.Response) store.HistoryEvent {
	d, _ := json.Marshal(map[string]any{"output": map[string]any{"Payload": r}})
	return store.HistoryEvent{Type: "TaskSucceeded", State: state, Time: at, Detail: d}
}

// TestProgressStartLines: a step's, a branch's and a fan-out item's Task
// print a start line (with the attempt from the second on); joins,
// approvals and failure records print none; the outcome line follows.
func TestProgressStartLines(t *testing.T) {
	at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	out := json.RawMessage(`{"confidence": 0.9, "summary": "ok", "next_step_context": ""}`)
	cases := []struct {
		name  string
		event store.HistoryEvent
		want  string
	}{
		{"step", scheduled(at, "draft", task.ModeStep, "draft", map[string]any{"attempt": 1}), "  draft                        started\n"},
		{"retry", scheduled(at, "draft", task.ModeStep, "draft", map[string]any{"attempt": 2}), "  draft                        started    attempt 2\n"},
		{"branch", scheduled(at, "analysis/data", task.ModeBranch, "data", map[string]any{"group": "analysis"}), "  data                         started\n"},
		{"fan-out item", scheduled(at, "check item", task.ModeBranch, "check", map[string]any{"item": "cart", "index": 1}), "  check/1                      started\n"},
		{"agent Task", scheduled(at, "investigate", task.ModeAgentTurns, "investigate", nil), "  investigate                  started\n"},
		{"agent's next Task", scheduled(at, "investigate", task.ModeAgentTurns, "investigate", map[string]any{"agent_loop": map[string]any{"tasks": 1}}), ""},
		{"join", scheduled(at, "analysis: join", task.ModeJoin, "analysis", nil), ""},
		{"approval", scheduled(at, "approve", task.ModeApproval, "approve", nil), ""},
		{"failure record", scheduled(at, "draft: failure", task.ModeFailure, "draft", nil), ""},
		{"no payload (resumed)", store.HistoryEvent{Type: "TaskScheduled", State: "draft", Time: at, Detail: json.RawMessage(`{"resumed": true}`)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newProgress(env{stdout: &b})
			p.event("run-1", c.event)
			if b.String() != c.want {
				t.Errorf("progress %q, want %q", b.String(), c.want)
			}
		})
	}
	t.Run("then the outcome", func(t *testing.T) {
		var b bytes.Buffer
		p := newProgress(env{stdout: &b})
		p.event("run-1", scheduled(at, "draft", task.ModeStep, "draft", map[string]any{"attempt": 1}))
		p.event("run-1", succeededAt(at.Add(1500*time.Millisecond), "draft", task.Response{Status: task.StatusCompleted, Step: "draft", Output: out}))
		want := "  draft                        started\n" +
			"  draft                        completed  confidence 0.90    1.5s  ok\n"
		if b.String() != want {
			t.Errorf("progress\n%q\nwant\n%q", b.String(), want)
		}
	})
}

// TestProgressLiveLine: on a terminal, the steps that run are on one line
// rewritten in place with their elapsed time, taken off before any other
// line and when the last one ends; off a terminal, never.
func TestProgressLiveLine(t *testing.T) {
	at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	out := json.RawMessage(`{"confidence": 0.9, "summary": "ok", "next_step_context": ""}`)
	drive := func(terminal bool) string {
		var b syncBuffer
		p := newProgress(env{stdout: &b, outTerminal: func(io.Writer) bool { return terminal }, getenv: func(string) string { return "" }})
		now := at.Add(1200 * time.Millisecond)
		p.now = func() time.Time { return now }
		p.interval = time.Hour // redrawn by the events alone
		p.event("run-1", scheduled(at, "g/left", task.ModeBranch, "left", nil))
		p.event("run-1", scheduled(at.Add(200*time.Millisecond), "g/right", task.ModeBranch, "right", nil))
		p.event("run-1", succeededAt(at.Add(1300*time.Millisecond), "g/left", task.Response{Status: task.StatusCompleted, Step: "left", Output: out}))
		p.event("run-1", succeededAt(at.Add(1400*time.Millisecond), "g/right", task.Response{Status: task.StatusCompleted, Step: "right", Output: out}))
		p.stop()
		return b.String()
	}
	clear := "\r\x1b[K"
	want := "  left                         \x1b[36mstarted\x1b[0m\n" +
		clear + "  \x1b[36mrunning\x1b[0m    left 1.2s" +
		clear + "  right                        \x1b[36mstarted\x1b[0m\n" +
		clear + "  \x1b[36mrunning\x1b[0m    left 1.2s, right 1.0s" +
		clear + "  left                         \x1b[32mcompleted\x1b[0m  confidence 0.90    1.3s  ok\n" +
		clear + "  \x1b[36mrunning\x1b[0m    right 1.0s" +
		clear + "  right                        \x1b[32mcompleted\x1b[0m  confidence 0.90    1.2s  ok\n"
	if got := drive(true); got != want {
		t.Errorf("on a terminal:\n%q\nwant\n%q", got, want)
	}
	plain := "  left                         started\n" +
		"  right                        started\n" +
		"  left                         completed  confidence 0.90    1.3s  ok\n" +
		"  right                        completed  confidence 0.90    1.2s  ok\n"
	if got := drive(false); got != plain {
		t.Errorf("off a terminal:\n%q\nwant\n%q", got, plain)
	}
}

// TestRunProgressLive runs a pipeline whose step's call hangs: the start
// line is printed before the call ends, and on a terminal the live line
// counts the call's time up while it hangs; off a terminal nothing is
// rewritten. The outcome line follows when the call answers.
func TestRunProgressLive(t *testing.T) {
	for _, terminal := range []bool{true, false} {
		t.Run(fmt.Sprintf("terminal %v", terminal), func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
				fmt.Fprint(w, `{"confidence": 0.8, "summary": "looked", "next_step_context": ""}`)
			}))
			defer srv.Close()
			path := writeFile(t, "slow.yaml", fmt.Sprintf("name: slow\nsteps:\n  - {name: look, executor: webhook, executor_config: {url: %q}}\n", srv.URL))
			var out, errOut syncBuffer
			done := make(chan int)
			go func() {
				done <- dispatch(context.Background(), []string{"run", path, "--dir", t.TempDir()}, env{
					stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" },
					outTerminal: func(io.Writer) bool { return terminal },
				})
			}()
			waitFor := func(what string, re *regexp.Regexp) {
				t.Helper()
				deadline := time.Now().Add(20 * time.Second)
				for !re.MatchString(out.String()) {
					if time.Now().After(deadline) {
						close(release)
						t.Fatalf("no %s in\n%q\nstderr %s", what, out.String(), errOut.String())
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			waitFor("start line", regexp.MustCompile(`(?m)^  look\s+(\x1b\[36m)?started`))
			if terminal {
				// Two redraws, the second counting more time than the first.
				waitFor("live line past 0.4s", regexp.MustCompile(`\r\x1b\[K  \x1b\[36mrunning\x1b\[0m    look 0\.[4-9]s`))
			} else {
				time.Sleep(3 * liveInterval)
			}
			close(release)
			if code := <-done; code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			got := out.String()
			if !regexp.MustCompile(`(?m)(^|\r\x1b\[K)  look\s+(\x1b\[32m)?completed(\x1b\[0m)?\s+confidence 0\.80 .* looked\n`).MatchString(got) {
				t.Errorf("no outcome line in\n%q", got)
			}
			if rewritten := strings.Contains(got, "\r"); rewritten != terminal {
				t.Errorf("rewritten in place: %v, want %v:\n%q", rewritten, terminal, got)
			}
			if terminal && strings.Count(got, "running") < 2 {
				t.Errorf("the live line was drawn fewer than twice:\n%q", got)
			}
		})
	}
}

// TestProgressDropsEscapes: a reply's summary cannot write terminal
// escape sequences through the progress line.
func TestProgressDropsEscapes(t *testing.T) {
	at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	p := newProgress(env{stdout: &b})
	out := json.RawMessage(`{"confidence": 0.9, "summary": "ok\u001b[2J\u001b]0;owned\u0007 done", "next_step_context": ""}`)
	p.event("run-1", succeededAt(at, "draft", task.Response{Status: task.StatusCompleted, Step: "draft", Output: out}))
	if strings.ContainsAny(b.String(), "\x1b\x07") || !strings.Contains(b.String(), "ok[2J]0;owned done") {
		t.Errorf("progress %q", b.String())
	}
}
