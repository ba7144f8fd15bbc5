package compiler

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	jsonata "github.com/blues/jsonata-go"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/fault"
)

var update = flag.Bool("update", false, "rewrite the golden ASL files")

// compileSources returns the compiled definition of every example
// pipeline and every lowering test pipeline, by golden file name.
func compileSources(t *testing.T) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob("../pipelines/*.yaml")
	more, _ := filepath.Glob("testdata/lower/*.yaml")
	files = append(files, more...)
	out := map[string][]byte{}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The examples compile in the repository's project, as the CLI
		// compiles them: their agent steps run its agents.
		_, sm, ds := BuildIn(path, src, Env{Project: repositoryProject(t)})
		if sm == nil {
			t.Fatalf("%s does not compile:\n%s", path, ds)
		}
		def, err := Marshal(sm)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".yaml") + ".asl.json"
		if strings.HasPrefix(path, "testdata/lower") {
			name = "lower-" + name
		}
		out[name] = def
	}
	return out
}

// TestGolden compares every compiled definition with its golden file and
// re-parses it with the ASL model.
func TestGolden(t *testing.T) {
	for name, def := range compileSources(t) {
		t.Run(name, func(t *testing.T) {
			golden := filepath.Join("testdata", "golden", name)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, append(def, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./compiler -update)", err)
			}
			if !bytes.Equal(bytes.TrimSpace(want), def) {
				t.Errorf("definition differs from %s (run go test ./compiler -update and review the diff)", golden)
			}
			var sm asl.StateMachine
			if err := json.Unmarshal(def, &sm); err != nil {
				t.Fatalf("emitted definition does not re-parse: %v", err)
			}
			if err := sm.Validate(); err != nil {
				t.Errorf("emitted definition is not valid ASL: %v", err)
			}
			if sm.QueryLanguage != asl.JSONata || sm.StartAt != StateStart {
				t.Errorf("QueryLanguage %q, StartAt %q", sm.QueryLanguage, sm.StartAt)
			}
		})
	}
}

var exprRE = regexp.MustCompile(`^\{% (.*) %\}$`)

// expressions collects every JSONata expression in a decoded definition.
func expressions(v any, out *[]string) {
	switch v := v.(type) {
	case string:
		if m := exprRE.FindStringSubmatch(v); m != nil {
			*out = append(*out, m[1])
		}
	case map[string]any:
		for _, e := range v {
			expressions(e, out)
		}
	case []any:
		for _, e := range v {
			expressions(e, out)
		}
	}
}

// TestExpressionsCompile: every JSONata expression the compiler emits
// compiles in the Go evaluator and in the reference jsonata@2.0.6.
func TestExpressionsCompile(t *testing.T) {
	var all []string
	for _, def := range compileSources(t) {
		var v any
		if err := json.Unmarshal(def, &v); err != nil {
			t.Fatal(err)
		}
		expressions(v, &all)
	}
	if len(all) < 100 {
		t.Fatalf("only %d expressions found", len(all))
	}
	for _, e := range all {
		if _, err := jsonata.Compile(e); err != nil {
			t.Errorf("jsonata-go rejects %q: %v", e, err)
		}
	}
	node := nodeTool(t, "jsonata")
	if node == "" {
		return
	}
	in, _ := json.Marshal(all)
	script := `const j = require(process.argv[1]); const exprs = JSON.parse(require('fs').readFileSync(0, 'utf8'));
let bad = 0; for (const e of exprs) { try { j(e) } catch (x) { bad++; console.log(e + ' :: ' + x.message) } } process.exit(bad ? 1 : 0)`
	cmd := exec.Command("node", "-e", script, node)
	cmd.Stdin = bytes.NewReader(in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("reference jsonata rejects expressions:\n%s", out)
	}
}

// nodeTool returns the path of a pinned node package, or "" (skipping the
// test) when node_modules is not installed outside CI.
func nodeTool(t *testing.T, pkg string) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "node_modules", pkg))
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed: run npm ci (make tools)", pkg)
		}
		t.Skipf("%s is not installed: run npm ci (make tools)", pkg)
		return ""
	}
	return dir
}

