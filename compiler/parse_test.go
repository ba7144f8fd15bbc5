package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
)

// load parses and checks src as "p.yaml" and returns the diagnostics as
// strings.
func load(t *testing.T, src string) (*File, []string) {
	t.Helper()
	f, ds := Load("p.yaml", []byte(src))
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return f, out
}

func TestValidPipelineDefaults(t *testing.T) {
	f, ds := load(t, `
name: demo
steps:
  - name: triage
    executor: scripted
  - parallel:
      name: group
      steps:
        - {name: a, executor: scripted}
        - {name: b, executor: scripted, weight: 2}
      join: weighted_average
  - fan_out:
      name: each
      over: "{{ steps.triage.items }}"
      executor: scripted
`)
	if len(ds) != 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	p := f.Pipeline
	if p.Name != "demo" || p.Stage != pipeline.StageTesting || p.Version != 1 {
		t.Errorf("pipeline defaults: %+v", p)
	}
	s := p.Steps[0].(*pipeline.Step)
	if s.ConfidenceThreshold != 0.75 || s.OnLowConfidence != pipeline.LowEscalate || s.OnAbort != "notify" || s.OnFailure.Policy != "abort" {
		t.Errorf("step defaults: %+v", s)
	}
	if s.Pos.Line != 4 || s.Pos.Col != 5 {
		t.Errorf("step position = %v, want 4:5", s.Pos)
	}
	g := p.Steps[1].(*pipeline.Parallel)
	if g.Join != pipeline.JoinWeightedAverage || g.Branches[0].Weight != 1 || g.Branches[1].Weight != 2 {
		t.Errorf("parallel defaults: %+v %+v", g, g.Branches)
	}
	fo := p.Steps[2].(*pipeline.FanOut)
	if fo.As != "item" || fo.MaxItems != 20 || fo.OnEmpty != "complete" {
		t.Errorf("fan_out defaults: %+v", fo)
	}
}

func TestRetryVerifierDefaults(t *testing.T) {
	f, ds := load(t, `
name: demo
steps:
  - name: triage
    executor: gateway
    executor_config: {base_url: "http://x", model: m}
    retry: {}
    verifier: {executor: scripted}
    loop_until: {confidence: 0.9}
    on_failure: {webhook: {url: "http://hook"}}
`)
	if len(ds) != 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	s := f.Pipeline.Steps[0].(*pipeline.Step)
	if r := s.Retry; r.Attempts != 3 || r.Backoff != pipeline.BackoffExponential || r.DelaySeconds != 1 {
		t.Errorf("retry defaults: %+v", r)
	}
	if v := s.Verifier; v.Mode != "critic" || v.CombinationStrategy != "minimum" || v.VetoFloor != 0.6 || v.Trigger.ConfidenceBelow != 1 || v.Trigger.ConfidenceAbove != 0 || v.Trigger.Always {
		t.Errorf("verifier defaults: %+v", v)
	}
	if s.LoopUntil.MaxIterations != 3 {
		t.Errorf("loop_until defaults: %+v", s.LoopUntil)
	}
	if w := s.OnFailure.Webhook; s.OnFailure.Policy != "abort" || w.Method != "POST" || w.TimeoutSeconds != 30 {
		t.Errorf("on_failure defaults: %+v %+v", s.OnFailure, w)
	}
}

