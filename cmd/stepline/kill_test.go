package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// buildCLI builds the stepline binary for tests that run it as a process.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stepline")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestKillAndResume kills a run with SIGKILL while a step's call is in
// flight, resumes it from another process, and checks that the step
// records match those of an uninterrupted run.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	bin := buildCLI(t)
	var hang atomic.Bool
	entered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		step := strings.TrimPrefix(r.URL.Path, "/")
		if step == "b" && hang.Load() {
			entered <- struct{}{}
			<-r.Context().Done() // until the client process dies
			return
		}
		fmt.Fprintf(w, `{"confidence": 0.9, "summary": "%s done", "next_step_context": ""}`, step)
	}))
	defer srv.Close()
	pipelineYAML := fmt.Sprintf(`name: killable
steps:
  - {name: a, executor: webhook, executor_config: {url: "%[1]s/a"}}
  - {name: b, executor: webhook, executor_config: {url: "%[1]s/b"}}
  - {name: c, executor: webhook, executor_config: {url: "%[1]s/c"}, prompt_template: "{{ steps.b.summary }}"}
`, srv.URL)
	path := writeFile(t, "killable.yaml", pipelineYAML)

	records := func(dir string) []string {
		t.Helper()
		st, err := sqlite.Open(context.Background(), filepath.Join(dir, "stepline.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		runs, _ := st.ListRuns(context.Background(), sqliteFilter())
		if len(runs) != 1 {
			t.Fatalf("%d runs in %s", len(runs), dir)
		}
		steps, err := st.ListSteps(context.Background(), runs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range steps {
			out = append(out, fmt.Sprintf("%s#%d %s %v", s.Name, s.Attempt, s.Status, *s.EffectiveConfidence))
		}
		return append(out, "run "+string(runs[0].Status))
	}

	// Uninterrupted.
	plain := t.TempDir()
	if out, err := exec.Command(bin, "run", "--dir", plain, path).CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	want := records(plain)

	// Killed while b's call hangs, then resumed by another process.
	killed := t.TempDir()
	hang.Store(true)
	cmd := exec.Command(bin, "run", "--dir", killed, path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("step b never started:\n%s", out.String())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	_ = cmd.Wait()
	hang.Store(false)

	listed, err := exec.Command(bin, "runs", "--dir", killed).Output()
	if err != nil {
		t.Fatal(err)
	}
	runID := strings.Fields(string(listed))[0]
	if !strings.Contains(string(listed), "running") {
		t.Fatalf("killed run is not left running:\n%s", listed)
	}
	if out, err := exec.Command(bin, "resume", "--dir", killed, runID).CombinedOutput(); err != nil || !strings.Contains(string(out), "completed") {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	got := records(killed)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records after kill and resume:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	showOut, err := exec.Command(bin, "show", "--json", "--dir", killed, runID).Output()
	var shown struct {
		History []struct{ Type string } `json:"history"`
	}
	if err != nil || json.Unmarshal(showOut, &shown) != nil {
		t.Fatalf("show: %v", err)
	}
	resumed := false
	for _, h := range shown.History {
		resumed = resumed || h.Type == "ExecutionResumed"
	}
	if !resumed {
		t.Error("history does not record the resume")
	}
}

func sqliteFilter() store.RunFilter { return store.RunFilter{Limit: 10} }

// TestDurableRunResumesAutomatically kills a run of a durable pipeline and
// checks that the next stepline run resumes it (and that a run of a
// pipeline that is not durable is marked interrupted instead).
func TestDurableRunResumesAutomatically(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	bin := buildCLI(t)
	for _, c := range []struct {
		durable string
		want    string
	}{
		{"durable: true\n", "resumed interrupted run"},
		{"", "interrupted: the pipeline is not durable"},
		{"durable: {on_interrupted: escalate}\n", `escalated: step "b" was interrupted`},
	} {
		var hang atomic.Bool
		hang.Store(true)
		entered := make(chan struct{}, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/b") && hang.Load() {
				entered <- struct{}{}
				<-r.Context().Done()
				return
			}
			fmt.Fprint(w, `{"confidence": 0.9, "summary": "done", "next_step_context": ""}`)
		}))
		path := writeFile(t, "p.yaml", fmt.Sprintf("name: durable-check\n%ssteps:\n  - {name: a, executor: webhook, executor_config: {url: \"%[2]s/a\"}}\n  - {name: b, executor: webhook, executor_config: {url: \"%[2]s/b\"}}\n", c.durable, srv.URL))
		dir := t.TempDir()
		cmd := exec.Command(bin, "run", "--dir", dir, path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal("step b never started")
		}
		cmd.Process.Kill()
		_ = cmd.Wait()
		hang.Store(false)
		other := writeFile(t, "q.yaml", "name: other\nsteps:\n  - {name: x, executor: webhook, executor_config: {url: \""+srv.URL+"/x\"}}\n")
		out, err := exec.Command(bin, "run", "--dir", dir, other).CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%q: next run said:\n%s\nwant %q (%v)", c.durable, out, c.want, err)
		}
		srv.Close()
	}
}
