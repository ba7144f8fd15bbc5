package steprun

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

func TestTemplateContext(t *testing.T) {
	steps := map[string]json.RawMessage{
		"first-step":          json.RawMessage(`{"confidence":0.9,"summary":"found it","next_step_context":"","action":"restart","raw_response":"secret raw"}`),
		"lost":                json.RawMessage(`{"confidence":0,"summary":"ExecutorTimeout: slow","next_step_context":"","failed":true}`),
		"each/0":              json.RawMessage(`{"confidence":0.7,"summary":"zero","next_step_context":""}`),
		"a-b_c-d":             json.RawMessage(`{"confidence":0.5,"summary":"mixed","next_step_context":""}`),
		"x-1-2-3-4-5-6-7-8-9": json.RawMessage(`{"confidence":0.5,"summary":"long","next_step_context":""}`),
	}
	tests := []struct {
		name, tmpl, want string
	}{
		{"underscore alias", "{{ steps.first_step.summary }}", "found it"},
		{"bracket form", "{{ steps['first-step'].action }}", "restart"},
		{"mixed hyphens and underscores", "{{ steps.a_b_c_d.summary }}", "mixed"},
		{"many hyphens", "{{ steps.x_1_2_3_4_5_6_7_8_9.summary }}", "long"},
		{"fan-out key", "{{ steps['each/0'].summary }}", "zero"},
		{"raw_response excluded", "[{{ steps.first_step.raw_response }}]", "[]"},
		{"failed and continued", "{{ steps.lost.confidence }} {{ steps.lost.summary }}", "0 ExecutorTimeout: slow"},
		{"vars at top level", "{{ env }}", "prod"},
		{"include leaf and dotted", "{{ service }} {{ labels.service }} {{ severity }} {{ metadata.order_id }} {{ order_id }}", "api api critical 42 42"},
		{"run facts", "{{ pipeline_run_id }} {{ pipeline_name }} {{ current_step }}", "run-1 demo triage"},
		{"undefined renders empty", "[{{ nothing }}]", "[]"},
		{"missing step tests false", "{% if steps.never %}yes{% else %}no{% endif %}", "no"},
		{"loop absent outside loops", "[{{ loop.iteration }}]", "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, `triage: [{confidence: 0.9, summary: ok, next_step_context: ""}]`)
			req := newRequest(t, task.ModeStep, seqStep("triage", tc.tmpl))
			req.Trigger = json.RawMessage(`{"severity":"critical","labels":{"service":"api"},"metadata":{"order_id":42}}`)
			req.Pipeline.Vars = map[string]string{"env": "prod"}
			req.Pipeline.Include = []string{"severity", "labels.service", "metadata.order_id"}
			req.Steps = steps
			if _, err := e.h.Respond(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got := stepRecords(t, e.st, "triage")[0].Prompt; got != tc.want {
				t.Errorf("rendered %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExecutorConfigRendering(t *testing.T) {
	e := newEnv(t, `triage: [{confidence: 0.9, summary: ok, next_step_context: ""}]`)
	st := seqStep("triage", "hi")
	st.Executor = "gateway"
	st.ExecutorConfig = map[string]any{"base_url": "http://gw/v1", "model": "{{ steps.pick.model }}", "api_key": "${API_KEY}"}
	req := newRequest(t, task.ModeStep, st)
	req.Steps = map[string]json.RawMessage{"pick": json.RawMessage(`{"confidence":1,"summary":"s","next_step_context":"","model":"m-${DB_PASSWORD}"}`)}
	if _, err := e.h.Respond(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	cfg := e.prov.Calls()[0].Config
	if cfg["model"] != "m-$${DB_PASSWORD}" || cfg["api_key"] != "${API_KEY}" {
		t.Errorf("config = %v: values must be escaped, the pipeline's own references kept", cfg)
	}
	if st.ExecutorConfig["model"] != "{{ steps.pick.model }}" {
		t.Errorf("the step config was changed")
	}
}

func TestExecutorConfigTemplateError(t *testing.T) {
	e := newEnv(t, ``)
	st := seqStep("triage", "hi")
	st.ExecutorConfig = map[string]any{"headers": map[string]any{"X": "{{ x | nofilter }}"}}
	_, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, st))
	if fault.Name(err) != fault.NameTemplateError || !strings.Contains(err.Error(), "executor_config.headers.X") {
		t.Fatalf("err = %v, want a TemplateError naming executor_config.headers.X", err)
	}
}

func TestArtifacts(t *testing.T) {
	e := newEnv(t, `writer: [{confidence: 0.9, summary: wrote, next_step_context: "", artifacts: {report: "the full report"}}]
reader: [{confidence: 0.9, summary: read, next_step_context: ""}]`)
	e.h.Artifacts = Dir{Root: t.TempDir()}
	ctx := context.Background()
	resp, err := e.h.Respond(ctx, newRequest(t, task.ModeStep, seqStep("writer", "w")))
	if err != nil {
		t.Fatal(err)
	}
	arts := decodeMap(t, resp.Output)["artifacts"].(map[string]any)
	if arts["report"] != "local://run-1/writer/report" {
		t.Fatalf("artifact reference = %v", arts["report"])
	}
	req := newRequest(t, task.ModeStep, seqStep("reader", "{{ artifacts.writer.report }}|{{ artifacts.writer.missing }}"))
	req.Steps = resp.Steps
	if _, err := e.h.Respond(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := stepRecords(t, e.st, "reader")[0].Prompt; got != "the full report|" {
		t.Errorf("prompt = %q", got)
	}
}

func TestDirRejectsEscapes(t *testing.T) {
	d := Dir{Root: t.TempDir()}
	ctx := context.Background()
	for _, key := range []string{"../x", "a/b", "..", ""} {
		if _, err := d.Put(ctx, "run", "step", key, "c"); err == nil {
			t.Errorf("Put key %q: no error", key)
		}
	}
	if _, err := d.Get(ctx, "local://run/../../etc"); err == nil {
		t.Errorf("Get of an escaping reference: no error")
	}
	if _, err := d.Get(ctx, "local://run/step/none"); err == nil {
		t.Errorf("Get of a missing artifact: no error")
	}
	for _, key := range []string{"../x", "a/b", "..", ""} {
		if _, err := d.Ref("run", "step", key); err == nil {
			t.Errorf("Ref key %q: no error", key)
		}
	}
	ref, err := d.Put(ctx, "run", "group/branch", "k.json", "c")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := d.Ref("run", "group/branch", "k.json"); r != ref || err != nil {
		t.Errorf("Ref = %q, %v; want Put's reference %q", r, err, ref)
	}
}

func TestHelpers(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {60000, "60,000"}, {1234567, "1,234,567"}} {
		if got := thousands(tc.n); got != tc.want {
			t.Errorf("thousands(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   task.Error
		want string
	}{
		{task.Error{Error: "ExecutorTimeout", Cause: `{"errorMessage":"slow","errorType":"ExecutorTimeout"}`}, "ExecutorTimeout: slow"},
		{task.Error{Error: "States.Timeout", Cause: "Task timed out"}, "States.Timeout: Task timed out"},
		{task.Error{Cause: "{not json"}, "{not json"},
	} {
		if got := errorText(&tc.in); got != tc.want {
			t.Errorf("errorText(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	v := &pipeline.Verifier{Trigger: pipeline.VerifierTrigger{ConfidenceAbove: 0.2, ConfidenceBelow: 0.9}}
	for c, want := range map[float64]bool{0.2: false, 0.5: true, 0.9: false} {
		if triggered(v, c) != want {
			t.Errorf("triggered at %v = %v", c, !want)
		}
	}
}
