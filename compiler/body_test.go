package compiler

import (
	"strings"
	"testing"
)

// hookStep is a webhook step named hook whose prompt_template is the
// block below it, indented by six spaces (the text starts at column 7 of
// line 7).
const hookStep = "name: p\nsteps:\n  - name: hook\n    executor: webhook\n    executor_config: {url: \"https://x.example.com\"}\n    prompt_template: |\n"

func TestBodyWarnings(t *testing.T) {
	const inString = ` is pasted into a JSON string in the request body, so a value containing a quote can change the body's structure; `
	const unencoded = ` is pasted into JSON text unencoded, so a value can change the body's structure; `
	const usePayload = "write the body as executor_config.payload (a mapping) instead"
	cases := []struct {
		name string
		src  string
		want []string // every diagnostic, in order
	}{
		{"value in a JSON string", hookStep + `      {"service": "{{ labels.service }}", "n": 1}` + "\n",
			[]string{`p.yaml:7:20: warning: step "hook": prompt_template: "{{ labels.service }}"` + inString + usePayload}},
		{"each value, on its own line", hookStep + "      {\n        \"action\": \"{{ labels.action }}\",\n        \"run\": \"run {{ pipeline_run_id }}\"\n      }\n",
			[]string{
				`p.yaml:8:20: warning: step "hook": prompt_template: "{{ labels.action }}"` + inString + usePayload,
				`p.yaml:9:21: warning: step "hook": prompt_template: "{{ pipeline_run_id }}"` + inString + usePayload,
			}},
		{"a list body", hookStep + `      ["{{ labels.service }}"]` + "\n",
			[]string{`p.yaml:7:9: warning: step "hook": prompt_template: "{{ labels.service }}"` + inString + usePayload}},
		{"json filter inside quotes is still pasted", hookStep + `      {"a": "{{ labels.service | json }}"}` + "\n",
			[]string{`p.yaml:7:14: warning: step "hook": prompt_template: "{{ labels.service | json }}"` + inString + usePayload}},
		{"unencoded outside quotes", hookStep + `      {"n": {{ labels.count }}}` + "\n",
			[]string{`p.yaml:7:13: warning: step "hook": prompt_template: "{{ labels.count }}"` + unencoded + "write {{ labels.count | json }}, or the body as executor_config.payload (a mapping)"}},
		{"another filter last", hookStep + `      {"n": {{ labels.count | json | upcase }}}` + "\n",
			[]string{`p.yaml:7:13: warning: step "hook": prompt_template: "{{ labels.count | json | upcase }}"` + unencoded + "write {{ labels.count | json | upcase | json }}, or the body as executor_config.payload (a mapping)"}},
		{"escaped quote keeps the string open", hookStep + `      {"a": "say \"hi\" {{ labels.x }}"}` + "\n",
			[]string{`p.yaml:7:25: warning: step "hook": prompt_template: "{{ labels.x }}"` + inString + usePayload}},
		{"quotes in a Liquid tag do not count", hookStep + `      {"a": {% if labels.x == "y" %}1{% else %}2{% endif %}, "b": "{{ labels.z }}"}` + "\n",
			[]string{`p.yaml:7:68: warning: step "hook": prompt_template: "{{ labels.z }}"` + inString + usePayload}},
		{"leading Liquid tags", hookStep + `      {% if labels.x %}{"a": "{{ labels.y }}"}{% endif %}` + "\n",
			[]string{`p.yaml:7:31: warning: step "hook": prompt_template: "{{ labels.y }}"` + inString + usePayload}},
		{"a quote in raw text counts", hookStep + `      {"a": {% raw %}"{% endraw %}{{ labels.x }}"}` + "\n",
			[]string{`p.yaml:7:35: warning: step "hook": prompt_template: "{{ labels.x }}"` + inString + usePayload}},
		{"trim marks", hookStep + `      {"a": "{{- labels.y -}}"}` + "\n",
			[]string{`p.yaml:7:14: warning: step "hook": prompt_template: "{{- labels.y -}}"` + inString + usePayload}},
		{"single-quoted scalar", "name: p\nsteps:\n  - {name: hook, executor: webhook, executor_config: {url: \"https://x.example.com\"}, prompt_template: '{\"a\": \"{{ labels.y }}\"}'}\n",
			[]string{`p.yaml:3:111: warning: step "hook": prompt_template: "{{ labels.y }}"` + inString + usePayload}},
		{"parallel branch", "name: p\nsteps:\n  - parallel:\n      name: g\n      steps:\n        - name: hook\n          executor: webhook\n          executor_config: {url: \"https://x.example.com\"}\n          prompt_template: |\n            {\"a\": \"{{ labels.y }}\"}\n",
			[]string{`p.yaml:10:20: warning: branch "hook" of parallel "g": prompt_template: "{{ labels.y }}"` + inString + usePayload}},
		{"fan_out", "name: p\nsteps:\n  - fan_out:\n      name: f\n      over: \"['a']\"\n      executor: webhook\n      executor_config: {url: \"https://x.example.com\"}\n      prompt_template: |\n        {\"a\": \"{{ item }}\"}\n",
			[]string{`p.yaml:9:16: warning: fan_out "f": prompt_template: "{{ item }}"` + inString + usePayload}},
		{"notify string payload", "name: p\nsteps:\n  - name: tell\n    executor: notify\n    executor_config:\n      url: https://x.example.com\n      payload: '{\"text\": \"{{ labels.y }}\"}'\n",
			[]string{`p.yaml:7:27: warning: step "tell": executor_config.payload: "{{ labels.y }}"` + inString + "write executor_config.payload as a mapping instead"}},
		{"notify string payload outside quotes", "name: p\nsteps:\n  - name: tell\n    executor: notify\n    executor_config:\n      url: https://x.example.com\n      payload: |\n        {\"n\": {{ labels.n }}}\n",
			[]string{`p.yaml:8:15: warning: step "tell": executor_config.payload: "{{ labels.n }}"` + unencoded + "write {{ labels.n | json }}, or executor_config.payload as a mapping"}},
		{"webhook notification", "name: p\nnotifications:\n  escalate:\n    - channel: webhook\n      config: {url: \"https://x.example.com\"}\n      template: |\n        {\"text\": \"{{ step_summary }}\", \"c\": {{ confidence }}}\n" +
			"steps:\n  - {name: a, executor: scripted}\n",
			[]string{
				`p.yaml:7:19: warning: notifications.escalate: template: "{{ step_summary }}"` + inString + "write the value outside quotes with the json filter, as {{ step_summary | json }}",
				`p.yaml:7:45: warning: notifications.escalate: template: "{{ confidence }}"` + unencoded + "write {{ confidence | json }} instead",
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got := load(t, c.src)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("diagnostics:\n  got  %q\n  want %q", got, c.want)
			}
		})
	}
}

