package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestBedrockFromAWSConfiguration runs a bedrock step without --responses
// against a fake Bedrock runtime endpoint: the request is signed with the
// credentials the AWS configuration chain finds — a profile of the shared
// files, or the environment's keys before it — in the profile's region; a
// configuration without a region fails the step saying so.
func TestBedrockFromAWSConfiguration(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, `{"output": {"message": {"role": "assistant", "content": [{"text": "{\"confidence\": 0.9, \"summary\": \"triaged\", \"next_step_context\": \"\"}"}]}},
			"stopReason": "end_turn", "usage": {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	configFile := filepath.Join(dir, "config")
	credentialsFile := filepath.Join(dir, "credentials")
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(configFile, "[default]\nregion = us-east-1\n\n[profile oncall]\nregion = eu-west-1\n\n[profile regionless]\n")
	write(credentialsFile, "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret\n\n"+
		"[oncall]\naws_access_key_id = AKIDONCALLPROFILE\naws_secret_access_key = oncall-secret\n\n"+
		"[regionless]\naws_access_key_id = AKIDREGIONLESS\naws_secret_access_key = regionless-secret\n")
	pipeline := writeFile(t, "bedrock.yaml", "name: bedrock-local\nsteps:\n"+
		"  - {name: triage, executor: bedrock, executor_config: {model: anthropic.claude-test-v1:0, tool_use: false}}\n")

	cases := []struct {
		name    string
		env     map[string]string
		auth    string // in the Authorization header of the request
		outcome string // in stdout
		stderr  string
	}{
		{"profile from AWS_PROFILE", map[string]string{"AWS_PROFILE": "oncall"},
			"Credential=AKIDONCALLPROFILE/", "completed", ""},
		{"default profile", nil, "Credential=AKIDDEFAULT/", "completed", ""},
		{"environment keys before the profile", map[string]string{"AWS_PROFILE": "oncall", "AWS_ACCESS_KEY_ID": "AKIDFROMENV", "AWS_SECRET_ACCESS_KEY": "env-secret"},
			"Credential=AKIDFROMENV/", "completed", ""},
		{"no region", map[string]string{"AWS_PROFILE": "regionless"}, "", "failed", "no AWS region is configured"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
				"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
				"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
				t.Setenv(k, "")
			}
			t.Setenv("AWS_CONFIG_FILE", configFile)
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credentialsFile)
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.URL)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			mu.Lock()
			auth = nil
			mu.Unlock()
			var out, errOut bytes.Buffer
			dispatch(context.Background(), []string{"run", "--dir", t.TempDir(), pipeline},
				env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: os.Getenv})
			if !strings.Contains(out.String(), ": "+c.outcome) || !strings.Contains(out.String()+errOut.String(), c.stderr) {
				t.Fatalf("stdout:\n%s\nstderr:\n%s\nwant the run %s and %q", out.String(), errOut.String(), c.outcome, c.stderr)
			}
			mu.Lock()
			defer mu.Unlock()
			if c.auth == "" {
				if len(auth) != 0 {
					t.Errorf("requests sent: %q", auth)
				}
				return
			}
			if len(auth) != 1 || !strings.HasPrefix(auth[0], "POST /model/anthropic.claude-test-v1:0/converse AWS4-HMAC-SHA256 ") ||
				!strings.Contains(auth[0], c.auth) {
				t.Errorf("requests %q, want one signed with %q", auth, c.auth)
			}
			if c.env["AWS_PROFILE"] == "oncall" && len(auth) == 1 && !strings.Contains(auth[0], "/eu-west-1/bedrock/aws4_request") {
				t.Errorf("request %q not signed for the profile's region", auth[0])
			}
		})
	}
}