func TestPipelineLevelFields(t *testing.T) {
	f, ds := load(t, `
name: full
description: d
tags: [a, b]
version: 2
stage: production
vars: {team_name: x, limit: 5}
trigger:
  match:
    source: alertmanager
    severity: {in: [critical, warning]}
    summary: {regex: "disk .* full"}
    value: {gte: 10}
  dedup: {enabled: false, window_seconds: 60}
context_template: {include: [labels.service, metadata.order_id]}
durable: {on_interrupted: escalate, max_resume_age_seconds: 600}
budget: {max_tokens: 1000, max_cost: 1.5, include_approx_cost: true}
schedule: {cron: "*/5 9-17 * * mon-fri", timezone: Europe/Berlin, summary: s, labels: {k: v}, team: t}
notifications:
  escalate: {channel: log, template: "x"}
  stopped:
    - {channel: webhook, config: {url: "http://h"}}
steps:
  - {name: s, executor: webhook, executor_config: {url: "http://h"}}
`)
	if len(ds) != 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	p := f.Pipeline
	if p.Stage != "production" || p.Version != 2 || len(p.Tags) != 2 || len(p.Vars) != 2 || p.Vars[1].Value != "5" {
		t.Errorf("top level: %+v", p)
	}
	m := p.Trigger.Match
	if len(m) != 4 || m[0].Op != "eq" || m[1].Op != "in" || m[2].Op != "regex" || m[3].Op != "gte" || m[3].Value != int64(10) {
		t.Errorf("match: %+v", m)
	}
	if d := p.Trigger.Dedup; *d.Enabled || *d.WindowSeconds != 60 {
		t.Errorf("dedup: %+v", d)
	}
	if p.ContextInclude[0].Leaf() != "service" || p.ContextInclude[1].Leaf() != "order_id" {
		t.Errorf("include: %+v", p.ContextInclude)
	}
	if p.Durable.OnInterrupted != "escalate" || *p.Durable.MaxResumeAgeSeconds != 600 {
		t.Errorf("durable: %+v", p.Durable)
	}
	if *p.Budget.MaxTokens != 1000 || *p.Budget.MaxUSD != 1.5 || !p.Budget.IncludeApproxCost {
		t.Errorf("budget: %+v", p.Budget)
	}
	if p.Schedule.Severity != "info" || p.Schedule.Labels["k"] != "v" || p.Schedule.TimeZone != "Europe/Berlin" {
		t.Errorf("schedule: %+v", p.Schedule)
	}
	if len(p.Notifications) != 2 || p.Notifications[0].Notices[0].Channel != "log" || p.Notifications[1].Notices[0].Config["url"] != "http://h" {
		t.Errorf("notifications: %+v", p.Notifications)
	}
}

