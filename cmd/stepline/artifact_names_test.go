package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackArtifactNames: whatever name a reply gives an artifact, it is
// one file inside its run's and step's directory, and the step completes,
// as it does on AWS, whose S3 keys take the same names.
func TestAttackArtifactNames(t *testing.T) {
	long := strings.Repeat("n", 300)
	names := []string{"../../../../escaped.txt", "..", ".", "", "a/b", `c:\d`, "nul\x00x", long, "report.md"}
	arts := map[string]string{}
	for i, n := range names {
		arts[n] = "content " + string(rune('A'+i))
	}
	reply, _ := json.Marshal(map[string]any{"confidence": 0.9, "summary": "s", "next_step_context": "", "artifacts": arts})
	reread, _ := json.Marshal(`{"confidence": 0.9, "summary": "read", "next_step_context": ""}`)
	quoted, _ := json.Marshal(string(reply))
	r := writeFile(t, "r.yaml", "a: ["+string(quoted)+"]\nb: ["+string(reread)+"]\n")
	p := writeFile(t, "p.yaml", `name: p
steps:
  - name: a
    executor: scripted
  - name: b
    executor: scripted
`)
	dir := t.TempDir()
	code, out, errOut := run(t, "", "run", "--json", "--dir", dir, "--responses", r, p)
	var rep runReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if rep.Status != "completed" {
		t.Fatalf("status %s: %s", rep.Status, rep.Reason)
	}
	root := filepath.Join(dir, "artifacts", rep.RunID, "a")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	// "a/b" and "a_b"-like collisions aside, every name is one file here.
	for _, e := range entries {
		if e.IsDir() || len(e.Name()) > 200 || strings.ContainsAny(e.Name(), "/\\\x00") || strings.Trim(e.Name(), ".") == "" {
			t.Errorf("artifact file %q", e.Name())
		}
	}
	if len(entries) != len(names) {
		t.Errorf("%d files for %d names", len(entries), len(names))
	}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "escaped.txt" {
			t.Errorf("a file escaped: %s", path)
		}
		return nil
	})
	for file, want := range map[string]string{
		".._.._.._.._escaped.txt": "content A", "__": "content B", "_": "content C", "-": "content D",
		"a_b": "content E", "c__d": "content F", "nul_x": "content G", "report.md": "content I",
	} {
		if b, err := os.ReadFile(filepath.Join(root, file)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", file, b, err, want)
		}
	}

}
