package steprun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

const echoKey = "sk-echo-5f3b2a1c9d8e7f60"

// echoModel is an OpenAI-compatible server that answers every call with
// the API key it was sent: in the reply text around the answer, in
// contract fields, reasoning, an artifact and extras, escaped with \u
// once, in the model name and in a header. With status >= 400 it answers
// an error whose message holds the key.
func echoModel(t *testing.T, status int) (*httptest.Server, *[]string) {
	t.Helper()
	var prompts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		body, _ := io.ReadAll(r.Body)
		prompts = append(prompts, string(body))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", key)
		if status >= 400 {
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":"key %s is not valid"}}`, key)
			return
		}
		answer := fmt.Sprintf("Called with %s.\n"+
			`{"confidence": 0.9, "summary": "called with %s", "next_step_context": "use %s", "reasoning": {"supports": ["%s"]},`+
			` "artifacts": {"log.txt": "key=%s"}, "echo": "%s", "escaped": "\u0073%s", "failed": true}`+"\nBye %s",
			key, key, key, key, key, key, key[1:], key)
		reply, _ := json.Marshal(map[string]any{"model": "m-" + key,
			"choices": []any{map[string]any{"message": map[string]any{"content": answer}, "finish_reason": "stop"}}})
		w.Write(reply)
	}))
	t.Cleanup(srv.Close)
	return srv, &prompts
}

// secretEnv is a handler over a SQLite file and an artifact directory in
// one temporary directory, calling real executors with echoKey as API_KEY
// and logging into a buffer.
type secretEnv struct {
	h   *Handler
	st  *sqlite.Store
	dir string
	log *bytes.Buffer
}

func newSecretEnv(t *testing.T, client *http.Client) *secretEnv {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	secrets := secret.Env(func(k string) string { return map[string]string{"API_KEY": echoKey, "HOOK_TOKEN": echoKey}[k] })
	e := &secretEnv{st: st, dir: dir, log: &bytes.Buffer{}}
	e.h = &Handler{
		Store:     st,
		Executors: executor.NewRegistry(executor.Deps{HTTP: client, Secrets: secrets}),
		Artifacts: Dir{Root: filepath.Join(dir, "artifacts")},
		HTTP:      client,
		Secrets:   secrets,
		Logger:    slog.New(slog.NewTextHandler(e.log, nil)),
		Now:       func() time.Time { return testStart.Add(time.Second) },
	}
	return e
}

// assertNoKey checks s, and every file the handler wrote (the SQLite
// database with its journal, the artifacts), for echoKey or any 8-byte
// piece of it.
func (e *secretEnv) assertNoKey(t *testing.T, what, s string) {
	t.Helper()
	check := func(what, s string) {
		for i := 0; i+8 <= len(echoKey); i++ {
			if strings.Contains(s, echoKey[i:i+8]) {
				t.Errorf("%s holds %q, part of the key", what, echoKey[i:i+8])
				return
			}
		}
	}
	check(what, s)
	check("the log", e.log.String())
	_ = filepath.Walk(e.dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			check(p, string(b))
		}
		return nil
	})
}

func modelStep(name, prompt, url string) pipeline.Step {
	st := seqStep(name, prompt)
	st.Executor = "gateway"
	st.ExecutorConfig = map[string]any{"base_url": url + "/v1", "model": "m", "api_key": "${API_KEY}"}
	return st
}

// TestEchoedKeyNeverStored: a model that echoes its API key everywhere in
// its reply leaves no trace of it in the step's output, the record (raw
// response, prompt, verifier output), the artifacts, the next step's
// prompt, the run or the log.
func TestEchoedKeyNeverStored(t *testing.T) {
	srv, prompts := echoModel(t, 200)
	e := newSecretEnv(t, srv.Client())
	first := modelStep("first", "triage", srv.URL)
	first.Verifier = &pipeline.Verifier{Executor: "gateway", ExecutorConfig: first.ExecutorConfig,
		Trigger: pipeline.VerifierTrigger{Always: true}, CombinationStrategy: pipeline.CombineMinimum}
	resp, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, first))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != task.StatusCompleted {
		t.Fatalf("status %q: %s", resp.Status, resp.Reason)
	}
	out := decodeMap(t, resp.Output)
	if out["echo"] != "[REDACTED]" || out["escaped"] != "[REDACTED]" || !strings.Contains(out["summary"].(string), "[REDACTED]") {
		t.Errorf("output = %s", resp.Output)
	}
	if _, ok := out["failed"]; ok {
		t.Errorf("the reply's failed field reached the output: %s", resp.Output)
	}
	recs := stepRecords(t, e.st, "first")
	if len(recs) != 1 || len(recs[0].VerifierOutput) == 0 || !strings.Contains(recs[0].RawResponse, "Called with [REDACTED]") {
		t.Fatalf("records = %+v", recs)
	}

	second := modelStep("second", "last said {{ steps.first.summary }} / {{ steps.first.echo }} / {{ artifacts.first['log.txt'] }}", srv.URL)
	req := newRequest(t, task.ModeStep, second)
	req.Steps = resp.Steps
	resp2, err := e.h.Respond(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	rec2 := stepRecords(t, e.st, "second")
	if len(rec2) != 1 || !strings.Contains(rec2[0].Prompt, "last said called with [REDACTED] / [REDACTED] / key=[REDACTED]") {
		t.Errorf("second prompt = %+v", rec2)
	}
	for i, p := range *prompts {
		e.assertNoKey(t, fmt.Sprintf("request %d sent to the model", i), p)
	}
	all, _ := e.st.ListSteps(context.Background(), "run-1")
	e.assertNoKey(t, "responses and records", string(mustJSON(t, []any{resp, resp2, all, getRun(t, e.st)})))
}

