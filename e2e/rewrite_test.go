package e2e

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const rewriteSource = `name: p
notifications:
  escalate:
    - channel: slack
      config: {url: "${SLACK_URL}"}
  stopped: {channel: log, template: "x"}
steps:
  - name: g
    executor: gateway
    executor_config: {model: m, api_key: "${OPENAI_KEY}"}
    verifier:
      executor: anthropic
      executor_config: {model: c}
  - name: b
    executor: bedrock
    executor_config: {model: anthropic.claude}
  - name: w
    executor: webhook
    executor_config: {url: "{{ base }}/x", timeout_seconds: 20}
    on_failure: {policy: continue, webhook: {url: "https://ops/hook"}}
  - name: n
    executor: notify
    executor_config: {url: "https://n"}
    prompt_template: "costs $${NOT_A_SECRET}"
  - name: h
    executor: human
  - parallel:
      name: grp
      steps:
        - {name: left, executor: gateway}
        - {name: right, executor: anthropic, executor_config: {model: c}}
  - fan_out:
      name: fan
      over: steps.g.items
      executor: gateway
      executor_config: {model: m}
`

func rewritten(t *testing.T, src, responses string) (map[string]any, Variant) {
	t.Helper()
	script, err := ParseScript([]byte(responses))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Rewrite([]byte(src), "sc", &Fake{URL: "http://fake"}, script)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(v.YAML, &doc); err != nil {
		t.Fatal(err)
	}
	return doc, v
}

// at follows a path of map keys and list indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestRewrite(t *testing.T) {
	doc, v := rewritten(t, rewriteSource, "w: [{error: timeout}]\nfan/1: [{error: timeout}]\n")
	steps := doc["steps"]
	cases := []struct {
		name string
		got  any
		want any
	}{
		{"gateway base_url", at(steps, 0, "executor_config", "base_url"), "http://fake/s/sc/m/g/v1"},
		{"gateway keeps its api_key", at(steps, 0, "executor_config", "api_key"), "${OPENAI_KEY}"},
		{"verifier key", at(steps, 0, "verifier", "executor_config", "base_url"), "http://fake/s/sc/m/g:verifier"},
		{"bedrock model names the step", at(steps, 1, "executor_config", "model"), "anthropic.claude~sc~b"},
		{"webhook url", at(steps, 2, "executor_config", "url"), "http://fake/s/sc/h/w"},
		{"timed-out step's timeout", at(steps, 2, "timeout_seconds"), TimeoutSeconds},
		{"timed-out webhook's own timeout", at(steps, 2, "executor_config", "timeout_seconds"), TimeoutSeconds},
		{"failure webhook", at(steps, 2, "on_failure", "webhook", "url"), "http://fake/s/sc/n/failure-w"},
		{"notify url", at(steps, 3, "executor_config", "url"), "http://fake/s/sc/h/n"},
		{"notify without timeout replies keeps no timeout", at(steps, 3, "timeout_seconds"), nil},
		{"prompt untouched", at(steps, 3, "prompt_template"), "costs $${NOT_A_SECRET}"},
		{"human untouched", at(steps, 4), map[string]any{"name": "h", "executor": "human"}},
		{"branch without config gets one", at(steps, 5, "parallel", "steps", 0, "executor_config", "base_url"), "http://fake/s/sc/m/left/v1"},
		{"anthropic branch", at(steps, 5, "parallel", "steps", 1, "executor_config", "base_url"), "http://fake/s/sc/m/right"},
		{"fan-out key is a template", at(steps, 6, "fan_out", "executor_config", "base_url"), "http://fake/s/sc/m/fan/{{ fan_out_index }}/v1"},
		{"fan-out api_key for a templated base_url", at(steps, 6, "fan_out", "executor_config", "api_key"), ""},
		{"fan-out item's timeout", at(steps, 6, "fan_out", "timeout_seconds"), TimeoutSeconds},
		{"notification url", at(doc, "notifications", "escalate", 0, "config", "url"), "http://fake/s/sc/n/notification-escalate"},
		{"notification without url untouched", at(doc, "notifications", "stopped", "config"), nil},
		{"secrets named, $$ escapes not", strings.Join(v.Secrets, ","), "OPENAI_KEY,SLACK_URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if g, w := yamlText(c.got), yamlText(c.want); g != w {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
}

// TestRewriteTimeoutKeys: only a timeout scripted for the step itself, its
// verifier or, for a fan-out, one of its items shortens its timeout.
func TestRewriteTimeoutKeys(t *testing.T) {
	src := "name: p\nsteps:\n  - {name: a, executor: gateway}\n  - fan_out: {name: f, over: steps.a.x, executor: gateway}\n"
	for _, c := range []struct {
		responses string
		a, f      bool
	}{
		{"a: [{error: timeout}]", true, false},
		{"a:verifier: [{error: timeout after 3s}]", true, false},
		{"a: [{error: \"http 504\"}]", false, false},
		{"ab: [{error: timeout}]", false, false},
		{"f/12: [{error: timeout}]", false, true},
		{"f/x: [{error: timeout}]", false, false},
		{"f/: [{error: timeout}]", false, false},
		{"f: [{error: timeout}]", false, false},
	} {
		t.Run(c.responses, func(t *testing.T) {
			doc, _ := rewritten(t, src, c.responses)
			if got := at(doc, "steps", 0, "timeout_seconds") != nil; got != c.a {
				t.Errorf("step a shortened: %v, want %v", got, c.a)
			}
			if got := at(doc, "steps", 1, "fan_out", "timeout_seconds") != nil; got != c.f {
				t.Errorf("fan-out f shortened: %v, want %v", got, c.f)
			}
		})
	}
}

func TestRewriteRefuses(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"openclaw", "name: p\nsteps: [{name: a, executor: openclaw}]\n", `step "a": the box has no counterpart of executor "openclaw"`},
		{"bedrock fan-out", "name: p\nsteps: [{fan_out: {name: f, over: x, executor: bedrock, executor_config: {model: m}}}]\n", "a bedrock fan-out cannot name each item"},
		{"not a mapping", "- a\n", "not a pipeline mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Rewrite([]byte(c.src), "sc", &Fake{URL: "http://fake"}, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func yamlText(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}
