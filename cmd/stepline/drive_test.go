package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestResumeWhileDriven runs a pipeline in one process and, while its
// step b's webhook call hangs, resumes the run from a second process: the
// second is refused, naming the first process, and exits non-zero; b is
// delivered once; the first process finishes the run. Then the same with
// the first process killed: the resume takes the run over at once.
func TestResumeWhileDriven(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	bin := buildCLI(t)
	var release atomic.Bool
	var deliveries atomic.Int32
	entered := make(chan struct{}, 4)
	unblock := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/b") {
			deliveries.Add(1)
			if !release.Load() {
				entered <- struct{}{}
				select {
				case <-unblock:
				case <-r.Context().Done():
					return
				}
			}
		}
		fmt.Fprint(w, `{"confidence": 0.9, "summary": "done", "next_step_context": ""}`)
	}))
	defer srv.Close()
	path := writeFile(t, "driven.yaml", fmt.Sprintf("name: driven\nsteps:\n"+
		"  - {name: a, executor: webhook, executor_config: {url: \"%[1]s/a\"}}\n"+
		"  - {name: b, executor: webhook, executor_config: {url: \"%[1]s/b\"}}\n", srv.URL))

	start := func(dir string) (*exec.Cmd, *bytes.Buffer, string) {
		t.Helper()
		cmd := exec.Command(bin, "run", "--dir", dir, path)
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
		listed, err := exec.Command(bin, "runs", "--dir", dir).Output()
		if err != nil || len(strings.Fields(string(listed))) == 0 {
			t.Fatalf("runs: %v\n%s", err, listed)
		}
		return cmd, &out, strings.Fields(string(listed))[0]
	}

	t.Run("driven by a live process", func(t *testing.T) {
		deliveries.Store(0)
		dir := t.TempDir()
		first, firstOut, runID := start(dir)
		out, err := exec.Command(bin, "resume", "--dir", dir, runID).CombinedOutput()
		want := regexp.MustCompile(`run ` + runID + ` is being driven by process ` + strconv.Itoa(first.Process.Pid) + `\b`)
		if err == nil || !want.Match(out) {
			t.Errorf("resume while driven: %v\n%s\nwant a non-zero exit and %q", err, out, want)
		}
		if n := deliveries.Load(); n != 1 {
			t.Errorf("b delivered %d times while the run was driven, want 1", n)
		}
		unblock <- struct{}{}
		if err := first.Wait(); err != nil || !strings.Contains(firstOut.String(), "completed") {
			t.Fatalf("the first process: %v\n%s", err, firstOut.String())
		}
		if n := deliveries.Load(); n != 1 {
			t.Errorf("b delivered %d times, want 1", n)
		}
	})

	t.Run("driver killed", func(t *testing.T) {
		deliveries.Store(0)
		dir := t.TempDir()
		first, _, runID := start(dir)
		if err := first.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = first.Wait()
		release.Store(true)
		defer release.Store(false)
		began := time.Now()
		out, err := exec.Command(bin, "resume", "--dir", dir, runID).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "run "+runID+": completed") {
			t.Fatalf("resume after the driver was killed: %v\n%s", err, out)
		}
		// The dead process's claim is taken over at once, not when its
		// lease (30 s) lapses.
		if took := time.Since(began); took > 15*time.Second {
			t.Errorf("resume took %v", took)
		}
	})
}