// TestASLValidator runs the pinned asl-validator on every definition.
func TestASLValidator(t *testing.T) {
	dir := nodeTool(t, "asl-validator")
	bin := filepath.Join(dir, "..", ".bin", "asl-validator")
	tmp := t.TempDir()
	var args []string
	for name, def := range compileSources(t) {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, def, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--json-path", p)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("asl-validator: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "is valid"); n != len(args)/2 {
		t.Fatalf("asl-validator judged %d of %d definitions valid:\n%s", n, len(args)/2, out)
	}
}

func compileString(t *testing.T, src string) (*asl.StateMachine, map[string]any) {
	t.Helper()
	sm, ds := Compile("p.yaml", []byte(src))
	if sm == nil {
		t.Fatalf("compile:\n%s", ds)
	}
	def, err := Marshal(sm)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(def, &v); err != nil {
		t.Fatal(err)
	}
	return sm, v["States"].(map[string]any)
}

func TestRetryLowering(t *testing.T) {
	cases := []struct {
		retry    string
		interval int
		attempts int
		rate     float64
		none     bool
	}{
		{"{attempts: 3}", 1, 2, 2, false},
		{"{attempts: 4, backoff: fixed, delay_seconds: 5}", 5, 3, 1, false},
		{"{attempts: 2, delay_seconds: 0.5}", 1, 1, 2, false},
		{"{attempts: 2, delay_seconds: 2.2}", 3, 1, 2, false},
		{"{attempts: 1}", 0, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.retry, func(t *testing.T) {
			sm, _ := compileString(t, "name: p\nsteps:\n  - {name: s, executor: scripted, retry: "+c.retry+"}\n")
			st, _ := sm.States.Get("s")
			task := st.(*asl.Task)
			if task.Retry[0].ErrorEquals[0] != "Lambda.ServiceException" {
				t.Errorf("first retrier must be the Lambda service retrier: %+v", task.Retry[0])
			}
			if c.none {
				if len(task.Retry) != 1 {
					t.Errorf("attempts 1 must not add a retrier: %+v", task.Retry)
				}
				return
			}
			r := task.Retry[1]
			if r.IntervalSeconds != c.interval || *r.MaxAttempts != c.attempts || r.BackoffRate != c.rate {
				t.Errorf("retrier = interval %d attempts %d rate %g, want %d %d %g", r.IntervalSeconds, *r.MaxAttempts, r.BackoffRate, c.interval, c.attempts, c.rate)
			}
			want := "ExecutorTimeout,ExecutorUnavailable,RateLimited,InvalidOutput,States.Timeout"
			if got := strings.Join(r.ErrorEquals, ","); got != want {
				t.Errorf("retried errors = %s, want %s", got, want)
			}
		})
	}
}

// TestEveryTaskIsBounded: every Task has an explicit TimeoutSeconds and a
// Lambda service retrier, and every model step a Catch.
func TestEveryTaskIsBounded(t *testing.T) {
	for name, def := range compileSources(t) {
		var sm asl.StateMachine
		if err := json.Unmarshal(def, &sm); err != nil {
			t.Fatal(err)
		}
		var visit func(states asl.States)
		visit = func(states asl.States) {
			for sn, st := range states.All() {
				switch st := st.(type) {
				case *asl.Task:
					if secs, ok := st.TimeoutSeconds.(float64); !ok || secs < 1 {
						t.Errorf("%s: task %q has no TimeoutSeconds (%v)", name, sn, st.TimeoutSeconds)
					}
					if len(st.Retry) == 0 || len(st.Catch) == 0 {
						t.Errorf("%s: task %q lacks Retry or Catch", name, sn)
					}
				case *asl.Parallel:
					for _, b := range st.Branches {
						visit(b.States)
					}
				case *asl.Map:
					visit(st.ItemProcessor.States)
				}
			}
		}
		visit(sm.States)
	}
}

