package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// noNetwork is a transport that fails the test on any request.
type noNetwork struct{ t *testing.T }

func (n noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("outbound request to %s %s", r.Method, r.URL.Host)
	return nil, errors.New("no network in this test")
}

// offlineExample copies the SRE example into a directory, its automation
// URLs pointed at a server that counts what reaches it, with scripted
// replies that leave the human step to decide.
func offlineExample(t *testing.T) (pipeline, responses string, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		t.Errorf("the automation endpoint was called: %s %s", r.Method, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	src, err := os.ReadFile("../../pipelines/sre-alert-triage.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pipeline = filepath.Join(dir, "sre-alert-triage.yaml")
	if err := os.WriteFile(pipeline, bytes.ReplaceAll(src, []byte("https://automation.example.com"), []byte(srv.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	replies, err := os.ReadFile("../../pipelines/responses/sre-alert-triage.yaml")
	if err != nil {
		t.Fatal(err)
	}
	decision := "approve-remediation:\n  - {decision: approve, by: oncall-sre}\n"
	if !bytes.Contains(replies, []byte(decision)) {
		t.Fatalf("the example's responses no longer script the decision as %q", decision)
	}
	responses = filepath.Join(dir, "responses.yaml")
	if err := os.WriteFile(responses, bytes.Replace(replies, []byte(decision), nil, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	return pipeline, responses, hits
}

// offlineEnv is the CLI's environment with no network at all.
func offlineEnv(t *testing.T, out, errOut *bytes.Buffer) env {
	return env{stdin: strings.NewReader(""), stdout: out, stderr: errOut, getenv: func(string) string { return "" },
		transport: noNetwork{t}}
}

// startWaiting runs the offline example until its human step waits, and
// returns the run's ID.
func startWaiting(t *testing.T, state, pipeline, responses string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), []string{"run", "--dir", state, "--event", "../../events/checkout-latency.trigger.json",
		"--responses", responses, pipeline}, offlineEnv(t, &out, &errOut))
	m := regexp.MustCompile(`run (run-\S+): waiting`).FindStringSubmatch(out.String())
	if code != exitOK || m == nil {
		t.Fatalf("run: exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	return m[1]
}

// TestScriptedRunApprovedLater runs the SRE example offline until its
// human step waits, then approves it from another dispatch and from
// another process: the remediation answers from the scripted replies,
// and nothing — executor, notification or failure webhook — reaches the
// network. With its replies gone, the approval is refused and the run
// waits on; given them again with --responses, it completes.
func TestScriptedRunApprovedLater(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	pipeline, responses, hits := offlineExample(t)
	state := t.TempDir()

	t.Run("approved by another dispatch", func(t *testing.T) {
		runID := startWaiting(t, state, pipeline, responses)
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), []string{"approve", "--dir", state, "--by", "oncall", runID, "approve-remediation"}, offlineEnv(t, &out, &errOut))
		if code != exitOK || !regexp.MustCompile(`remediate\s+completed .*Webhook delivered: HTTP 200`).MatchString(out.String()) ||
			!strings.Contains(out.String(), "run "+runID+": completed") {
			t.Fatalf("approve: exit %d\n%s\n%s", code, out.String(), errOut.String())
		}
	})

	t.Run("approved by another process", func(t *testing.T) {
		runID := startWaiting(t, state, pipeline, responses)
		// Any connection, direct or through a proxy, is counted.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var dialed atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				dialed.Add(1)
				c.Close()
			}
		}()
		proxy := "http://" + ln.Addr().String()
		cmd := exec.Command(buildCLI(t), "approve", "--dir", state, runID, "approve-remediation")
		cmd.Env = append(os.Environ(), "HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "NO_PROXY=", "no_proxy=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "run "+runID+": completed") || !strings.Contains(string(out), "Webhook delivered: HTTP 200") {
			t.Fatalf("approve in another process: %v\n%s", err, out)
		}
		if n := dialed.Load(); n != 0 {
			t.Errorf("%d outbound connections", n)
		}
	})

	t.Run("replies gone", func(t *testing.T) {
		runID := startWaiting(t, state, pipeline, responses)
		moved := responses + ".moved"
		if err := os.Rename(responses, moved); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(moved, responses)
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), []string{"approve", "--dir", state, runID, "approve-remediation"}, offlineEnv(t, &out, &errOut))
		if code != exitFailed || !strings.Contains(errOut.String(), "answers from the scripted replies in "+responses+", which cannot be read") ||
			!strings.Contains(errOut.String(), "--responses FILE") {
			t.Fatalf("approve without the replies: exit %d\n%s\n%s", code, out.String(), errOut.String())
		}
		out.Reset()
		errOut.Reset()
		code = dispatch(context.Background(), []string{"runs", "--dir", state}, offlineEnv(t, &out, &errOut))
		if code != exitOK || !regexp.MustCompile(runID+`\s+sre-alert-triage\s+waiting`).MatchString(out.String()) {
			t.Fatalf("the run after a refused approval:\n%s", out.String())
		}
		out.Reset()
		code = dispatch(context.Background(), []string{"approve", "--dir", state, "--responses", moved, runID, "approve-remediation"}, offlineEnv(t, &out, &errOut))
		if code != exitOK || !strings.Contains(out.String(), "run "+runID+": completed") {
			t.Fatalf("approve with --responses: exit %d\n%s\n%s", code, out.String(), errOut.String())
		}
	})

	t.Run("resume takes --responses", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), []string{"resume", "--dir", state, "--responses", filepath.Join(t.TempDir(), "none.yaml"), "run-x"}, offlineEnv(t, &out, &errOut))
		if code != exitFailed || !strings.Contains(errOut.String(), "read responses") {
			t.Fatalf("resume --responses with a missing file: exit %d\n%s", code, errOut.String())
		}
	})

	if n := hits.Load(); n != 0 {
		t.Errorf("the automation endpoint got %d requests", n)
	}
}
