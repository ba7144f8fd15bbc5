// Package testenv is test support: what the tests that run real tools
// share (functions/rietest for the Lambda Runtime Interface Emulator,
// shared/store/dynamo/dynamotest for DynamoDB Local, and e2e): where the
// repository is, whether the tools are required, and free loopback ports;
// and the pipeline the benchmarks share (BenchPipeline).
// It is internal to the module, and at its root because those three trees
// import it (shared/internal is out of reach of e2e and functions). No
// production package imports it.
package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// InCI reports whether the CI environment variable is set to a true
// value. In CI a missing tool fails the tests instead of skipping them.
func InCI() bool {
	switch strings.ToLower(os.Getenv("CI")) {
	case "", "0", "false", "no":
		return false
	}
	return true
}

// Missing reports a tool the test needs and does not have: it fails the
// test in CI (see InCI) and skips it elsewhere.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// RepoRoot returns the nearest directory at or above the working
// directory that holds go.mod, or "" when there is none.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Another process can take it before the caller binds it; callers retry.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// BenchPipeline is the pipeline the benchmarks of run, compile and
// definition costs share (the one the README's Figures name): n scripted
// steps named s0…s{n-1}, each but the first rendering the summary of the
// one before it.
func BenchPipeline(n int) string {
	var p strings.Builder
	p.WriteString("name: bench\nsteps:\n")
	for i := 0; i < n; i++ {
		if i == 0 {
			fmt.Fprintf(&p, "  - {name: s%d, executor: scripted, prompt_template: start}\n", i)
		} else {
			fmt.Fprintf(&p, "  - {name: s%d, executor: scripted, prompt_template: '{{ steps.s%d.summary }}'}\n", i, i-1)
		}
	}
	return p.String()
}