// TestStepGoesStraightOn: a plain step's Task goes to the next step
// without an outcome Choice (an answer that ends the run is an error its
// Catch takes); a guarded next step is reached through its when: router.
func TestStepGoesStraightOn(t *testing.T) {
	_, states := compileString(t, `
name: p
steps:
  - {name: a, executor: scripted}
  - {name: b, executor: scripted, when: "steps.a.proceed"}
  - {name: c, executor: scripted}
`)
	for _, name := range []string{"a: outcome", "b: outcome", "c: outcome"} {
		if _, ok := states[name]; ok {
			t.Errorf("state %q emitted", name)
		}
	}
	a := states["a"].(map[string]any)
	if a["Next"] != "Check b" || a["Assign"].(map[string]any)["last"] != "{% $states.result.Payload.output %}" {
		t.Errorf("a: next %v assign %v", a["Next"], a["Assign"])
	}
	if b := states["b"].(map[string]any); b["Next"] != "c" {
		t.Errorf("b: next %v", b["Next"])
	}
	if c := states["c"].(map[string]any); c["Next"] != StateCompleted {
		t.Errorf("c: next %v", c["Next"])
	}
	router := states["Check b"].(map[string]any)
	rules := asMaps(router["Choices"])
	if len(rules) != 1 || rules[0]["Next"] != "b" || router["Default"] != "c" {
		t.Errorf("Check b = %v", router)
	}
	catch := asMaps(a["Catch"])
	if len(catch) != 2 || catch[0]["Next"] != StateEnded || catch[1]["Next"] != StateRecord {
		t.Fatalf("a: catch %v", catch)
	}
	if eq := catch[0]["ErrorEquals"].([]any); len(eq) != 1 || eq[0] != fault.NameRunEnded {
		t.Errorf("a: first catch matches %v", eq)
	}
	if catch[0]["Output"] != "{% "+endedAnswer+" %}" || catch[0]["Assign"] != nil {
		t.Errorf("a: run-ended catch = %v", catch[0])
	}
	// Run ended takes the answer's usage (a failed Task's Assign does not
	// run) on every way out: each rule's Assign, and its own for the
	// Default.
	ended := states[StateEnded].(map[string]any)
	assigns := []any{ended["Assign"]}
	for _, r := range asMaps(ended["Choices"]) {
		assigns = append(assigns, r["Assign"])
	}
	for i, a := range assigns {
		if m, _ := a.(map[string]any); m["usage"] != "{% $exists($states.input.usage) ? $states.input.usage : $usage %}" {
			t.Errorf("Run ended's way out %d assigns %v", i, a)
		}
	}
}

func TestFirstGuardedStepGetsARouter(t *testing.T) {
	_, states := compileString(t, "name: p\nvars: {x: \"1\"}\nsteps:\n  - {name: a, executor: scripted, when: 'vars.x == \"1\"'}\n")
	if states["Start run"].(map[string]any)["Default"] != "Check a" {
		t.Fatalf("Start run goes to %v", states["Start run"].(map[string]any)["Default"])
	}
	ch := states["Check a"].(map[string]any)
	if ch["Default"] != "Run completed" || ch["Choices"].([]any)[0].(map[string]any)["Next"] != "a" {
		t.Errorf("router = %v", ch)
	}
}

func TestStaticStringsAreEncoded(t *testing.T) {
	_, ds := Compile("p.yaml", []byte("name: p\nsteps:\n  - {name: a, executor: scripted, prompt_template: \"{% if x %}it's{% endif %}\", executor_config: {key: \"Bearer ${TOKEN}\"}}\n"))
	sm, _ := Compile("p.yaml", []byte("name: p\nsteps:\n  - {name: a, executor: scripted, prompt_template: \"{% if x %}it's{% endif %}\", executor_config: {key: \"Bearer ${TOKEN}\"}}\n"))
	if sm == nil {
		t.Fatal(ds)
	}
	def, _ := Marshal(sm)
	s := string(def)
	if !strings.Contains(s, `"prompt_template": "{% '{\\u0025 if x \\u0025}it\\u0027s{\\u0025 endif \\u0025}' %}"`) {
		t.Errorf("Liquid tag template not encoded as a JSONata literal:\n%s", s)
	}
	if strings.Contains(s, "${TOKEN}") || !strings.Contains(s, `Bearer $\u007bTOKEN}`) {
		t.Errorf("secret placeholder must be escaped against substitution")
	}
	if got := Placeholders(def); strings.Join(got, ",") != "${StepFunctionArn}" {
		t.Errorf("placeholders = %v", got)
	}
	// The literal evaluates back to the template.
	e, err := jsonata.Compile(`'{% if x %}it\u0027s{% endif %}'`)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := e.Eval(nil); v != "{% if x %}it's{% endif %}" {
		t.Errorf("literal evaluates to %q", v)
	}
}

