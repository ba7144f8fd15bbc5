package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestImportVectorStep imports the importer's reference project, checks
// that every pipeline without an item needing a person validates and that
// every validate error lies where the import said a person is needed,
// then runs two imported pipelines offline to completed.
func TestImportVectorStep(t *testing.T) {
	dest := t.TempDir()
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), []string{"import", "vectorstep", "../../shared/importer/testdata/vectorstep", dest}, offlineEnv(t, &out, &errOut))
	if code != exitFailed { // the testdata holds what needs a person on purpose
		t.Fatalf("import: exit %d, want %d\n%s\n%s", code, exitFailed, out.String(), errOut.String())
	}
	report := out.String()
	for _, want := range []string{"written   pipelines/alert-triage.yaml", "conversions by kind:", "needs a person (",
		`../../shared/importer/testdata/vectorstep/pipelines/needs-a-person.yaml:9:14: filter "title" has no Liquid equivalent of the same meaning: {{ summary | title }}`} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q\n%s", want, report)
		}
	}
	// Which source files need a person, by the report.
	person := map[string]bool{}
	section := ""
	for _, line := range strings.Split(report, "\n") {
		if !strings.HasPrefix(line, "  ") {
			section = line
			continue
		}
		if strings.HasPrefix(section, "needs a person") {
			if f, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "../../shared/importer/testdata/vectorstep/"), ":"); ok {
				person[f] = true
			}
		}
	}
	valid := regexp.MustCompile(`(?m)^  \S+/(pipelines|steps)/(\S+): valid$`)
	got := map[string]bool{}
	for _, m := range valid.FindAllStringSubmatch(report, -1) {
		got[m[1]+"/"+m[2]] = true
	}
	for _, f := range []string{"pipelines/alert-triage.yaml", "pipelines/coverage.yaml", "pipelines/fanout-report.yaml", "pipelines/needs-a-person.yaml", "pipelines/notify-telegram.yaml", "pipelines/release-gate.yaml", "steps/first-line-triage.yaml", "steps/health-check.yaml"} {
		if got[f] == person[f] {
			t.Errorf("%s: valid %v, needs a person %v: a file validates exactly when nothing in it needs a person", f, got[f], person[f])
		}
	}
	// Every validate error is one the import announced.
	errLine := regexp.MustCompile(`(?m)^  (\S+\.yaml):\d+:\d+: (.*)$`)
	for _, m := range errLine.FindAllStringSubmatch(report[strings.Index(report, "\nvalidate:"):], -1) {
		msg := m[2]
		switch {
		case strings.HasPrefix(msg, "warning: "):
		case strings.Contains(msg, "vectorstep_unconverted"), strings.Contains(msg, "when:"),
			strings.Contains(msg, `channel "telegram"`), strings.Contains(msg, "verifier"):
		default:
			t.Errorf("validate error the import did not announce: %s", m[0])
		}
	}
	if strings.Contains(report, "pay-literal-token-5f2c") {
		t.Error("the report prints a secret")
	}

	// A second import changes nothing.
	var out2 bytes.Buffer
	dispatch(context.Background(), []string{"import", "vectorstep", "../../shared/importer/testdata/vectorstep", dest}, offlineEnv(t, &out2, &errOut))
	if strings.Contains(out2.String(), "  written") {
		t.Errorf("the second import wrote files:\n%s", out2.String())
	}

	for _, name := range []string{"alert-triage", "fanout-report"} {
		var rout, rerr bytes.Buffer
		code := dispatch(context.Background(), []string{"run", "--dir", filepath.Join(t.TempDir(), "state"),
			"--event", filepath.Join("testdata", "import", name+".event.json"),
			"--responses", filepath.Join("testdata", "import", name+".responses.yaml"),
			filepath.Join(dest, "pipelines", name+".yaml")}, offlineEnv(t, &rout, &rerr))
		if code != exitOK || !regexp.MustCompile(`run run-\S+: completed`).MatchString(rout.String()) {
			t.Errorf("run %s: exit %d\n%s\n%s", name, code, rout.String(), rerr.String())
		}
	}
}

// TestImportUsage: the command names its source kind and two directories.
func TestImportUsage(t *testing.T) {
	for _, args := range [][]string{{"import"}, {"import", "airflow", "a", "b"}, {"import", "vectorstep", "a"}} {
		var out, errOut bytes.Buffer
		if code := dispatch(context.Background(), args, offlineEnv(t, &out, &errOut)); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	var out, errOut bytes.Buffer
	missing := filepath.Join(t.TempDir(), "none")
	if code := dispatch(context.Background(), []string{"import", "vectorstep", missing, t.TempDir()}, offlineEnv(t, &out, &errOut)); code != exitFailed || !strings.Contains(errOut.String(), "config") {
		t.Errorf("missing source: exit %d: %s", code, errOut.String())
	}
}
