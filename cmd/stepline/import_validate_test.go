package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportValidateProjectProblemOnce: a problem of the imported
// stepline.yaml is printed once under "validate:", as stepline validate
// prints it, not twice for every pipeline (the pipeline's compile already
// carries the project's problems, and the import added them again).
func TestImportValidateProjectProblemOnce(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		// A URL the project file refuses, copied as written.
		"config.yaml":      "pipeline_config_dir: pipelines\nexecutors:\n  gateway: {url: \"ftp://gw.example.com\"}\n",
		"pipelines/a.yaml": "name: a\nsteps: [{name: s, executor: human}]\n",
		"pipelines/b.yaml": "name: b\nsteps: [{name: s, executor: human}]\n",
		"steps/lib.yaml":   "name: lib\nexecutor: human\n",
	}
	for p, b := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dest := t.TempDir()
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), []string{"import", "vectorstep", src, dest}, offlineEnv(t, &out, &errOut))
	report := out.String()
	if code != exitFailed {
		t.Fatalf("import: exit %d, want %d\n%s\n%s", code, exitFailed, report, errOut.String())
	}
	validate := report[strings.Index(report, "\nvalidate:"):]
	problem := filepath.Join(dest, "stepline.yaml") + ":"
	if n := strings.Count(validate, problem); n != 1 {
		t.Errorf("the project's problem is printed %d times, want once:\n%s", n, validate)
	}
	if !strings.Contains(validate, "executors.gateway.url") {
		t.Errorf("the project's problem is not printed:\n%s", validate)
	}
	// A problem of the project fails every file in it, printed or not.
	if !strings.Contains(report, "2 pipeline(s), 1 library step(s);") || !strings.Contains(report, "; 3 pipeline(s) or step(s) not valid") {
		t.Errorf("summary:\n%s", report)
	}
}
