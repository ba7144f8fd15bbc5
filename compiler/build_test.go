package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/asl"
)

// build runs Build on src as "p.yaml" and returns the state machine and
// the diagnostics as strings.
func build(t *testing.T, src string) (*asl.StateMachine, []string) {
	t.Helper()
	_, sm, ds := Build("p.yaml", []byte(src), nil)
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return sm, out
}

// TestBuildChecks: what only a deploy refused before is a positioned error
// of the compiler, on either side of each limit.
func TestBuildChecks(t *testing.T) {
	parallel := func(group, branch int) string {
		return fmt.Sprintf("name: p\nsteps:\n  - parallel:\n      name: %s\n      steps:\n        - {name: %s, executor: scripted}\n        - {name: c, executor: scripted}\n",
			strings.Repeat("g", group), strings.Repeat("b", branch))
	}
	child := func(name string) string {
		return "name: p\nsteps:\n  - {name: s, executor: pipeline, executor_config: {pipeline: \"" + name + "\"}}\n"
	}
	bedrock := func(model string) string {
		return "name: p\nsteps:\n  - {name: s, executor: bedrock, executor_config: {model: \"" + model + "\"}}\n"
	}
	cron := func(expr string) string {
		return "name: p\nschedule: {cron: \"" + expr + "\"}\nsteps:\n  - {name: s, executor: scripted}\n"
	}
	cases := []struct {
		name string
		src  string
		want string // the one error; "" for none
	}{
		// "<group>/<branch>: lost" is the longest state name: 7 + group + branch.
		{"state names below the limit", parallel(40, 32), ""},
		{"state names at the limit", parallel(40, 33), ""},
		{"state names over the limit", parallel(40, 34),
			`p.yaml:6:18: branch "` + strings.Repeat("b", 34) + `" of parallel "` + strings.Repeat("g", 40) + `": state name "` + strings.Repeat("g", 40) + "/" + strings.Repeat("b", 34) + `: lost" has 81 characters, over Step Functions' limit of 80: shorten the names it is made of`},
		{"the longest names", parallel(64, 64), `p.yaml:6:18: branch "` + strings.Repeat("b", 64) + `" of parallel "` + strings.Repeat("g", 64) + `": state name "` + strings.Repeat("g", 64) + "/" + strings.Repeat("b", 64) + `" has 129 characters`},
		{"child name of 80 characters", child(strings.Repeat("c", 80)), ""},
		{"child name of 81 characters", child(strings.Repeat("c", 81)), `p.yaml:3:52: step "s": executor_config.pipeline "` + strings.Repeat("c", 81) + `" is not a pipeline name`},
		{"child name with a space", child("order intake"), `p.yaml:3:52: step "s": executor_config.pipeline "order intake" is not a pipeline name`},
		{"child name with a brace", child("a}b"), `is not a pipeline name`},
		{"child name starting with a dash", child("-a"), `is not a pipeline name`},
		{"child name with dashes and underscores", child("order-intake_2"), ""},
		{"bedrock model written out", bedrock("anthropic.claude-3-5-haiku-20241022-v1:0"), ""},
		{"bedrock model from an output tag", bedrock("{{ vars.m }}"), `p.yaml:3:51: step "s": executor_config.model "{{ vars.m }}" is a template: on AWS the stack grants InvokeModel on the models the file names`},
		{"bedrock model from a tag", bedrock("{% if true %}m{% endif %}"), `is a template`},
		{"bedrock model with braces only", bedrock("a{b}"), ""},
		{"cron on days of the month", cron("0 9 1 * *"), ""},
		{"cron on weekdays", cron("0 9 * * mon"), ""},
		{"cron on both", cron("0 9 1 * mon"), `p.yaml:2:18: schedule.cron "0 9 1 * mon": restricts both day of month and day of week`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sm, got := build(t, c.src)
			var errs []string
			for _, d := range got {
				if !strings.Contains(d, ": warning: ") {
					errs = append(errs, d)
				}
			}
			if c.want == "" {
				if len(errs) > 0 || sm == nil {
					t.Fatalf("errors: %q", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.HasPrefix(errs[0], c.want) && !strings.Contains(errs[0], c.want) {
				t.Fatalf("errors: %q\nwant one: %s", errs, c.want)
			}
			if sm != nil {
				t.Error("a state machine despite an error")
			}
		})
	}
}

// TestWhenScopeMatchesTemplates: a when: reads every name a template of
// the same step reads, from the same place: a dotted include makes its
// root readable, and a var wins over an include of the same name.
func TestWhenScopeMatchesTemplates(t *testing.T) {
	cases := []struct {
		name, src, cond string
	}{
		{"root of a dotted include",
			"name: p\ncontext_template:\n  include: [metadata.count]\nsteps:\n  - {name: a, executor: scripted, when: metadata.count >= 3}\n",
			"$trigger.metadata"},
		{"leaf of a dotted include",
			"name: p\ncontext_template:\n  include: [metadata.count]\nsteps:\n  - {name: a, executor: scripted, when: count >= 3}\n",
			"$trigger.metadata.count"},
		{"a var wins over an include",
			"name: p\nvars: {service: x}\ncontext_template:\n  include: [labels.service]\nsteps:\n  - {name: a, executor: scripted, when: service == \"x\"}\n",
			"$pipeline.vars.service"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sm, ds := build(t, c.src)
			if sm == nil {
				t.Fatalf("does not compile: %q", ds)
			}
			st, _ := sm.States.Get("Check a")
			ch, ok := st.(*asl.Choice)
			if !ok || len(ch.Choices) == 0 {
				t.Fatalf("no routing Choice: %#v", st)
			}
			if cond, _ := ch.Choices[0].Condition.(string); !strings.Contains(cond, c.cond) {
				t.Errorf("condition %s does not read %s", cond, c.cond)
			}
		})
	}
	// A name neither a template nor the scope has stays an error, the same
	// in check and lowering.
	_, ds := build(t, "name: p\ncontext_template:\n  include: [metadata.count]\nsteps:\n  - {name: a, executor: scripted, when: labelz.x == 1}\n")
	if len(ds) != 1 || !strings.HasPrefix(ds[0], `p.yaml:5:41: step "a": when: unknown name "labelz"`) {
		t.Errorf("diagnostics = %q", ds)
	}
}

// TestBuildFileFindsChildren: a sub-pipeline is looked for where run,
// serve and the CDK app look for it, beside its parent.
func TestBuildFileFindsChildren(t *testing.T) {
	parent := "name: parent\nsteps:\n  - {name: s, executor: pipeline, executor_config: {pipeline: %s}}\n"
	cases := []struct {
		name  string
		child string
		files map[string]string
		want  string
	}{
		{"beside it", "child", map[string]string{"child.yaml": "name: child\nsteps: [{name: a, executor: scripted}]\n"}, ""},
		// A sub-pipeline runs as a Standard workflow: one that would run
		// as an Express workflow (auto or express) is refused at the use.
		{"an Express child", "child", map[string]string{"child.yaml": "name: child\nsteps: [{name: a, executor: scripted, timeout_seconds: 10}]\n"},
			`parent.yaml:3:52: step "s": executor_config.pipeline "child" runs as an Express workflow (workflow: auto): a sub-pipeline must be a Standard workflow`},
		{"a Standard child", "child", map[string]string{"child.yaml": "name: child\nworkflow: standard\nsteps: [{name: a, executor: scripted, timeout_seconds: 10}]\n"}, ""},
		{"beside it as .yml", "child", map[string]string{"other.yml": "name: child\nsteps: [{name: a, executor: scripted}]\n"}, ""},
		// A pipeline that runs itself, directly or through others, would
		// wait on a new run of itself at every level, with no bound.
		{"itself", "parent", nil,
			`parent.yaml:3:52: step "s": executor_config.pipeline "parent" runs this pipeline again (parent → parent): sub-pipelines may not form a cycle`},
		{"itself through another", "child", map[string]string{"child.yaml": "name: child\nworkflow: standard\nsteps: [{name: a, executor: pipeline, executor_config: {pipeline: parent}}]\n"},
			`parent.yaml:3:52: step "s": executor_config.pipeline "child" runs this pipeline again (parent → child → parent): sub-pipelines may not form a cycle`},
		{"a cycle further down", "child", map[string]string{
			"child.yaml": "name: child\nworkflow: standard\nsteps:\n  - parallel:\n      name: g\n      steps: [{name: a, executor: pipeline, executor_config: {pipeline: grandchild}}]\n",
			"gc.yaml":    "name: grandchild\nworkflow: standard\nsteps:\n  - fan_out: {name: f, over: '[1]', executor: pipeline, executor_config: {pipeline: child}}\n"},
			`parent.yaml:3:52: step "s": executor_config.pipeline "child" leads to a cycle of sub-pipelines (parent → child → grandchild → child): sub-pipelines may not form a cycle`},
		{"a chain", "child", map[string]string{
			"child.yaml": "name: child\nworkflow: standard\nsteps: [{name: a, executor: pipeline, executor_config: {pipeline: grandchild}}, {name: b, executor: pipeline, executor_config: {pipeline: grandchild}}]\n",
			"gc.yaml":    "name: grandchild\nworkflow: standard\nsteps: [{name: a, executor: scripted}]\n"}, ""},
		{"a file with errors still names it", "child", map[string]string{"child.yaml": "name: child\nsteps: []\n"}, ""},
		{"nowhere", "child", map[string]string{"other.yaml": "name: other\nsteps: [{name: a, executor: scripted}]\n"},
			`parent.yaml:3:52: step "s": executor_config.pipeline "child": no pipeline file in `},
		{"a file named for it does not define it", "child", map[string]string{"child.yaml": "name: kid\nsteps: [{name: a, executor: scripted}]\n"},
			`step "s": executor_config.pipeline "child": no pipeline file`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"parent.yaml": fmt.Sprintf(parent, c.child)}
			for k, v := range c.files {
				files[k] = v
			}
			for k, v := range files {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, sm, ds, err := BuildFile(filepath.Join(dir, "parent.yaml"), nil)
			if err != nil {
				t.Fatal(err)
			}
			errs := ds.Errors()
			if c.want == "" {
				if len(errs) > 0 || sm == nil {
					t.Fatalf("errors:\n%s", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].String(), c.want) || sm != nil {
				t.Fatalf("errors:\n%s\nwant one with %s", errs, c.want)
			}
		})
	}
}

// TestBuildFileDuplicateName: two files beside each other that define the
// same pipeline are refused by BuildFile as serve and the CDK app refuse
// them (validate accepted each file alone); another file that only names
// the pipeline, and a file's own name, are no duplicate.
func TestBuildFileDuplicateName(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml":      "name: same\nsteps: [{name: s, executor: scripted}]\n",
		"b.yml":       "# the other\nname: same\nsteps: [{name: s, executor: scripted}]\n",
		"caller.yaml": "name: caller\nsteps: [{name: s, executor: scripted, prompt_template: same}]\n",
		"oi.yaml":     "name: order-intake\nsteps: [{name: s, executor: scripted}]\n",
		"oi2.yaml":    "name: orderIntake\nsteps: [{name: s, executor: scripted}]\n",
		"oi3.yaml":    "name: order-intakes\nsteps: [{name: s, executor: scripted}]\n",
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ file, want string }{
		{"a.yaml", `a.yaml:1:7: pipeline name "same" is already used by b.yml: run, serve and the CDK app load one pipeline per name`},
		{"b.yml", `b.yml:2:7: pipeline name "same" is already used by a.yaml: run, serve and the CDK app load one pipeline per name`},
		{"caller.yaml", ""},
		// The CDK app names each state machine's ARN by its placeholder.
		{"oi2.yaml", `oi2.yaml:1:7: pipeline "orderIntake" and "order-intake" (oi.yaml) share the substitution ${PipelineOrderIntakeArn}: rename one: the CDK app names each state machine's ARN by it`},
		{"oi3.yaml", ""},
	} {
		_, sm, ds, err := BuildFile(filepath.Join(dir, c.file), nil)
		if err != nil {
			t.Fatal(err)
		}
		errs := ds.Errors()
		if c.want == "" {
			if len(errs) > 0 || sm == nil {
				t.Errorf("%s: errors %s", c.file, errs)
			}
			continue
		}
		if len(errs) != 1 || !strings.HasSuffix(errs[0].String(), c.want) || sm != nil {
			t.Errorf("%s: errors %s, want one ending %s", c.file, errs, c.want)
		}
	}
}