// TestBodiesWithoutWarnings: bodies where no value can change the
// structure, and texts that are not JSON bodies.
func TestBodiesWithoutWarnings(t *testing.T) {
	cases := []struct {
		name string
		src  string
	}{
		{"json filter outside quotes", hookStep + `      {"lines": {{ labels.lines | json }}, "n": {{ labels.n | default: "a|b" | json }}}` + "\n"},
		{"json filter with trim marks", hookStep + `      [{{- labels.x | json -}}]` + "\n"},
		{"no outputs", hookStep + `      {"a": "b"}` + "\n"},
		{"not JSON", hookStep + `      Alert "{{ labels.x }}" fired` + "\n"},
		{"an output first is not JSON text", hookStep + `      {{ labels.body }} "{{ labels.x }}"` + "\n"},
		{"raw text is not an output", hookStep + `      {"a": "{% raw %}{{ not.an.output }}{% endraw %}", "b": {{ labels.x | json }}}` + "\n"},
		{"a comment does not count", hookStep + `      {"a": {% comment %}"{% endcomment %}{{ labels.x | json }}}` + "\n"},
		{"escaped backslash closes the string", hookStep + `      {"a": "x\\", "b": {{ labels.x | json }}}` + "\n"},
		{"model step", "name: p\nsteps:\n  - name: a\n    executor: scripted\n    prompt_template: |\n      {\"a\": \"{{ labels.x }}\"}\n"},
		{"webhook payload mapping", "name: p\nsteps:\n  - name: hook\n    executor: webhook\n    executor_config:\n      url: https://x.example.com\n      payload:\n        a: '{\"b\": \"{{ labels.x }}\"}'\n"},
		{"notify payload mapping", "name: p\nsteps:\n  - name: tell\n    executor: notify\n    executor_config:\n      url: https://x.example.com\n      payload: {text: '{\"b\": \"{{ labels.x }}\"}'}\n"},
		{"slack notification", "name: p\nnotifications:\n  escalate:\n    - channel: slack\n      config: {url: \"https://x.example.com\"}\n      template: '{\"text\": \"{{ step_summary }}\"}'\nsteps:\n  - {name: a, executor: scripted}\n"},
		{"log notification", "name: p\nnotifications:\n  escalate:\n    - channel: log\n      template: '{\"text\": \"{{ step_summary }}\"}'\nsteps:\n  - {name: a, executor: scripted}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, got := load(t, c.src); len(got) != 0 {
				t.Errorf("diagnostics: %q, want none", got)
			}
		})
	}
}

