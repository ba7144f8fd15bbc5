package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cliKey = "sk-cli-7d41f09e3b6a2c58"

// cliWithEnv calls the CLI in-process with an environment.
func cliWithEnv(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(context.Background(), args, env{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		getenv: func(k string) string { return vars[k] },
	})
	return code, out.String(), errOut.String()
}

// echoProvider is an OpenAI-compatible server that echoes the API key it
// is sent: in the reply (around the answer, in its fields and extras,
// \u-escaped once), in the model name and a header; with a status >= 400,
// in an error message. Its replies also claim "failed": true, which must
// not fail a parallel branch.
func echoProvider(t *testing.T, status int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", key)
		if status >= 400 {
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"type":"invalid_api_key","message":"%s%s is not a valid key"}}`, strings.Repeat("x", 270), key)
			return
		}
		answer := fmt.Sprintf("Using %s.\n```json\n"+
			`{"confidence": 0.9, "summary": "called with %s", "next_step_context": "use %s", "reasoning": {"supports": ["%s"]},`+
			` "artifacts": {"log.txt": "key=%s"}, "echo": "%s", "escaped": "\u0073%s", "failed": true}`+"\n```\nBye %s",
			key, key, key, key, key, key, key[1:], key)
		reply, _ := json.Marshal(map[string]any{"model": "m-" + key,
			"choices": []any{map[string]any{"message": map[string]any{"content": answer}, "finish_reason": "stop"}}})
		w.Write(reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// assertNoCLIKey checks text and every file under dir for cliKey or any
// 8-byte piece of it.
func assertNoCLIKey(t *testing.T, what, text, dir string) {
	t.Helper()
	check := func(what, s string) {
		for i := 0; i+8 <= len(cliKey); i++ {
			if strings.Contains(s, cliKey[i:i+8]) {
				t.Errorf("%s holds %q, part of the key", what, cliKey[i:i+8])
				return
			}
		}
	}
	check(what, text)
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			check(p, string(b))
		}
		return nil
	})
}

// TestRunNeverPrintsAnEchoedKey: `stepline run --json` against a provider
// that echoes its API key prints no part of the key, nor stores one in
// the local state (SQLite, definitions, artifacts), nor shows one through
// `stepline show --json`; a parallel branch whose reply says
// "failed": true stays completed.
func TestRunNeverPrintsAnEchoedKey(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		wantStatus string
		wantSteps  map[string]string // step → status
	}{
		{"reply echoes the key", http.StatusOK, "completed",
			map[string]string{"first": "completed", "left": "completed", "right": "completed", "panel": "completed"}},
		{"error echoes the key", http.StatusUnauthorized, "failed", map[string]string{"first": "failed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := echoProvider(t, c.status)
			cfg := fmt.Sprintf(`{base_url: %q, model: m, api_key: "${STEPLINE_TEST_KEY}"}`, srv.URL+"/v1")
			path := writeFile(t, "echo.yaml", `name: echo
steps:
  - name: first
    executor: gateway
    executor_config: `+cfg+`
    prompt_template: triage
    retry: {attempts: 1}
  - parallel:
      name: panel
      join: all_must_pass
      steps:
        - {name: left, executor: gateway, executor_config: `+cfg+`, prompt_template: "left {{ steps.first.summary }}"}
        - {name: right, executor: gateway, executor_config: `+cfg+`, prompt_template: "right {{ steps.first.echo }}"}
`)
			dir := t.TempDir()
			vars := map[string]string{"STEPLINE_TEST_KEY": cliKey}
			code, out, errOut := cliWithEnv(t, vars, "run", "--json", "--dir", dir, path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var rep runReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if rep.Status != c.wantStatus {
				t.Errorf("run %s, want %s (%s)", rep.Status, c.wantStatus, rep.Reason)
			}
			got := map[string]string{}
			for _, s := range rep.Steps {
				got[s.Name] = s.Status
			}
			for n, want := range c.wantSteps {
				if got[n] != want {
					t.Errorf("step %s is %q, want %q (all: %v)", n, got[n], want, got)
				}
			}
			if c.status == http.StatusOK && !strings.Contains(out, "called with [REDACTED]") {
				t.Errorf("the scrubbed answer is missing from the report:\n%s", out)
			}
			_, shown, showErr := cliWithEnv(t, vars, "show", "--json", "--dir", dir, rep.RunID)
			_, text, textErr := cliWithEnv(t, vars, "run", "--dir", dir, path)
			assertNoCLIKey(t, "CLI output", out+errOut+shown+showErr+text+textErr, dir)
		})
	}
}