func TestDurableTrue(t *testing.T) {
	f, ds := load(t, "name: d\ndurable: true\nsteps: [{name: s, executor: scripted}]\n")
	if len(ds) != 0 || f.Pipeline.Durable == nil || f.Pipeline.Durable.OnInterrupted != "rerun" {
		t.Fatalf("durable: true: %v %+v", ds, f.Pipeline.Durable)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	f, ds := load(t, `
name: anchors
x-model: &model
  base_url: http://localhost:11434/v1
  model: ollama/llama3
steps:
  - name: a
    executor: gateway
    executor_config:
      <<: *model
      temperature: 0.1
`)
	// x-model is not a pipeline field: anchors live inside fields.
	if len(ds) != 1 || !strings.Contains(ds[0], `unknown field "x-model"`) {
		t.Fatalf("diagnostics: %v", ds)
	}
	cfg := f.Pipeline.Steps[0].(*pipeline.Step).ExecutorConfig
	if cfg["model"] != "ollama/llama3" || cfg["temperature"] != 0.1 {
		t.Errorf("merged config: %v", cfg)
	}
}

// TestErrors checks each bad input's message and position.
func TestErrors(t *testing.T) {
	const head = "name: p\nsteps:\n"
	cases := []struct {
		name string
		src  string
		want []string // every diagnostic, in order
	}{
		{"empty file", "", []string{"p.yaml:1:1: file is empty: a pipeline needs at least a name and steps"}},
		{"not a mapping", "- a\n- b\n", []string{"p.yaml:1:1: a pipeline file must be a mapping with name and steps, not a list"}},
		{"yaml syntax", "name: p\nsteps: [\n", []string{"p.yaml:2:8: invalid YAML: did not find expected node content"}},
		{"tab indentation", "name: p\nsteps:\n\t- name: a\n", []string{"p.yaml:3:1: invalid YAML: found character that cannot start any token"}},
		// The reference refused a file of two documents; the second was
		// ignored here, unchecked.
		{"second document", "name: p\nsteps: [{name: a, executor: scripted}]\n---\nname: q\nsteps: [{name: b, executor: scriptd}]\n",
			[]string{"p.yaml:3:1: a second YAML document starts here: a file holds one document; put the other in a file of its own"}},
		{"second document not YAML", "name: p\nsteps: [{name: a, executor: scripted}]\n---\nname: [q\n", []string{"p.yaml:4:8: invalid YAML: did not find expected ',' or ']'"}},
		// go-yaml names the line before the enclosing block's start for
		// these; the diagnostic points at the text that breaks the block.
		{"key indented under a flow value", head + "  - name: a\n    executor: scripted\n    verifier:\n      executor: scripted\n    executor_config: {model: m}\n      combination_strategy: veto\n",
			[]string{"p.yaml:8:7: invalid YAML: did not find expected key"}},
		{"list item indented into a step", head + "  - name: a\n    executor: scripted\n   - name: b\n", []string{"p.yaml:5:4: invalid YAML: did not find expected '-' indicator"}},
		{"step key outdented", head + "  - name: a\n    executor: scripted\n  executor: b\n", []string{"p.yaml:5:11: invalid YAML: did not find expected '-' indicator"}},
		{"tab inside a step", head + "  - name: a\n\texecutor: scripted\n", []string{"p.yaml:4:1: invalid YAML: found a tab character that violates indentation"}},
		{"colon in a plain value", head + "  - name: a\n    prompt_template: Summary: {{ x }}\n", []string{"p.yaml:4:29: invalid YAML: mapping values are not allowed in this context"}},
		{"unclosed quote", head + "  - name: a\n    prompt_template: \"Alert é\n    when: x\n", []string{"p.yaml:4:22: invalid YAML: found unexpected end of stream"}},
		{"unclosed flow mapping", head + "  - name: a\n    executor_config: {model: m, agent: x\n    prompt_template: hi\n", []string{"p.yaml:4:33: invalid YAML: did not find expected ',' or '}'"}},
		// A template inside executor_config (or a verifier's) is placed
		// in its own string, at any depth; it was placed at 1:1.
		{"executor_config template", head + "  - name: a\n    executor: webhook\n    executor_config:\n      url: http://x.example\n      headers:\n        X: \"{{ y | nofilter }}\"\n      payload:\n        k: [ok, \"a {{ steps.nope.summary }}\"]\n", []string{
			`p.yaml:8:20: step "a": executor_config.headers.X: undefined filter "nofilter"`,
			`p.yaml:10:23: step "a": executor_config.payload.k[1] refers to unknown step "nope"`,
		}},
		{"branch executor_config template", head + "  - parallel:\n      name: g\n      steps:\n        - {name: b, executor: webhook, executor_config: {url: \"http://x.example/{% bad %}\"}}\n", []string{
			`p.yaml:6:81: branch "b" of parallel "g": executor_config.url: undefined tag "bad"`,
		}},
		{"verifier executor_config template", head + "  - name: a\n    executor: scripted\n    verifier:\n      executor: scripted\n      executor_config: {x: \"{{ steps.nope.summary }}\"}\n", []string{
			`p.yaml:7:32: step "a": verifier.executor_config.x refers to unknown step "nope"`,
		}},
		{"failure webhook payload template", head + "  - name: a\n    executor: scripted\n    on_failure:\n      policy: continue\n      webhook:\n        url: http://x.example\n        payload: {s: \"{{ step_failure.summary | nofilter }}\"}\n", []string{
			`p.yaml:9:49: step "a": on_failure.webhook.payload.s: undefined filter "nofilter"`,
		}},
		{"trailing document marker", "name: p\nsteps: [{name: a, executor: scripted}]\n---\n# nothing\n", nil},
		{"duplicate yaml key", "name: p\nname: q\nsteps: []\n", []string{`p.yaml:2:1: duplicate key "name" (first written at 1:1)`, "p.yaml:3:8: steps needs at least 1 entry"}},
		{"missing name and steps", "description: x\n", []string{
			`p.yaml:1:1: missing required field "name"`,
			`p.yaml:1:1: missing required field "steps"`,
		}},
		{"no steps", "name: p\nsteps: []\n", []string{"p.yaml:2:8: steps needs at least 1 entry"}},
		{"unknown top-level field", "name: p\ndescripton: x\nsteps: [{name: a, executor: scripted}]\n", []string{
			`p.yaml:2:1: unknown field "descripton" (did you mean "description"?)`,
		}},
		{"unknown step field", head + "  - name: a\n    executor: scripted\n    promt_template: hi\n", []string{
			`p.yaml:5:5: step "a": unknown field "promt_template" (did you mean "prompt_template"?)`,
		}},
		{"unsupported field", head + "  - name: a\n    executor: scripted\n    include_approx_cost: true\n", []string{
			`p.yaml:5:5: step "a": unknown field "include_approx_cost": per-step include_approx_cost is not supported; set it on budget`,
		}},
		{"unknown field in retry", head + "  - name: a\n    executor: scripted\n    retry: {attempt: 3}\n", []string{
			`p.yaml:5:13: step "a": unknown field "attempt" in retry (did you mean "attempts"?)`,
		}},
		{"missing executor", head + "  - name: a\n", []string{`p.yaml:3:5: step "a": missing required field "executor"`}},
		{"missing name", head + "  - executor: scripted\n", []string{`p.yaml:3:5: step #1: missing required field "name"`}},
		{"unknown executor", head + "  - name: a\n    executor: gatway\n", []string{
			`p.yaml:4:15: step "a": executor "gatway" is not one of gateway, anthropic, bedrock, openclaw, webhook, notify, human, pipeline, scripted (did you mean "gateway"?)`,
		}},
		{"threshold out of range", head + "  - name: a\n    executor: scripted\n    confidence_threshold: 1.5\n", []string{
			`p.yaml:5:27: step "a": confidence_threshold: 1.5 is out of range: 0..1`,
		}},
		{"threshold wrong type", head + "  - name: a\n    executor: scripted\n    confidence_threshold: high\n", []string{
			`p.yaml:5:27: step "a": confidence_threshold must be a number, not string`,
		}},
		{"attempts below one", head + "  - name: a\n    executor: scripted\n    retry: {attempts: 0}\n", []string{
			`p.yaml:5:23: step "a": retry.attempts: 0 is out of range: 1..100`,
		}},
		{"negative timeout", head + "  - name: a\n    executor: scripted\n    timeout_seconds: -5\n", []string{
			`p.yaml:5:22: step "a": timeout_seconds: -5 is out of range: 1..99999999`,
		}},
		{"timeout over lambda limit", head + "  - name: a\n    executor: gateway\n    executor_config: {base_url: http://x/v1, model: m}\n    timeout_seconds: 1200\n", []string{
			`p.yaml:6:22: step "a": timeout_seconds 1200 is over 900: a gateway step runs in one Lambda invocation, which stops at 900 s`,
		}},
		{"weight not positive", head + "  - parallel:\n      name: g\n      join: weighted_average\n      steps:\n        - {name: a, executor: scripted, weight: 0}\n", []string{
			`p.yaml:7:49: branch "a" of parallel "g": weight: 0 is out of range: above 0, up to 1000000`,
		}},
		{"bad on_low_confidence", head + "  - name: a\n    executor: scripted\n    on_low_confidence: retry\n", []string{
			`p.yaml:5:24: step "a": on_low_confidence "retry" is not one of escalate, abort, proceed`,
		}},
		{"bad on_failure shorthand", head + "  - name: a\n    executor: scripted\n    on_failure: ignore\n", []string{
			`p.yaml:5:17: step "a": on_failure "ignore" is not one of abort, continue`,
		}},
		{"duplicate step names", head + "  - {name: a, executor: scripted}\n  - {name: a, executor: scripted}\n", []string{
			`p.yaml:4:12: duplicate step name "a" (first defined at 3:12)`,
		}},
		{"names collide as aliases", head + "  - {name: first-step, executor: scripted}\n  - {name: first_step, executor: scripted}\n", []string{
			`p.yaml:4:12: step name "first_step" collides with "first-step" (defined at 3:12): both are steps.first_step in templates`,
		}},
		{"branch name collides with step", head + "  - {name: a, executor: scripted}\n  - parallel: {name: g, steps: [{name: a, executor: scripted}]}\n", []string{
			`p.yaml:4:40: duplicate step name "a" (first defined at 3:12)`,
		}},
		{"reference to later step", head + "  - name: a\n    executor: scripted\n    prompt_template: \"{{ steps.b.summary }}\"\n  - {name: b, executor: scripted}\n", []string{
			`p.yaml:5:26: step "a": prompt_template refers to step "b", which runs later`,
		}},
		{"reference to unknown step", head + "  - {name: triage, executor: scripted}\n  - name: b\n    executor: scripted\n    prompt_template: |\n      Hello\n      {{ steps.triag.summary }}\n", []string{
			`p.yaml:8:10: step "b": prompt_template refers to unknown step "triag" (did you mean "triage"?)`,
		}},
		{"reference to itself", head + "  - name: a\n    executor: scripted\n    prompt_template: \"{{ steps.a.summary }}\"\n", []string{
			`p.yaml:5:26: step "a": prompt_template refers to the step itself; a step sees only earlier steps (loop_until steps see loop.prior_output)`,
		}},
		{"liquid syntax error", head + "  - name: a\n    executor: scripted\n    prompt_template: |\n      line one\n      {% if x %}never closed\n", []string{
			`p.yaml:7:7: step "a": prompt_template: unterminated "if" block`,
		}},
		{"when wrapped in braces", head + "  - {name: a, executor: scripted}\n  - name: b\n    executor: scripted\n    when: \"{{ steps.a.proceed }}\"\n", []string{
			`p.yaml:6:12: step "b": when: write the bare expression "steps.a.proceed", without {{ }}`,
		}},
		{"when syntax error", head + "  - {name: a, executor: scripted}\n  - name: b\n    executor: scripted\n    when: steps.a.confidence >> 0.5\n", []string{
			`p.yaml:6:31: step "b": when: unexpected ">", expected a value`,
		}},
		{"when unknown step", head + "  - {name: a, executor: scripted}\n  - name: b\n    executor: scripted\n    when: steps.c.proceed\n", []string{
			`p.yaml:6:11: step "b": when refers to unknown step "c"`,
		}},
		{"when unknown name", head + "  - {name: a, executor: scripted}\n  - name: b\n    executor: scripted\n    when: severity == \"critical\"\n", []string{
			`p.yaml:6:11: step "b": when: unknown name "severity": use steps.<name>, vars.<name>, labels.<name> or a context_template.include name`,
		}},
		{"when undefined var", "name: p\nvars: {x: \"1\"}\nsteps:\n  - name: b\n    executor: scripted\n    when: vars.y == \"1\"\n", []string{
			`p.yaml:6:11: step "b": when: vars.y is not defined in vars`,
		}},
		{"verifier on human step", head + "  - name: a\n    executor: human\n    verifier: {executor: scripted}\n", []string{
			`p.yaml:5:15: step "a": a human step cannot have a verifier: the approver's decision is final`,
		}},
		{"fan_out without over", head + "  - fan_out: {name: f, executor: scripted}\n", []string{
			`p.yaml:3:14: fan_out "f": missing required field "over"`,
		}},
		// vars, labels and the trigger's text fields hold text: a fan_out
		// over one failed every run (over: ... is not a list).
		{"fan_out over a var", "name: p\nvars: {svcs: '[a, b]'}\nsteps:\n  - fan_out: {name: f, executor: scripted, over: svcs}\n", []string{
			`p.yaml:4:50: fan_out "f": over: svcs is a var, which holds text, never a list: run the fan_out over a list a step answered (steps.<step>.<field>) or one in the trigger's metadata`,
		}},
		{"fan_out over a label", "name: p\ncontext_template: {include: [labels.services, summary]}\nsteps:\n  - fan_out: {name: f, executor: scripted, over: services}\n  - fan_out: {name: g, executor: scripted, over: \"{{ labels.x }}\"}\n  - fan_out: {name: h, executor: scripted, over: summary}\n", []string{
			`p.yaml:4:50: fan_out "f": over: services is a label of the trigger, which holds text, never a list: run the fan_out over a list a step answered (steps.<step>.<field>) or one in the trigger's metadata`,
			`p.yaml:5:54: fan_out "g": over: labels is the trigger's labels, which hold text, never a list: run the fan_out over a list a step answered (steps.<step>.<field>) or one in the trigger's metadata`,
			`p.yaml:6:50: fan_out "h": over: summary is the trigger's summary, which holds text, never a list: run the fan_out over a list a step answered (steps.<step>.<field>) or one in the trigger's metadata`,
		}},
		{"fan_out over the trigger's metadata", "name: p\ncontext_template: {include: [metadata.items, metadata]}\nsteps:\n  - fan_out: {name: f, executor: scripted, over: items}\n  - fan_out: {name: g, executor: scripted, over: metadata.more}\n", nil},
		{"fan_out over unknown step", head + "  - fan_out: {name: f, executor: scripted, over: steps.nope.items}\n", []string{
			`p.yaml:3:50: fan_out "f": over refers to unknown step "nope"`,
		}},
		{"pipeline executor without target", head + "  - {name: a, executor: pipeline}\n", []string{
			`p.yaml:3:25: step "a": executor pipeline needs executor_config.pipeline, the name of the pipeline to run`,
		}},
		{"webhook without url", head + "  - {name: a, executor: webhook, executor_config: {method: POST}}\n", []string{
			`p.yaml:3:51: step "a": executor webhook needs executor_config.url`,
		}},
		{"invalid cron", "name: p\nschedule: {cron: \"61 * * * *\"}\nsteps: [{name: a, executor: scripted}]\n", []string{
			`p.yaml:2:18: schedule.cron "61 * * * *": minute field "61": 61 is outside 0-59`,
		}},
		{"unknown time zone", "name: p\nschedule: {cron: \"0 9 * * *\", timezone: Mars/Olympus}\nsteps: [{name: a, executor: scripted}]\n", []string{
			`p.yaml:2:41: schedule.timezone "Mars/Olympus": is not a known IANA time zone such as Europe/Berlin`,
		}},
		{"local time zone", "name: p\nschedule: {cron: \"0 9 * * *\", timezone: Local}\nsteps: [{name: a, executor: scripted}]\n", []string{
			`p.yaml:2:41: schedule.timezone "Local": is not an IANA time zone name such as Europe/Berlin`,
		}},
		{"empty time zone", "name: p\nschedule: {cron: \"0 9 * * *\", timezone: \"\"}\nsteps: [{name: a, executor: scripted}]\n", []string{
			`p.yaml:2:41: schedule.timezone "": is empty: give an IANA time zone such as Europe/Berlin, or leave timezone out for UTC`,
		}},
		{"cron field count", "name: p\nschedule: {cron: \"* * *\"}\nsteps: [{name: a, executor: scripted}]\n", []string{
			`p.yaml:2:18: schedule.cron "* * *": has 3 fields, want 5: minute hour day-of-month month day-of-week`,
		}},
		{"bad regex", "name: p\ntrigger:\n  match:\n    summary: {regex: \"disk (full\"}\nsteps: [{name: a, executor: scripted}]\n", []string{
			"p.yaml:4:22: trigger.match.summary: invalid regex \"disk (full\": missing closing ): `disk (full`",
		}},
		{"unsupported regex", "name: p\ntrigger:\n  match:\n    summary: {regex: \"(?=x)\"}\nsteps: [{name: a, executor: scripted}]\n", []string{
			"p.yaml:4:22: trigger.match.summary: invalid regex \"(?=x)\": invalid or unsupported Perl syntax: `(?=` (regexes use RE2 syntax: no lookaround or backreferences)",
		}},
		{"unknown match operator", "name: p\ntrigger:\n  match:\n    severity: {contains: x}\nsteps: [{name: a, executor: scripted}]\n", []string{
			`p.yaml:4:16: unknown field "contains" in trigger.match.severity`,
		}},
		{"budget without limit", "name: p\nbudget: {include_approx_cost: true}\nsteps: [{name: a, executor: scripted}]\n", []string{
			"p.yaml:2:9: budget needs a limit: max_tokens or max_usd",
		}},
		{"bad stage", "name: p\nstage: prod\nsteps: [{name: a, executor: scripted}]\n", []string{
			`p.yaml:2:8: stage "prod" is not one of testing, production (did you mean "production"?)`,
		}},
		{"bad step name", head + "  - {name: \"a b\", executor: scripted}\n", []string{
			`p.yaml:3:12: step "a b": name "a b" may hold only ASCII letters, digits, '-' and '_', starting with a letter or digit`,
		}},
		// é is a letter, but not one a name may hold.
		{"non-ASCII step name", head + "  - {name: \"analyse-détail\", executor: scripted}\n", []string{
			`p.yaml:3:12: step "analyse-détail": name "analyse-détail" may hold only ASCII letters, digits, '-' and '_', starting with a letter or digit`,
		}},
		{"non-ASCII fan_out as", head + "  - fan_out: {name: f, over: '[1]', as: élément, executor: scripted}\n", []string{
			`p.yaml:3:41: fan_out "f": as "élément" must be an identifier (ASCII letters, digits, '_')`,
		}},
		{"unknown include root", "name: p\ncontext_template: {include: [lables.service]}\nsteps: [{name: a, executor: scripted}]\n", []string{
			`p.yaml:2:30: context_template.include: unknown path "lables.service": it starts with one of severity, summary, source, pipeline, received_at, labels, metadata, fingerprint, team (did you mean "labels"?)`,
		}},
		{"openclaw needs its agent", head + "  - {name: a, executor: openclaw}\n", []string{
			`p.yaml:3:25: step "a": executor_config.agent: required: the agent the OpenClaw gateway runs`,
		}},
		{"several errors sorted", head + "  - {name: a, executor: nope}\n  - {name: b, executor: scripted, retry: {attempts: 0}}\n", []string{
			`p.yaml:3:25: step "a": executor "nope" is not one of gateway, anthropic, bedrock, openclaw, webhook, notify, human, pipeline, scripted`,
			`p.yaml:4:53: step "b": retry.attempts: 0 is out of range: 1..100`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got := load(t, c.src)
			var errs []string
			for _, d := range got {
				if !strings.Contains(d, ": warning: ") {
					errs = append(errs, d)
				}
			}
			if strings.Join(errs, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("diagnostics:\n  got  %q\n  want %q", errs, c.want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want string
	}{
		{"on_abort names no action", "name: p\nnotifications: {escalate: {channel: log}}\nsteps:\n  - {name: a, executor: scripted, on_abort: rejectd}\n",
			`p.yaml:4:45: warning: step "a": on_abort "rejectd" names no notifications action`},
		{"fractional retry delay", "name: p\nsteps:\n  - {name: a, executor: scripted, retry: {attempts: 2, delay_seconds: 0.5}}\n",
			`p.yaml:3:71: warning: step "a": retry.delay_seconds 0.5 becomes 1: Step Functions waits whole seconds, at least 1`},
		{"verifier never runs", "name: p\nsteps:\n  - name: a\n    executor: scripted\n    verifier: {executor: scripted, trigger: {confidence_above: 0.9, confidence_below: 0.5}}\n",
			`p.yaml:5:45: warning: step "a": the verifier never runs: confidence_above 0.9 is not below confidence_below 0.5`},
		{"var hides builtin", "name: p\nvars: {labels: x}\nsteps: [{name: a, executor: scripted}]\n",
			`p.yaml:2:8: warning: vars: "labels" hides the template name "labels"`},
		{"weight without weighted join", "name: p\nsteps:\n  - parallel: {name: g, steps: [{name: a, executor: scripted, weight: 2}]}\n",
			`p.yaml:3:71: warning: branch "a": weight has effect only with join: weighted_average (parallel "g" joins with all_must_pass)`},
		{"malformed secret references, nested ones too", "name: p\nsteps:\n  - name: a\n    executor: webhook\n    executor_config: {url: 'https://e.com/${A}', headers: {X-B: '${B-C}', Authorization: 'Bearer ${TOKEN'}, body: ['ok $${escaped', '${}']}\n",
			`p.yaml:5:22: warning: step "a": executor_config.body[1]: placeholder "${}": a secret name holds letters, digits and _` + "\n" +
				`p.yaml:5:22: warning: step "a": executor_config.headers.Authorization: placeholder "${TOKEN" is not closed with }` + "\n" +
				`p.yaml:5:22: warning: step "a": executor_config.headers.X-B: placeholder "${B-C}": a secret name holds letters, digits and _`},
		{"legacy verifier mode", "name: p\nsteps:\n  - {name: a, executor: scripted, verifier: {executor: scripted, mode: reviewer}}\n",
			`p.yaml:3:72: warning: step "a": verifier mode "reviewer" is an old name for "critic"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got := load(t, c.src)
			if strings.Join(got, "\n") != c.want {
				t.Errorf("diagnostics:\n  got  %q\n  want %q", got, c.want)
			}
		})
	}
}

func TestReferencesThatResolve(t *testing.T) {
	_, ds := load(t, `
name: p
vars: {env: prod}
context_template: {include: [labels.service, severity]}
steps:
  - {name: first-line, executor: scripted}
  - parallel:
      name: group
      steps: [{name: branch-a, executor: scripted}]
  - fan_out: {name: each, over: "{{ steps.first_line.items }}", executor: scripted}
  - name: last
    executor: scripted
    when: steps.first_line.proceed and steps['first-line'].confidence > 0.5 and vars.env == "prod" and service is defined and severity in ["critical"] and labels.team != "x"
    prompt_template: |
      {{ steps.first_line.summary }} {{ steps['first-line'].summary }} {{ steps["branch-a"].summary }}
      {{ steps.branch_a.confidence }} {{ steps.group.confidence }} {{ steps['each/0'].summary }}
      {% if steps.each.confidence > 0.5 %}ok{% endif %} "steps.nothing in a string"
`)
	if len(ds) != 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
}

func TestTemplateRefs(t *testing.T) {
	refs := templateRefs(`a {{ steps.x.y }} b {% if steps['q-r'].c and "steps.z" %}{{mysteps.w}}{{ steps["s/1"].t }}`)
	var names []string
	for _, r := range refs {
		names = append(names, r.name)
	}
	if got := strings.Join(names, ","); got != "x,q-r,s/1" {
		t.Errorf("refs = %s", got)
	}
}

func TestCheckCron(t *testing.T) {
	for _, ok := range []string{"* * * * *", "0 9 * * mon-fri", "*/15 0-6,18-23 1 jan,JUL *", "*/15 0-6,18-23 * jan,JUL 0", "0 0 * * 7", "5-10/2 * * * *"} {
		if err := CheckCron(ok); err != nil {
			t.Errorf("CheckCron(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "* * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8", "5/2 * * * *", "*/0 * * * *", "10-5 * * * *", "a * * * *", "1,,2 * * * *",
		"*/15 0-6,18-23 1 jan,JUL 0", // both day fields: EventBridge Scheduler cannot run it
	} {
		if err := CheckCron(bad); err == nil {
			t.Errorf("CheckCron(%q) accepted", bad)
		}
	}
}

// TestExamplePipelines: every file in pipelines/ validates without errors
// or warnings.
func TestExamplePipelines(t *testing.T) {
	files, err := filepath.Glob("../pipelines/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("example pipelines: %v %v", files, err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, ds := loadIn(path, src, Env{Project: repositoryProject(t)})
			if len(ds) != 0 {
				t.Errorf("diagnostics:\n%s", ds)
			}
		})
	}
}

func TestSchemaIsValidJSONSchema(t *testing.T) {
	if _, err := compiledSchema(); err != nil {
		t.Fatal(err)
	}
}
