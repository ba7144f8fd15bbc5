package project

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestStepFiles: Load reads the step files of the steps directory in name
// order, skipping what is no step file, within its bounds.
func TestStepFiles(t *testing.T) {
	big := "name: big\nprompt_template: \"" + strings.Repeat("x", MaxStepFileBytes-len("name: big\nprompt_template: \"\"\n")) + "\"\n"
	cases := []struct {
		name  string
		files map[string]string
		paths []string // the step files read
		diags []string
	}{
		{name: "no steps directory", files: map[string]string{"stepline.yaml": ""}},
		{name: "a steps directory written out that does not exist",
			files: map[string]string{"stepline.yaml": "steps: library\n"},
			diags: []string{`stepline.yaml:1:8: warning: steps: directory library does not exist: the project has no step library`}},
		{name: "step files in name order, the rest skipped",
			files: map[string]string{
				"stepline.yaml": "", "steps/b.yml": "name: b", "steps/a.yaml": "name: a", "steps/c.YAML": "name: c",
				"steps/_draft.yaml": "", "steps/.hidden.yaml": "", "steps/notes.md": "", "steps/sub/d.yaml": "",
			},
			paths: []string{"steps/a.yaml", "steps/b.yml", "steps/c.YAML"}},
		{name: "a step file at the size bound",
			files: map[string]string{"stepline.yaml": "", "steps/big.yaml": big},
			paths: []string{"steps/big.yaml"}},
		{name: "a step file over the size bound",
			files: map[string]string{"stepline.yaml": "", "steps/big.yaml": big + " ", "steps/small.yaml": "name: small"},
			paths: []string{"steps/small.yaml"},
			diags: []string{`steps/big.yaml:1:1: the file is larger than 1 MiB`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, c.files)
			t.Chdir(root)
			p, err := Load("stepline.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, sf := range p.StepFiles {
				paths = append(paths, sf.Path)
				if string(sf.Src) != c.files[sf.Path] {
					t.Errorf("%s read as %.40q", sf.Path, sf.Src)
				}
			}
			if !reflect.DeepEqual(paths, c.paths) {
				t.Errorf("step files %q, want %q", paths, c.paths)
			}
			if got := lines(p.Diagnostics); !reflect.DeepEqual(got, c.diags) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.diags, "\n"))
			}
		})
	}
}

// TestStepFileCount: a steps directory holds at most MaxStepFiles step
// files.
func TestStepFileCount(t *testing.T) {
	for _, c := range []struct {
		name  string
		files int
		err   bool
	}{
		{"below", MaxStepFiles - 1, false},
		{"at", MaxStepFiles, false},
		{"above", MaxStepFiles + 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"stepline.yaml": ""}
			for i := range c.files {
				files[fmt.Sprintf("steps/s%04d.yaml", i)] = "name: s"
			}
			writeFiles(t, root, files)
			p, err := Load(filepath.Join(root, "stepline.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if want := min(c.files, MaxStepFiles); len(p.StepFiles) != want {
				t.Errorf("%d step files read, want %d", len(p.StepFiles), want)
			}
			want := []string(nil)
			if c.err {
				want = []string{filepath.Join(root, "steps") + ": more than 1000 step files in one directory"}
			}
			if got := lines(p.Diagnostics); !reflect.DeepEqual(got, want) {
				t.Errorf("diagnostics %q, want %q", got, want)
			}
		})
	}
}

// TestIsStepFile: a file is a step file by where it is, whether or not
// it exists.
func TestIsStepFile(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"stepline.yaml": ""})
	t.Chdir(root)
	p, err := Load("stepline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"steps/a.yaml":                         true,
		"./steps/new.yml":                      true,
		filepath.Join(root, "steps", "a.yaml"): true,
		"steps/_draft.yaml":                    false,
		"steps/a.json":                         false,
		"steps/sub/a.yaml":                     false,
		"pipelines/a.yaml":                     false,
		filepath.Join(root, "other", "a.yaml"): false,
	} {
		if got := p.IsStepFile(path); got != want {
			t.Errorf("IsStepFile(%q) = %v, want %v", path, got, want)
		}
	}
	if (*Project)(nil).IsStepFile("steps/a.yaml") {
		t.Error("a nil project has step files")
	}
}
