// Package rietest runs a Lambda bootstrap under the AWS Lambda Runtime
// Interface Emulator for tests: the real binary, the real runtime API,
// invoked over HTTP as Lambda would.
//
// The emulator is looked for in $STEPLINE_RIE, <repo>/bin/aws-lambda-rie
// (make tools installs it there) and $PATH. When it is missing the test
// skips, except with CI set, where it fails.
package rietest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/internal/testenv"
)

// Emulator is one running emulator with its bootstrap.
type Emulator struct {
	URL  string // the invocation endpoint
	addr string // host:port the emulator listens on
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// lockedBuffer collects the emulator's output, written by the process's
// copying goroutines while tests read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Result is the answer to one invocation.
type Result struct {
	Body      json.RawMessage
	ErrorType string // set when the handler returned an error
	Message   string
	Duration  time.Duration
}

// Build compiles a function's main package for this machine as a Lambda
// bootstrap (linux, CGO off, lambda.norpc), into a temporary directory.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Start runs bootstrap under the emulator with env added to the process
// environment, on free loopback ports. The emulator stops when the test
// ends. Test packages run in parallel, so a port found free can be taken
// before the emulator binds it; an emulator that exits before it listens
// is started again on other ports.
func Start(t testing.TB, bootstrap string, env ...string) *Emulator {
	t.Helper()
	rie := find(t)
	var failure string
	for range 3 {
		e, err := start(rie, bootstrap, env)
		if err != nil {
			t.Fatal(err)
		}
		if e.listening() {
			t.Cleanup(func() {
				e.stop()
				if t.Failed() {
					t.Logf("emulator output:\n%s", e.out.String())
				}
			})
			return e
		}
		e.stop()
		failure = e.out.String()
	}
	t.Fatalf("the emulator did not start: %s", failure)
	return nil
}

func start(rie, bootstrap string, env []string) (*Emulator, error) {
	api, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", api),
		bootstrap)
	cmd.Env = append(os.Environ(), env...)
	e := &Emulator{URL: fmt.Sprintf("http://127.0.0.1:%d/2015-03-31/functions/function/invocations", port), addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = e.out, e.out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start emulator: %w", err)
	}
	go func() { cmd.Wait(); close(e.done) }()
	return e, nil
}

// listening waits up to 20 s for the emulator to accept connections. It
// reports false when the process exits first or never listens.
func (e *Emulator) listening() bool {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", e.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			// Another package's emulator may hold the port: ours, unable
			// to bind, is then exiting. Where /proc tells which process
			// listens, the answer is certain; elsewhere ours is taken to
			// be the listener if it is still running a moment later.
			if owned, known := listensOn(e.cmd.Process.Pid, e.addr); known {
				return owned
			}
			select {
			case <-e.done:
				return false
			case <-time.After(50 * time.Millisecond):
				return true
			}
		}
		select {
		case <-e.done:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// listensOn reports whether process pid holds the listening socket of
// addr (127.0.0.1:port), from /proc/net/tcp and the process's file
// descriptors; known is false where /proc cannot say (not Linux).
func listensOn(pid int, addr string) (owned, known bool) {
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return false, false
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return false, false
	}
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false, false
	}
	inodes := listeningInodes(string(table), uint16(port))
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, false
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true, true
		}
	}
	return false, true
}

// listeningInodes returns the socket inodes of /proc/net/tcp's entries
// listening on port (state 0A), whatever their address.
func listeningInodes(table string, port uint16) map[string]bool {
	want := fmt.Sprintf(":%04X", port)
	inodes := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
		if len(f) < 10 || f[3] != "0A" || !strings.HasSuffix(f[1], want) {
			continue
		}
		inodes[f[9]] = true
	}
	return inodes
}

func (e *Emulator) stop() {
	e.cmd.Process.Kill()
	<-e.done
}

// Stop stops the emulator and its function now rather than when the test
// ends. Stopping twice is harmless.
func (e *Emulator) Stop() { e.stop() }

// Invoke sends one event and waits for the answer. The emulator takes one
// invocation at a time.
func (e *Emulator) Invoke(t testing.TB, event []byte) Result {
	t.Helper()
	start := time.Now()
	resp, err := http.Post(e.URL, "application/json", bytes.NewReader(event))
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("invoke: read answer: %v", err)
	}
	r := Result{Body: body, Duration: time.Since(start)}
	var fail struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal(body, &fail) == nil && fail.ErrorType != "" {
		r.ErrorType, r.Message = fail.ErrorType, fail.ErrorMessage
	}
	return r
}

// Output is what the function logged so far.
func (e *Emulator) Output() string { return e.out.String() }

func find(t testing.TB) string {
	t.Helper()
	candidates := []string{os.Getenv("STEPLINE_RIE")}
	if root := testenv.RepoRoot(); root != "" {
		candidates = append(candidates, filepath.Join(root, "bin", "aws-lambda-rie"))
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c
		}
	}
	testenv.Missing(t, "the Lambda Runtime Interface Emulator is not installed: run make tools")
	return ""
}
