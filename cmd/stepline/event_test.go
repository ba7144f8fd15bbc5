package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/inbound"
)

// TestReadEventBound: an event file is read up to inbound.MaxBodyBytes, a
// webhook body's bound, and refused one byte above it.
func TestReadEventBound(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{inbound.MaxBodyBytes - 1, inbound.MaxBodyBytes, inbound.MaxBodyBytes + 1} {
		path := filepath.Join(dir, "event.json")
		if err := os.WriteFile(path, []byte(strings.Repeat(" ", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := readEvent(path)
		switch {
		case n <= inbound.MaxBodyBytes && (err != nil || len(b) != n):
			t.Errorf("%d bytes: %d read, %v", n, len(b), err)
		case n > inbound.MaxBodyBytes && (err == nil || !strings.Contains(err.Error(), "is more than 1048576 bytes")):
			t.Errorf("%d bytes: %v, want refused", n, err)
		}
	}
	if _, err := readEvent(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file was read")
	}
}

// TestRunEventNumberRange: an event holding a number no float64 holds is
// refused naming the file and the number's path, before any run.
func TestRunEventNumberRange(t *testing.T) {
	state := t.TempDir()
	pipeline, responses := gatePipeline(t)
	event := filepath.Join(t.TempDir(), "event.json")
	write(t, event, `{"summary": "s", "metadata": {"total": 1e999}}`)
	code, out, errOut := run(t, "", "run", pipeline, "--dir", state, "--responses", responses, "--event", event)
	if code != exitFailed || !strings.Contains(errOut, event+": metadata.total: the number 1e999 is out of range") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if code, out, _ := run(t, "", "runs", "--dir", state); code != exitOK || strings.Contains(out, "run-") {
		t.Errorf("a run was recorded: %s", out)
	}
}
