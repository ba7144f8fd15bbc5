package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// EnvRun is the environment variable make e2e sets to run the tier; the
// tests that need the box skip without it.
const EnvRun = "STEPLINE_E2E"

// MotoVersion is the moto release the box's patches are written for.
const MotoVersion = "5.2.1"

// Region and Account are the box's (moto's defaults).
const (
	Region  = "us-east-1"
	Account = "123456789012"
)

// StartTimeout bounds how long the box may take to start (moto's import
// takes most of it).
const StartTimeout = 60 * time.Second

// Tools are the programs and files the box needs.
type Tools struct {
	Root       string // the repository
	Python     string // a Python with moto[server] 5.2.1 and boto3
	Node       string
	JSONata    string // node_modules/jsonata (jsonata@2.0.6)
	RIE        string // the Lambda Runtime Interface Emulator
	Stepline   string // the CLI built by make build
	Bootstraps string // bin/lambda-amd64: <fn>/bootstrap for this machine
	CFNLint    string // cfn-lint, for the template test
}

// FindTools looks for what the box needs under root: $STEPLINE_PYTHON or
// python3 with moto MotoVersion, node and node_modules/jsonata, the
// emulator ($STEPLINE_RIE or bin/aws-lambda-rie), bin/stepline and the
// amd64 bootstraps (make build), cfn-lint ($STEPLINE_CFN_LINT or on
// PATH). The error says what is missing and which make target provides it.
func FindTools(root string) (Tools, error) {
	t := Tools{Root: root}
	var missing []string
	t.Python = os.Getenv("STEPLINE_PYTHON")
	if t.Python == "" {
		t.Python = "python3"
	}
	out, err := exec.Command(t.Python, "-c", "import moto, boto3, flask; print(moto.__version__)").Output()
	switch v := strings.TrimSpace(string(out)); {
	case err != nil:
		missing = append(missing, fmt.Sprintf("%s has no moto[server] (make tools installs moto[server]==%s)", t.Python, MotoVersion))
	case v != MotoVersion:
		missing = append(missing, fmt.Sprintf("%s has moto %s, the box needs %s (make tools)", t.Python, v, MotoVersion))
	}
	if t.Node, err = exec.LookPath("node"); err != nil {
		missing = append(missing, "node is not on PATH")
	}
	t.JSONata = filepath.Join(root, "node_modules", "jsonata")
	t.RIE = os.Getenv("STEPLINE_RIE")
	if t.RIE == "" {
		t.RIE = filepath.Join(root, "bin", "aws-lambda-rie")
	}
	t.Stepline = filepath.Join(root, "bin", "stepline")
	t.Bootstraps = filepath.Join(root, "bin", "lambda-amd64")
	for _, f := range []struct{ path, what string }{
		{filepath.Join(t.JSONata, "package.json"), "jsonata (make node-tools)"},
		{t.RIE, "the Runtime Interface Emulator (make rie)"},
		{t.Stepline, "bin/stepline (make build)"},
		{filepath.Join(t.Bootstraps, "step", "bootstrap"), "the amd64 bootstraps (make build)"},
	} {
		if _, err := os.Stat(f.path); err != nil {
			missing = append(missing, f.what+" is missing: "+f.path)
		}
	}
	t.CFNLint = os.Getenv("STEPLINE_CFN_LINT")
	if t.CFNLint == "" {
		t.CFNLint, _ = exec.LookPath("cfn-lint")
	}
	if len(missing) > 0 {
		return t, errors.New(strings.Join(missing, "; "))
	}
	return t, nil
}

// Box is a running box: moto's server with the project's patches, the
// JSONata process and the emulator pools, all children of one launcher
// process (e2e/box/launcher.py).
type Box struct {
	Endpoint string   // the AWS endpoint, http://127.0.0.1:PORT
	Logs     string   // the log directory (see the package doc)
	Patches  []string // the patches the launcher applied
	PID      int      // the launcher's process ID

	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// StartBox starts the launcher with its logs in logs and waits until it
// serves. Stop stops it and everything it started.
func StartBox(ctx context.Context, t Tools, logs string) (*Box, error) {
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	stderr, err := os.Create(filepath.Join(logs, "launcher.stderr"))
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	cmd := exec.Command(t.Python, filepath.Join(t.Root, "e2e", "box", "launcher.py"),
		"--logs", logs, "--rie", t.RIE, "--node", t.Node, "--jsonata", t.JSONata)
	cmd.Dir = t.Root
	cmd.Stderr = stderr
	dieWithParent(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the box: %w", err)
	}
	b := &Box{Logs: logs, PID: cmd.Process.Pid, cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			ready <- fmt.Errorf("the box exited before it was ready")
			return
		}
		var hello struct {
			Endpoint string   `json:"endpoint"`
			Patches  []string `json:"patches"`
		}
		if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Endpoint == "" {
			ready <- fmt.Errorf("the box said %q, not its endpoint", strings.TrimSpace(line))
			return
		}
		b.Endpoint, b.Patches = hello.Endpoint, hello.Patches
		ready <- nil
		io.Copy(io.Discard, stdout)
	}()
	go func() { b.done <- cmd.Wait() }()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-timer.C:
		err = fmt.Errorf("the box did not start within %s", StartTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		b.Stop()
		msg, _ := os.ReadFile(filepath.Join(logs, "launcher.stderr"))
		return nil, fmt.Errorf("%w: %s (logs in %s)", err, strings.TrimSpace(string(msg)), logs)
	}
	return b, nil
}

// Stop closes the launcher's standard input, which makes it stop its
// emulators and its JSONata process by PID and exit, and waits for it; a
// launcher still running after 10 s is killed.
func (b *Box) Stop() error {
	if b == nil || b.cmd == nil {
		return nil
	}
	b.stdin.Close()
	select {
	case err := <-b.done:
		b.cmd = nil
		return err
	case <-time.After(10 * time.Second):
	}
	b.cmd.Process.Kill()
	err := <-b.done
	b.cmd = nil
	return fmt.Errorf("the box did not stop within 10 s and was killed: %v", err)
}