func TestChildPlaceholder(t *testing.T) {
	if got := ChildPlaceholder("order-intake"); got != "${PipelineOrderIntakeArn}" {
		t.Errorf("ChildPlaceholder = %s", got)
	}
	def := compileSources(t)["lower-human-child.asl.json"]
	if got := strings.Join(Placeholders(def), ","); got != "${ApprovalFunctionArn},${PipelineOrderIntakeArn},${StepFunctionArn}" {
		t.Errorf("placeholders = %s", got)
	}
}

// TestHappyPathTransitions counts the states a run enters when every step
// completes: 1 per sequential step (its Task), plus the start and the end
// (n + 2; 2n + 2 with the outcome Choice every step had before).
func TestHappyPathTransitions(t *testing.T) {
	for _, n := range []int{1, 10, 100} {
		var b strings.Builder
		b.WriteString("name: p\nsteps:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "  - {name: s%d, executor: scripted}\n", i)
		}
		sm, _ := compileString(t, b.String())
		count, state := 0, sm.StartAt
		for state != "" {
			count++
			st, _ := sm.States.Get(state)
			switch st := st.(type) {
			case *asl.Pass:
				state = st.Next
			case *asl.Task:
				state = st.Next
			case *asl.Choice:
				if state == StateStart { // not a rerun
					state = st.Default
				} else {
					state = st.Choices[0].Next
				}
			default:
				state = ""
			}
		}
		if want := n + 2; count != want {
			t.Errorf("%d steps: %d transitions on the happy path, want %d", n, count, want)
		}
	}
}

func TestDefinitionLimit(t *testing.T) {
	big := strings.Repeat("x", 200)
	var b strings.Builder
	b.WriteString("name: huge\nsteps:\n")
	for i := 0; i < 1500; i++ {
		fmt.Fprintf(&b, "  - {name: s%d, executor: scripted, prompt_template: %q}\n", i, big)
	}
	_, ds := Compile("huge.yaml", []byte(b.String()))
	if !ds.HasErrors() || !strings.Contains(ds.String(), "over Step Functions' 1048576-byte limit") {
		t.Fatalf("diagnostics: %.300s", ds)
	}
}

func TestPayloadLimit(t *testing.T) {
	big := strings.Repeat("y", 140<<10)
	_, ds := Compile("big.yaml", []byte(fmt.Sprintf("name: big\nsteps:\n  - {name: s, executor: scripted, prompt_template: %q}\n", big)))
	if !ds.HasErrors() || !strings.Contains(ds.String(), `step "s": its configuration and templates take`) {
		t.Fatalf("diagnostics: %.300s", ds)
	}
}

// BenchmarkCompile measures compiling generated pipelines (every step
// guarded, retried and templated: the heavy case) and reports the deployed
// (compact) ASL bytes per step. 1,000 such steps do not fit in one state
// machine: TestLargestPipeline finds how many do.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{100, 400} {
		src := genPipeline(n)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			var size int
			for b.Loop() {
				f, _ := Load("gen.yaml", src)
				sm, ds := Lower(f)
				if sm == nil {
					b.Fatal(ds)
				}
				def, _ := MarshalCompact(sm)
				size = len(def)
			}
			b.ReportMetric(float64(size)/float64(n), "ASL-bytes/step")
		})
	}
}

// TestLargestPipeline finds the most generated steps that compile within
// the definition limit and logs it (go test -v -run TestLargestPipeline).
func TestLargestPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles many large pipelines")
	}
	fits := func(n int) bool {
		_, ds := Compile("gen.yaml", genPipeline(n))
		return !ds.HasErrors()
	}
	lo, hi := 100, 1000
	if !fits(lo) || fits(hi) {
		t.Fatalf("expected 100 steps to fit and 1000 not to")
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	t.Logf("largest generated pipeline that fits: %d steps", lo)
	if lo < 300 {
		t.Errorf("only %d steps fit; the definition grew", lo)
	}
}

