package executor_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// liveWebhooks answers webhook calls with a registry that makes real
// requests and every other call from scripted replies.
type liveWebhooks struct{ scripted, live *executor.Registry }

func (p liveWebhooks) Provider(call executor.Call) (llmoutput.Provider, error) {
	if call.Executor == executor.Webhook {
		return p.live.Provider(call)
	}
	return p.scripted.Provider(call)
}

// redirect sends every request to target, keeping its path, and records
// the host it was meant for.
type redirect struct {
	target *url.URL
	mu     sync.Mutex
	hosts  []string
}

func (r *redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.hosts = append(r.hosts, req.URL.Host)
	r.mu.Unlock()
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = r.target.Scheme, r.target.Host, ""
	return http.DefaultTransport.RoundTrip(out)
}

// TestRemediationBodyInjection runs the SRE example with a triage reply
// (or an alert label) built to rewrite the remediation request: the
// webhook target receives a JSON body with exactly the pipeline's keys,
// each holding the value as it was, quotes and all.
func TestRemediationBodyInjection(t *testing.T) {
	const attack = `restart", "service": "payments-db`
	cases := []struct {
		name            string
		action, service string
	}{
		{name: "the model's action", action: attack, service: "checkout-api"},
		{name: "an alert label", action: "restart", service: `checkout-api", "action": "scale`},
	}
	src, err := os.ReadFile("../../pipelines/sre-alert-triage.yaml")
	if err != nil {
		t.Fatal(err)
	}
	event, err := os.ReadFile("../../events/checkout-latency.trigger.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies [][]byte
			var headers []http.Header
			var paths []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies, headers, paths = append(bodies, b), append(headers, r.Header.Clone()), append(paths, r.URL.Path)
				mu.Unlock()
				io.WriteString(w, `{"status": "accepted"}`)
			}))
			defer srv.Close()
			target, _ := url.Parse(srv.URL)
			rt := &redirect{target: target}

			reply, _ := json.Marshal(map[string]any{
				"confidence": 0.88, "summary": "checkout-api is saturated after the deploy", "next_step_context": "",
				"proceed": true, "action": c.action, "services": []string{"checkout-api"},
			})
			replies, err := executor.ParseResponses("responses.yaml", []byte("triage:\n  - '"+strings.ReplaceAll(string(reply), "'", "''")+"'\n"+
				"triage:verifier:\n  - '{\"confidence\": 0.9, \"summary\": \"agrees\", \"next_step_context\": \"\"}'\n"+
				"approve-remediation:\n  - {decision: approve, by: oncall-sre}\n"))
			if err != nil {
				t.Fatal(err)
			}
			execs := liveWebhooks{
				scripted: executor.NewRegistry(executor.Deps{Responses: replies}),
				live: executor.NewRegistry(executor.Deps{
					HTTP:    &http.Client{Transport: rt},
					Secrets: secret.Env(func(k string) string { return map[string]string{"AUTOMATION_TOKEN": "tok-automation"}[k] }),
				}),
			}
			var trig struct{ Trigger map[string]any }
			if err := json.Unmarshal(event, &trig); err != nil {
				t.Fatal(err)
			}
			trig.Trigger["labels"].(map[string]any)["service"] = c.service
			trigger, _ := json.Marshal(trig.Trigger)

			dir := t.TempDir()
			path := filepath.Join(dir, "sre-alert-triage.yaml")
			if err := os.WriteFile(path, src, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			r, err := local.Open(ctx, local.Config{Dir: filepath.Join(dir, "state"), Handler: func(st *sqlite.Store) local.StepHandler {
				return &steprun.Handler{Store: st, Executors: execs}
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			o, err := r.Run(ctx, path, trigger, "")
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != store.RunWaiting {
				t.Fatalf("run %s (%s), want it waiting for the approval", o.Status, o.Reason)
			}
			if o, err = r.Decide(ctx, o.RunID, "approve-remediation", "approve", "oncall-sre"); err != nil {
				t.Fatal(err)
			}
			if o.Status != store.RunCompleted {
				t.Fatalf("run %s (%s), want completed", o.Status, o.Reason)
			}

			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != 1 {
				t.Fatalf("%d webhook requests, want 1", len(bodies))
			}
			if rt.hosts[0] != "automation.example.com" || paths[0] != "/hooks/remediate" {
				t.Errorf("request to %s%s", rt.hosts[0], paths[0])
			}
			if got := headers[0].Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			if got := headers[0].Get("Authorization"); got != "Bearer tok-automation" {
				t.Errorf("Authorization %q", got)
			}
			if keys := topKeys(t, bodies[0]); !reflect.DeepEqual(keys, []string{"action", "run", "service"}) {
				t.Errorf("body keys %q, want each of action, run, service once", keys)
			}
			var body map[string]any
			if err := json.Unmarshal(bodies[0], &body); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, bodies[0])
			}
			want := map[string]any{"service": c.service, "action": c.action, "run": o.RunID}
			if !reflect.DeepEqual(body, want) {
				t.Errorf("body = %s\nwant %v", bodies[0], want)
			}
		})
	}
}

// topKeys returns the keys of the JSON object body in the order written,
// repeats included (decoding into a map keeps only the last of them).
func topKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("body is not a JSON object: %s", body)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("body: %v", err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("body: %v", err)
		}
	}
	return keys
}

// TestValidatePayload: validate, with the executors' config checks,
// reports a payload that cannot be a body at the step's executor_config,
// and a body given twice at the prompt_template.
func TestValidatePayload(t *testing.T) {
	const head = "name: p\nsteps:\n  - name: hook\n    executor: webhook\n    executor_config:\n      url: https://x.example.com\n"
	cases := []struct {
		name string
		src  string
		want []string // every diagnostic, in order
	}{
		{"a mapping", head + "      payload: {action: \"{{ labels.action }}\", replicas: 3}\n", nil},
		{"a list", head + "      payload: [\"{{ labels.action }}\"]\n", nil},
		{"a string", head + "      payload: '{\"action\": \"{{ labels.action }}\"}'\n",
			[]string{`p.yaml:6:7: step "hook": executor_config.payload: want a mapping or a list, got a string (a text body is the prompt_template)`}},
		{"a number", head + "      payload: 3\n",
			[]string{`p.yaml:6:7: step "hook": executor_config.payload: want a mapping or a list, got a number`}},
		{"with GET", head + "      method: GET\n      payload: {a: b}\n",
			[]string{`p.yaml:6:7: step "hook": executor_config.payload: a GET request has no body: use POST, PUT, PATCH or DELETE, or drop payload`}},
		{"as text/plain", head + "      content_type: text/plain\n      payload: {a: b}\n",
			[]string{`p.yaml:6:7: step "hook": executor_config.payload: a mapping or a list cannot be sent as "text/plain": use application/json (the default) or application/x-www-form-urlencoded`}},
		{"and a prompt_template", head + "      payload: {a: b}\n    prompt_template: '{\"a\": \"b\"}'\n",
			[]string{`p.yaml:8:22: step "hook": prompt_template and executor_config.payload are both the webhook's request body; keep one (payload keeps values out of the body's structure)`}},
		{"notify list", "name: p\nsteps:\n  - name: tell\n    executor: notify\n    executor_config:\n      url: https://x.example.com\n      payload: [a]\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ds := compiler.LoadWith("p.yaml", []byte(c.src), settings.CheckConfig)
			var got []string
			for _, d := range ds {
				got = append(got, d.String())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("diagnostics:\n  got  %q\n  want %q", got, c.want)
			}
		})
	}
}