// TestPayloadAndPrompt: a webhook step's body is its payload or its
// prompt_template, never both; a blank prompt_template is none.
func TestPayloadAndPrompt(t *testing.T) {
	const head = "name: p\nsteps:\n  - name: hook\n    executor: webhook\n    executor_config: {url: \"https://x.example.com\", payload: {a: b}}\n"
	cases := []struct {
		name   string
		prompt string
		want   []string
	}{
		{"no prompt_template", "", nil},
		{"empty", "    prompt_template: \"\"\n", nil},
		{"blank", "    prompt_template: \" \\n\\t\"\n", nil},
		{"one character", "    prompt_template: x\n",
			[]string{`p.yaml:6:22: step "hook": prompt_template and executor_config.payload are both the webhook's request body; keep one (payload keeps values out of the body's structure)`}},
		{"JSON text is not warned about again", "    prompt_template: |\n      {\"a\": \"{{ labels.x }}\"}\n",
			[]string{`p.yaml:6:22: step "hook": prompt_template and executor_config.payload are both the webhook's request body; keep one (payload keeps values out of the body's structure)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got := load(t, head+c.prompt)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("diagnostics:\n  got  %q\n  want %q", got, c.want)
			}
		})
	}
}

func TestLastFilter(t *testing.T) {
	cases := map[string]string{
		"x":                          "",
		"x | json":                   "json",
		"x|json":                     "json",
		"x | json | upcase":          "upcase",
		`x | default: "a|b"`:         "default",
		`x | default: 'a|b' | json`:  "json",
		"x | split: ',' | join: '-'": "join",
		"x |\n json":                 "json",
		"x | jsonify":                "jsonify",
	}
	for in, want := range cases {
		if got := lastFilter(in); got != want {
			t.Errorf("lastFilter(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzJSONPastes: any text is scanned without a panic, and every paste
// found starts at a {{ of the text and is the tag written there.
func FuzzJSONPastes(f *testing.F) {
	for _, s := range []string{
		`{"a": "{{ x }}"}`, `[{{ x | json }}]`, `{% if a %}{"a": "{{- b -}}"}{% endif %}`,
		`{"a": {% raw %}"{% endraw %}{{ x }}"}`, `{"a": {% comment %}"{% endcomment %}{{ x }}}`,
		`{"a": "\`, `{"a": "{{ x`, `{% raw`, `{%`, `{"a": "\{{ x }}"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, p := range jsonPastes(text) {
			if p.offset < 0 || p.offset+len(p.tag) > len(text) || text[p.offset:p.offset+len(p.tag)] != p.tag || !strings.HasPrefix(p.tag, "{{") || !strings.HasSuffix(p.tag, "}}") {
				t.Fatalf("paste %+v does not match the text %q", p, text)
			}
		}
	})
}
