package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRunReusesCompiledDefinition: run keeps the compiled pipeline in
// the state directory's definition cache and reuses it while the file is
// unchanged; an edited file runs as edited, and an edit back reuses the
// first compile again.
func TestRunReusesCompiledDefinition(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	path := filepath.Join(dir, "p.yaml")
	responses := filepath.Join(dir, "r.yaml")
	write(t, responses, "a: ['{\"confidence\": 0.9, \"summary\": \"a\", \"next_step_context\": \"\"}']\n"+
		"b: ['{\"confidence\": 0.9, \"summary\": \"b\", \"next_step_context\": \"\"}']\n")
	first := "name: cached\nsteps:\n  - {name: a, executor: scripted}\n"
	edited := "name: cached\nsteps:\n  - {name: b, executor: scripted}\n"
	steps := func(src string) []string {
		t.Helper()
		write(t, path, src)
		code, out, errOut := run(t, "", "run", "--json", "--dir", state, "--responses", responses, path)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var rep runReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Status != "completed" {
			t.Fatalf("report %+v (%v): %s", rep, err, out)
		}
		var names []string
		for _, s := range rep.Steps {
			names = append(names, s.Name)
		}
		return names
	}
	entries := func() []string {
		t.Helper()
		es, _ := filepath.Glob(filepath.Join(state, "definitions", "cache", "*.def"))
		return es
	}
	if got := steps(first); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first run's steps %v", got)
	}
	cached := entries()
	if len(cached) != 1 {
		t.Fatalf("cache entries after one compile: %v", cached)
	}
	fi, err := os.Stat(cached[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := steps(first); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("second run's steps %v", got)
	}
	if again, err := os.Stat(cached[0]); err != nil || !again.ModTime().Equal(fi.ModTime()) || len(entries()) != 1 {
		t.Errorf("the unchanged pipeline was cached again (%v)", err)
	}
	if got := steps(edited); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("the edited pipeline ran steps %v, want [b]", got)
	}
	if len(entries()) != 2 {
		t.Errorf("cache entries after the edit: %v", entries())
	}
	if got := steps(first); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("the pipeline edited back ran steps %v, want [a]", got)
	}
	if len(entries()) != 2 {
		t.Errorf("cache entries after the edit back: %v", entries())
	}
}