// TestEchoedKeyInErrors: the same when the key comes back in an error, for
// a step (returned and recorded), a branch (its failed output) and a
// failure webhook whose target echoes its token and fails.
func TestEchoedKeyInErrors(t *testing.T) {
	srv, _ := echoModel(t, http.StatusUnauthorized)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "bad token %s", r.Header.Get("Authorization"))
	}))
	defer hook.Close()
	cases := []struct {
		name string
		run  func(t *testing.T, e *secretEnv) (any, error)
		flag string // a flag the last record must carry
	}{
		{"step", func(t *testing.T, e *secretEnv) (any, error) {
			return e.h.Respond(context.Background(), newRequest(t, task.ModeStep, modelStep("s", "go", srv.URL)))
		}, ""},
		{"branch", func(t *testing.T, e *secretEnv) (any, error) {
			st := modelStep("b", "go", srv.URL)
			req := newRequest(t, task.ModeBranch, pipeline.Branch{Name: "b", Executor: st.Executor, ExecutorConfig: st.ExecutorConfig, PromptTemplate: "go"})
			req.Group = "g"
			resp, err := e.h.Respond(context.Background(), req)
			if err == nil && resp.Status != task.StatusFailed {
				t.Errorf("branch status %q", resp.Status)
			}
			return resp, err
		}, ""},
		{"failure webhook refused", func(t *testing.T, e *secretEnv) (any, error) {
			st := modelStep("f", "go", srv.URL)
			st.OnFailure = pipeline.OnFailure{Policy: pipeline.FailureAbort, Webhook: &pipeline.FailureWebhook{
				URL: "http://127.0.0.1:1/hook/${HOOK_TOKEN}?token=${HOOK_TOKEN}", Headers: map[string]string{"Authorization": "Bearer ${HOOK_TOKEN}"}}}
			req := newRequest(t, task.ModeFailure, st)
			req.Pipeline.Stage = pipeline.StageProduction
			req.Error = &task.Error{Error: "ExecutorRejected", Cause: "gateway: HTTP 401: key [REDACTED] is not valid"}
			return e.h.Respond(context.Background(), req)
		}, FlagFailureWebhookFailed},
		{"failure webhook echoes", func(t *testing.T, e *secretEnv) (any, error) {
			st := modelStep("f", "go", srv.URL)
			st.OnFailure = pipeline.OnFailure{Policy: pipeline.FailureContinue, Webhook: &pipeline.FailureWebhook{
				URL: hook.URL + "/hook?token=${HOOK_TOKEN}", Headers: map[string]string{"Authorization": "Bearer ${HOOK_TOKEN}"},
				Payload: map[string]any{"why": "{{ step_failure.summary }}"}}}
			req := newRequest(t, task.ModeFailure, st)
			req.Pipeline.Stage = pipeline.StageProduction
			req.Error = &task.Error{Error: "ExecutorRejected", Cause: "rejected"}
			return e.h.Respond(context.Background(), req)
		}, FlagFailureWebhookFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newSecretEnv(t, srv.Client())
			resp, err := c.run(t, e)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			all, _ := e.st.ListSteps(context.Background(), "run-1")
			if len(all) == 0 {
				t.Fatal("nothing recorded")
			}
			last := all[len(all)-1]
			if last.Error == "" {
				t.Errorf("record without an error: %+v", last)
			}
			if c.flag != "" && !strings.Contains(strings.Join(last.Flags, ","), c.flag) {
				t.Errorf("flags = %v, want %s", last.Flags, c.flag)
			}
			e.assertNoKey(t, "error, response and records", msg+string(mustJSON(t, []any{resp, all})))
		})
	}
}
