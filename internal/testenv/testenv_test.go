package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "No": false, "true": true, "1": true, "yes": true} {
		t.Setenv("CI", v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI = %v, want %v", v, got, want)
		}
	}
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot()
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil || root != filepath.Clean(filepath.Join(mustWd(t), "..", "..")) {
		t.Errorf("RepoRoot = %q", root)
	}
	t.Chdir(t.TempDir())
	if got := RepoRoot(); got != "" {
		t.Errorf("outside a module: RepoRoot = %q", got)
	}
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func TestFreePort(t *testing.T) {
	p, err := FreePort()
	if err != nil || p <= 0 || p > 65535 {
		t.Errorf("FreePort = %d, %v", p, err)
	}
}
