package compiler

import (
	"strings"
	"testing"
)

// TestTemplatesCannotReachOutside: every field that holds a template is
// parsed by the one engine; a template that would read a file, or names
// a filter the engine does not have, is a positioned validate error.
func TestTemplatesCannotReachOutside(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want string
	}{
		{"include in a prompt", `name: p
steps:
  - name: a
    executor: webhook
    executor_config: {url: "https://x.example"}
    prompt_template: |
      Alert: {{ summary }}
      {% include "../../../../proc/self/environ" %}
`, `test.yaml:8:7: step "a": prompt_template: {% include %} is not allowed: templates cannot read files`},
		{"include the event names", `name: p
steps:
  - name: a
    executor: webhook
    executor_config: {url: "https://x.example"}
    prompt_template: "{% include summary %}"
`, `test.yaml:6:23: step "a": prompt_template: {% include %} is not allowed: templates cannot read files`},
		{"render in an executor_config value", `name: p
steps:
  - name: a
    executor: webhook
    executor_config:
      url: "https://x.example/{% render summary %}"
`, `{% render %} is not allowed: templates cannot read files`},
		{"include in a verifier's executor_config", `name: p
steps:
  - name: a
    executor: webhook
    executor_config: {url: "https://x.example"}
    verifier:
      executor: webhook
      executor_config: {url: "https://x.example/{% include 'x' %}"}
`, `{% include %} is not allowed`},
		{"include in a failure webhook", `name: p
steps:
  - name: a
    executor: webhook
    executor_config: {url: "https://x.example"}
    on_failure:
      policy: continue
      webhook:
        url: https://x.example
        payload: {why: "{% include 'x' %}"}
`, `{% include %} is not allowed`},
		{"include in a notification", `name: p
steps:
  - name: a
    executor: webhook
    executor_config: {url: "https://x.example"}
notifications:
  escalate:
    - channel: log
      template: "{% include 'x' %}"
`, `notifications.escalate: template: {% include %} is not allowed: templates cannot read files`},
		{"unknown filter", `name: p
steps:
  - name: a
    executor: webhook
    executor_config: {url: "https://x.example"}
    prompt_template: "Hi {{ summary | upper }}"
`, `test.yaml:6:39: step "a": prompt_template: undefined filter "upper"`},
		{"tablerow", `name: p
steps:
  - name: a
    executor: webhook
    executor_config: {url: "https://x.example"}
    prompt_template: "{% tablerow x in labels %}{% endtablerow %}"
`, `{% tablerow %} is not available`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ds := Load("test.yaml", []byte(c.src))
			if !strings.Contains(ds.String(), c.want) {
				t.Errorf("diagnostics:\n%s\nwant %q", ds.String(), c.want)
			}
		})
	}
}