// TestChildContextErrors: executor_config.context of a sub-pipeline step,
// branch or fan-out sets the child's trigger fields summary and severity
// (text) and labels and metadata (mappings); any other key, a field the
// runner sets, or a value of the wrong shape is an error at the
// executor_config.
func TestChildContextErrors(t *testing.T) {
	cases := []struct {
		name    string
		context string
		want    string // "" for none
	}{
		{"every field", "{summary: s, severity: '{{ severity }}', labels: {a: b}, metadata: {n: {deep: [1]}}}", ""},
		{"empty", "{}", ""},
		{"pipeline is the runner's", "{pipeline: other}", `executor_config.context.pipeline is set by the runner`},
		{"source is the runner's", "{source: x}", `executor_config.context.source is set by the runner`},
		{"fingerprint is the runner's", "{fingerprint: x}", `executor_config.context.fingerprint is set by the runner`},
		{"team is the runner's", "{team: x}", `executor_config.context.team is set by the runner`},
		{"unknown field", "{colour: red}", `executor_config.context.colour is not a trigger field a sub-pipeline's context sets (summary, severity, labels, metadata)`},
		{"summary not text", "{summary: [a]}", `executor_config.context.summary must be a string (a template)`},
		{"labels not a mapping", "{labels: x}", `executor_config.context.labels must be a mapping, merged over the parent's`},
		{"a label not text", "{labels: {a: {b: c}}}", `executor_config.context.labels.a must be a string (a template): labels are text`},
		{"not a mapping", "[summary]", `executor_config.context must be a mapping of the child's trigger fields (summary, severity, labels, metadata)`},
	}
	shapes := []struct {
		name, src, where string
		line             int
	}{
		{"step", "name: p\nsteps:\n  - name: s\n    executor: pipeline\n    executor_config: {pipeline: c, context: %s}\n", `step "s"`, 5},
		{"branch", "name: p\nsteps:\n  - parallel:\n      name: g\n      steps:\n        - name: b\n          executor: pipeline\n          executor_config: {pipeline: c, context: %s}\n", `branch "b" of parallel "g"`, 8},
		{"fan-out", "name: p\nsteps:\n  - fan_out:\n      name: f\n      over: '[1]'\n      executor: pipeline\n      executor_config: {pipeline: c, context: %s}\n", `fan_out "f"`, 7},
	}
	for _, sh := range shapes {
		for _, c := range cases {
			t.Run(sh.name+"/"+c.name, func(t *testing.T) {
				if c.name == "not a mapping" {
					// The executor's config check refuses it first when
					// the compiler is given one; Lower reports it alone.
					f, ds := Load("p.yaml", []byte(fmt.Sprintf(sh.src, c.context)))
					if ds.HasErrors() {
						t.Fatal(ds)
					}
					_, ds = Lower(f)
					want := fmt.Sprintf("p.yaml:%d:", sh.line)
					if !strings.Contains(ds.String(), want) || !strings.Contains(ds.String(), sh.where+": "+c.want) {
						t.Errorf("diagnostics:\n%s\nwant %s ... %s: %s", ds, want, sh.where, c.want)
					}
					return
				}
				sm, ds := Compile("p.yaml", []byte(fmt.Sprintf(sh.src, c.context)))
				if c.want == "" {
					if sm == nil || ds.HasErrors() {
						t.Fatalf("diagnostics:\n%s", ds)
					}
					return
				}
				want := fmt.Sprintf("p.yaml:%d:", sh.line)
				got := ds.String()
				if sm != nil || !strings.Contains(got, want) || !strings.Contains(got, sh.where+": "+c.want) {
					t.Errorf("diagnostics:\n%s\nwant an error at %s: %s: %s", got, want, sh.where, c.want)
				}
			})
		}
	}
}

