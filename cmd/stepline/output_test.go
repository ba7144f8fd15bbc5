package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func runOutput(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), append([]string{"output"}, args...), env{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" },
	})
	return code, out.String(), errb.String()
}

func TestOutputCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "reply.txt")
	if err := os.WriteFile(file, []byte("Here:\n```json\n{'confidence': '0.8', 'summary': 'Disk full', 'next_step_context': '', 'host': 'db-1',}\n```"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  map[string]any
	}{
		{
			name: "accepted from a file", args: []string{"check", file}, code: 0,
			want: map[string]any{
				"ok": true, "outcome": "accepted",
				"output": map[string]any{"confidence": 0.8, "summary": "Disk full", "next_step_context": "", "proceed": true, "host": "db-1"},
				"flags":  []any{"fenced", "surrounding_text", "trailing_comma", "single_quotes", "number_string"},
			},
		},
		{
			name: "accepted from stdin", stdin: `{"confidence": 1, "summary": "ok", "next_step_context": "x"}`, args: []string{"check"}, code: 0,
			want: map[string]any{
				"ok": true, "outcome": "accepted",
				"output": map[string]any{"confidence": 1.0, "summary": "ok", "next_step_context": "x", "proceed": true},
				"flags":  []any{},
			},
		},
		{
			name: "rejected", stdin: `{"confidence": 85, "summary": "s"}`, args: []string{"check", "-"}, code: 1,
			want: map[string]any{
				"ok": false, "outcome": "rejected",
				"errors": []any{
					map[string]any{"path": "confidence", "code": "out_of_range", "message": "confidence must be a number from 0 to 1 (a fraction, not a percentage); got 85"},
					map[string]any{"path": "next_step_context", "code": "missing_field", "message": `next_step_context is required: a string, "" when there is nothing to pass on`},
				},
			},
		},
		{
			name: "truncated by finish reason", stdin: `{"confidence": 1, "summary": "ok", "next_step_context": ""}`,
			args: []string{"check", "--finish-reason", "length"}, code: 1,
			want: map[string]any{
				"ok": false, "outcome": "truncated",
				"errors": []any{map[string]any{"path": "", "code": "truncated", "message": `the reply was cut off at the output limit (finish reason "length"): answer more briefly`}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runOutput(t, c.stdin, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, c.code, stderr)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
			}
			if c.code == 1 {
				fb, _ := got["feedback"].(string)
				if !strings.HasPrefix(fb, "Your previous reply") || !strings.Contains(fb, "Reply again") {
					t.Errorf("feedback = %q", fb)
				}
				delete(got, "feedback")
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("verdict\n got %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestOutputUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string // in stderr, or stdout for help
	}{
		{"no subcommand", nil, 2, "stepline: output: give a command\nusage: stepline output <command>\n\ncommands:\n  check "},
		{"unknown subcommand", []string{"fix"}, 2, `unknown command "fix" for "stepline output"`},
		{"two files", []string{"check", "a", "b"}, 2, "accepts at most 1 arg(s), received 2\nusage: stepline output check [flags] [FILE]"},
		{"missing file", []string{"check", "/nonexistent/reply.txt"}, 2, "no such file"},
		{"bad flag", []string{"check", "--nope"}, 2, "unknown flag: --nope"},
		{"help", []string{"-h"}, 0, "usage: stepline output <command>"},
		{"check help", []string{"check", "-h"}, 0, "--finish-reason string"},
		{"check help names the verdict", []string{"check", "--help"}, 0, "Exit status: 0 accepted, 1 rejected, 2 usage error."},
		{"single-dash long flag", []string{"check", "-finish-reason", "length"}, 1, `"outcome": "truncated"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runOutput(t, "", c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d", code, c.code)
			}
			if !strings.Contains(stdout+stderr, c.want) {
				t.Errorf("output lacks %q:\nstdout %s\nstderr %s", c.want, stdout, stderr)
			}
		})
	}
}

func TestOutputCheckTooLarge(t *testing.T) {
	big := `{"confidence": 1, "summary": "` + strings.Repeat("x", 2<<20) + `", "next_step_context": ""}`
	code, stdout, _ := runOutput(t, big, "check")
	if code != 1 || !strings.Contains(stdout, `"too_large"`) {
		t.Errorf("exit %d, stdout %.300s", code, stdout)
	}
}