// TestWaitingBranchTimeouts: a human or sub-pipeline branch waits its own
// timeout_seconds (else the executor's default), never longer than its
// group's timeout_seconds.
func TestWaitingBranchTimeouts(t *testing.T) {
	cases := []struct {
		exec          string
		group, branch int // 0: not set
		want          int
	}{
		{"human", 0, 0, DefaultHumanTimeoutSeconds},
		{"human", 0, 50, 50},
		{"human", 100, 0, 100},
		{"human", 100, 50, 50},
		{"human", 100, 100, 100},
		{"human", 100, 150, 100},
		{"pipeline", 0, 0, DefaultChildTimeoutSeconds},
		{"pipeline", 100, 99, 99},
		{"pipeline", 100, 101, 100},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s group %d branch %d", c.exec, c.group, c.branch), func(t *testing.T) {
			var b strings.Builder
			b.WriteString("name: p\nsteps:\n  - parallel:\n      name: g\n")
			if c.group > 0 {
				fmt.Fprintf(&b, "      timeout_seconds: %d\n", c.group)
			}
			fmt.Fprintf(&b, "      steps:\n        - {name: m, executor: scripted}\n        - name: w\n          executor: %s\n", c.exec)
			if c.exec == "pipeline" {
				b.WriteString("          executor_config: {pipeline: c}\n")
			}
			if c.branch > 0 {
				fmt.Fprintf(&b, "          timeout_seconds: %d\n", c.branch)
			}
			sm, _ := compileString(t, b.String())
			st, _ := sm.States.Get("g")
			br := st.(*asl.Parallel).Branches[1]
			wait, _ := br.States.Get("g/w")
			task := wait.(*asl.Task)
			if secs, ok := task.TimeoutSeconds.(int); !ok || secs != c.want {
				t.Errorf("TimeoutSeconds %v, want %v", task.TimeoutSeconds, c.want)
			}
			wantResource := asl.ResourceLambdaInvokeWaitForTaskToken
			if c.exec == "pipeline" {
				wantResource = asl.ResourceStartExecutionSync
			}
			if task.Resource != wantResource || task.Next != "g/w: decision" {
				t.Errorf("branch task %s → %s, want %s → g/w: decision", task.Resource, task.Next, wantResource)
			}
		})
	}
}

// TestWaitingBranchShapes checks the states of human and sub-pipeline
// branches and items (lower-waiting-groups.asl.json): where each starts,
// what each carries to the next, and that every child is a placeholder.
func TestWaitingBranchShapes(t *testing.T) {
	def := compileSources(t)["lower-waiting-groups.asl.json"]
	if got := strings.Join(Placeholders(def), ","); got != "${ApprovalFunctionArn},${PipelineChildWorkArn},${StepFunctionArn}" {
		t.Errorf("placeholders = %s", got)
	}
	var sm asl.StateMachine
	if err := json.Unmarshal(def, &sm); err != nil {
		t.Fatal(err)
	}
	starts := map[string]string{}
	par, _ := sm.States.Get("panel")
	for _, b := range par.(*asl.Parallel).Branches {
		starts[b.StartAt] = "branch"
	}
	for _, name := range []string{"approve-each", "run-each", "run-each-plain"} {
		m, _ := sm.States.Get(name)
		starts[m.(*asl.Map).ItemProcessor.StartAt] = "item"
	}
	want := map[string]string{
		"panel/model": "branch", "panel/signoff": "branch", "panel/second-opinion: context": "branch", "panel/plain-child": "branch",
		"approve-each item": "item", "run-each item: context": "item", "run-each-plain item": "item",
	}
	if !reflect.DeepEqual(starts, want) {
		t.Errorf("branches start at %v, want %v", starts, want)
	}
	if entry, _ := sm.States.Get("discover"); entry.(*asl.Task).Next != "delegate: context" {
		t.Errorf("a step with executor_config.context starts at its context Task, not %q", entry.(*asl.Task).Next)
	}
	m, _ := sm.States.Get("run-each")
	items := m.(*asl.Map).ItemProcessor.States
	ctxTask, _ := items.Get("run-each item: context")
	out := ctxTask.(*asl.Task).Output.(map[string]any)
	if out["item"] != "{% $states.input.item %}" || out["index"] != "{% $states.input.index %}" || out["trigger"] != "{% $states.result.Payload.output %}" {
		t.Errorf("an item's context Task outputs %v: the trigger, and the item and index carried on", out)
	}
	start, _ := items.Get("run-each item")
	args := start.(*asl.Task).Arguments.(map[string]any)
	if args["Input"].(map[string]any)["trigger"] != "{% $states.input.trigger %}" {
		t.Errorf("the child's trigger is %v, not the rendered context", args["Input"])
	}
	catch := start.(*asl.Task).Catch[0].Output.(map[string]any)
	if catch["item"] != "{% $states.input.item %}" || catch["error"] != "{% $states.errorOutput %}" {
		t.Errorf("a failed child's Catch outputs %v: the error, and the item carried on", catch)
	}
}

func asMaps(v any) []map[string]any {
	var out []map[string]any
	for _, x := range asSlice(v) {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
