package infra_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/stepline/stepline/infra"
	"github.com/stepline/stepline/infra/assembly"
	"github.com/stepline/stepline/shared/catalog"
)

// genPipeline is generated pipeline i of a deployment: every fifth has a
// trigger, a schedule, a human step, a sub-pipeline step (starting an
// earlier scheduled pipeline) or a fan-out, so that every kind of
// resource a pipeline brings is counted.
func genPipeline(i int) (name, src string) {
	name = fmt.Sprintf("team-%02d-pipeline-%03d", i%7, i)
	model := "executor: gateway\n    executor_config: {base_url: \"http://localhost:11434/v1\", model: ollama/llama3.1}\n"
	step := func(n string) string {
		return "  - name: " + n + "\n    " + model + "    prompt_template: \"Look at {{ trigger.summary }}.\"\n    timeout_seconds: 120\n"
	}
	head := "name: " + name + "\nstage: production\n"
	switch i % 5 {
	case 0:
		head += fmt.Sprintf("trigger:\n  match:\n    source: alertmanager\n    team: team-%02d\n    summary: {regex: \"svc-%03d\"}\n", i%7, i)
	case 1:
		head += fmt.Sprintf("schedule:\n  cron: \"%d 6 * * *\"\n  summary: daily sweep %d\n", i%60, i)
	}
	body := "steps:\n" + step("triage")
	switch i % 5 {
	case 2:
		body += "  - name: approve\n    executor: human\n    prompt_template: \"Go?\"\n    timeout_seconds: 3600\n"
	case 3:
		child, _ := genPipeline(i - 2)
		body += "  - name: sweep\n    executor: pipeline\n    executor_config: {pipeline: " + child + "}\n    timeout_seconds: 600\n"
	case 4:
		body += "  - fan_out:\n      name: check\n      over: steps.triage.services\n      as: service\n      max_items: 10\n      on_empty: skip\n      " +
			strings.ReplaceAll(model, "\n    ", "\n      ") + "      prompt_template: \"Check {{ service }}.\"\n      timeout_seconds: 120\n      join: all_must_pass\n"
	}
	body += step("report")
	return name, head + body
}

// genPipelines writes pipelines 0..n-1 into a new directory.
func genPipelines(t *testing.T, n int) string {
	t.Helper()
	files := map[string]string{}
	for i := range n {
		name, src := genPipeline(i)
		files[name+".yaml"] = src
	}
	return writeFiles(t, files)
}

// deployment is a synthesized Stepline deployment inside a user's app.
type deployment struct {
	d         *infra.Stepline
	out       string            // the cloud assembly
	templates map[string][]byte // by stack name
	took      time.Duration     // NewStepline and synthesis
}

// synthDeployment adds Stepline to an app that already holds a stack of
// the user's own, applies cdk-nag and synthesizes.
func synthDeployment(t *testing.T, props infra.Props) *deployment {
	t.Helper()
	ctx := featureFlags(t)
	out, err := os.MkdirTemp(tmpRoot, "cdk.out-")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	user := awscdk.NewStack(app, jsii.String("UserApp"), nil)
	awsssm.NewStringParameter(user, jsii.String("Setting"), &awsssm.StringParameterProps{StringValue: jsii.String("the user's own")})
	props.AssetDir = assetDir
	d, err := infra.NewStepline(app, "Stepline", &props)
	if err != nil {
		t.Fatalf("NewStepline: %v", err)
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Reports: jsii.Bool(false), Verbose: jsii.Bool(true)}), nil)
	func() {
		defer func() {
			if r := recover(); r != nil {
				report, _ := os.ReadFile(filepath.Join(out, "validation-report.json"))
				t.Fatalf("synth: %v\n%s", r, report)
			}
		}()
		app.Synth(nil)
	}()
	dep := &deployment{d: d, out: out, templates: map[string][]byte{}, took: time.Since(start)}
	for _, s := range append([]awscdk.Stack{d.Core}, d.Pipelines...) {
		raw, err := os.ReadFile(filepath.Join(out, *s.TemplateFile()))
		if err != nil {
			t.Fatal(err)
		}
		dep.templates[*s.StackName()] = raw
	}
	return dep
}

// stackOf is where a pipeline's state machine must be: its bucket among n.
func stackOf(prefix, pipeline string, n int) string {
	sum := sha256.Sum256([]byte(pipeline))
	return fmt.Sprintf("%s-Pipelines-%02d", prefix, binary.BigEndian.Uint32(sum[:4])%uint32(n))
}

// checkDeployment asserts what holds at any size: every stack within the
// limits with headroom, every pipeline's state machine in its bucket's
// stack, no reference between stacks, cdk-nag and cfn-lint clean.
func checkDeployment(t *testing.T, dep *deployment, n int, stacks int, prefix string) {
	t.Helper()
	if err := infra.CheckLimits(dep.out); err != nil {
		t.Errorf("limits:\n%v", err)
	}
	names := make([]string, 0, len(dep.templates))
	for name := range dep.templates {
		names = append(names, name)
	}
	sort.Strings(names)
	machines := map[string]string{} // state machine name → stack
	for _, name := range names {
		raw := dep.templates[name]
		u, err := infra.Use(raw)
		if err != nil {
			t.Fatal(err)
		}
		env := 0
		for _, e := range u.Environment {
			env = max(env, e)
		}
		t.Logf("%-28s %4d resources %8d bytes %3d outputs %2d parameters; largest function environment %d bytes",
			name, u.Resources, u.Bytes, u.Outputs, u.Parameters, env)
		for _, ref := range []string{"Fn::ImportValue", "Fn::GetStackOutput"} {
			if bytes.Contains(raw, []byte(ref)) {
				t.Errorf("%s references another stack (%s)", name, ref)
			}
		}
		var doc struct {
			Resources map[string]resource `json:"Resources"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for _, r := range doc.Resources {
			if r.Type == "AWS::StepFunctions::StateMachine" {
				machines[str(r.Properties["StateMachineName"])] = name
			}
		}
	}
	if len(machines) != n {
		t.Errorf("%d state machines, want %d", len(machines), n)
	}
	checkSplitGrants(t, dep, prefix)
	checkBundles(t, dep, prefix, machines)
	for i := range n {
		p, _ := genPipeline(i)
		want := stackOf(prefix, p, stacks)
		if got := machines[prefix+"-"+p]; got != want {
			t.Errorf("pipeline %s is in stack %q, want %q", p, got, want)
		}
	}
	nag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	for _, s := range append([]awscdk.Stack{dep.d.Core}, dep.d.Pipelines...) {
		ann := assertions.Annotations_FromStack(s)
		for _, m := range append(*ann.FindError(jsii.String("*"), nag), *ann.FindWarning(jsii.String("*"), nag)...) {
			b, _ := json.Marshal(m)
			t.Errorf("%s: cdk-nag: %s", *s.StackName(), b)
		}
	}
	cfnLint(t, dep)
}

// checkBundles asserts that each stack holding pipelines publishes one
// bundle for ingest, under its own parameter, holding exactly the files of
// its own state machines; and that the ingest function may read that one
// object and list that one path.
func checkBundles(t *testing.T, dep *deployment, prefix string, machines map[string]string) {
	t.Helper()
	held := map[string]int{} // stack → state machines
	for _, stack := range machines {
		held[stack]++
	}
	for stack, raw := range dep.templates {
		var doc struct {
			Resources map[string]resource `json:"Resources"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var params []resource
		for _, r := range doc.Resources {
			if r.Type == "AWS::SSM::Parameter" {
				params = append(params, r)
			}
		}
		if held[stack] == 0 {
			if len(params) != 0 {
				t.Errorf("%s holds no pipeline but %d bundle parameters", stack, len(params))
			}
			continue
		}
		if len(params) != 1 {
			t.Errorf("%s: %d bundle parameters, want 1", stack, len(params))
			continue
		}
		name := str(params[0].Properties["Name"])
		bundle := "core"
		if i := strings.LastIndex(stack, "-"); strings.Contains(stack, "-Pipelines-") {
			bundle = stack[i+1:]
		}
		if want := catalog.ParameterName(prefix, bundle); name != want {
			t.Errorf("%s: bundle parameter %q, want %q", stack, name, want)
		}
		files, _ := stackBundle(t, dep.out, stack)
		if len(files) != held[stack] {
			t.Errorf("%s: bundle of %d files for %d state machines", stack, len(files), held[stack])
		}
		for _, f := range files {
			machine := prefix + "-" + strings.TrimSuffix(f.Name, ".yaml")
			if machines[machine] != stack {
				t.Errorf("%s bundles %s, whose state machine is in %q", stack, f.Name, machines[machine])
			}
		}
		if !strings.Contains(string(raw), `"ReadPipelineBundle"`) {
			t.Errorf("%s: no grant for ingest to read its bundle", stack)
		}
	}
	core := string(dep.templates[*dep.d.Core.StackName()])
	if !strings.Contains(core, `"ssm:GetParametersByPath"`) || !strings.Contains(core, ":parameter/stepline/"+prefix+"/pipelines\"") {
		t.Errorf("the core does not let ingest list %s", catalog.Path(prefix))
	}
}

// stackBundle decodes the bundle asset of a stack, from its assets
// manifest in the cloud assembly, and returns its files and object key.
func stackBundle(t *testing.T, out, stack string) ([]catalog.File, string) {
	t.Helper()
	assets, err := assembly.FileAssets(out, stack)
	if err != nil {
		t.Fatal(err)
	}
	var files []catalog.File
	var key string
	n := 0
	for _, f := range assets {
		if f.Packaging != assembly.PackagingFile {
			continue // code
		}
		b, err := os.ReadFile(filepath.Join(out, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		bundle, err := catalog.Decode(b)
		if err != nil {
			t.Fatalf("%s: %s: %v", stack, f.Path, err)
		}
		files = append(files, bundle.Files...)
		key = f.ObjectKey
		n++
	}
	if n != 1 {
		t.Errorf("%s: %d bundle assets, want 1", stack, n)
	}
	return files, key
}

// checkSplitGrants asserts that each pipeline stack grants the core
// functions exactly its own state machines, through one managed policy
// per function attached to the core role by name, and that the core roles
// themselves are granted no state machine.
func checkSplitGrants(t *testing.T, dep *deployment, prefix string) {
	t.Helper()
	arn := func(kind, name string) string {
		return "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:" + kind + ":" + name
	}
	for stack, raw := range dep.templates {
		var doc struct {
			Resources map[string]resource `json:"Resources"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var machines, approvals []string
		for _, r := range doc.Resources {
			if r.Type != "AWS::StepFunctions::StateMachine" {
				continue
			}
			name := str(r.Properties["StateMachineName"])
			machines = append(machines, arn("stateMachine", name))
			if strings.Contains(text(r.Properties["DefinitionString"]), "waitForTaskToken") {
				approvals = append(approvals, arn("stateMachine", name))
			}
		}
		sort.Strings(machines)
		sort.Strings(approvals)
		var bundle []string
		if len(machines) > 0 {
			_, key := stackBundle(t, dep.out, stack)
			bundle = []string{`arn:${AWS::Partition}:s3:::{"Fn::Sub":"cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"}/` + key}
		}
		want := map[string]map[string][]string{ // role → Sid → resources
			prefix + "-ingest-role":   {"StartRuns": machines, "ReadPipelineBundle": bundle},
			prefix + "-recorder-role": {"ReadPipelines": machines},
		}
		if len(approvals) > 0 {
			want[prefix+"-callback-role"] = map[string][]string{"DecideApprovals": approvals}
		}
		got := map[string]map[string][]string{}
		for id, r := range doc.Resources {
			if r.Type == "AWS::IAM::Policy" {
				for _, st := range list(r.Properties["PolicyDocument"].(map[string]any)["Statement"]) {
					if sid := str(st.(map[string]any)["Sid"]); sid == "StartRuns" || sid == "ReadPipelines" || sid == "ReadRuns" || sid == "DecideApprovals" {
						t.Errorf("%s: inline policy %s grants %s", stack, id, sid)
					}
				}
			}
			if r.Type != "AWS::IAM::ManagedPolicy" {
				continue
			}
			roles := strs(list(r.Properties["Roles"]))
			if len(roles) != 1 {
				t.Errorf("%s: managed policy %s attached to %v, want one role", stack, id, roles)
				continue
			}
			for _, raw := range list(r.Properties["PolicyDocument"].(map[string]any)["Statement"]) {
				st := raw.(map[string]any)
				if got[roles[0]] == nil {
					got[roles[0]] = map[string][]string{}
				}
				got[roles[0]][str(st["Sid"])] = texts(list(st["Resource"]))
			}
		}
		if len(machines) == 0 {
			if len(got) > 0 {
				t.Errorf("%s has no state machine but grants %v", stack, got)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s grants\n%v\nwant\n%v", stack, got, want)
		}
	}
}

// cfnLint runs cfn-lint, as make lint-template does, on the deployment's
// templates: no error and no warning. Without cfn-lint (make python-tools
// installs it) the check is skipped, saying so.
func cfnLint(t *testing.T, dep *deployment) {
	t.Helper()
	python := os.Getenv("STEPLINE_PYTHON")
	if python == "" {
		python = "python3"
	}
	if exec.Command(python, "-c", "import cfnlint").Run() != nil {
		t.Log("cfn-lint not installed: templates not linted (make python-tools)")
		return
	}
	var files []string
	for _, s := range append([]awscdk.Stack{dep.d.Core}, dep.d.Pipelines...) {
		files = append(files, filepath.Join(dep.out, *s.TemplateFile()))
	}
	args := append([]string{"-c", `import sys; from cfnlint.runner import main; sys.argv[0] = "cfn-lint"; sys.exit(main())`}, files...)
	out, err := exec.Command(python, args...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("cfn-lint: %v\n%s", err, out)
	}
}

// checkAddOne synthesizes the deployment again with one more pipeline and
// asserts that only the stack that holds it changed: not the core (the
// ingest function reads the new file from the bundle its stack publishes),
// not another pipeline stack.
func checkAddOne(t *testing.T, before *deployment, props infra.Props, n, stacks int, prefix string) {
	t.Helper()
	name, src := genPipeline(n)
	if err := os.WriteFile(filepath.Join(props.PipelineDir, name+".yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	after := synthDeployment(t, props)
	holder := stackOf(prefix, name, stacks)
	t.Logf("added %s: in %s", name, holder)
	for stack, raw := range after.templates {
		old, existed := before.templates[stack]
		switch {
		case stack == holder:
			if existed && bytes.Equal(old, raw) {
				t.Errorf("%s holds the new pipeline but did not change", stack)
			}
		case !existed:
			t.Errorf("adding %s created stack %s, not its own %s", name, stack, holder)
		case !bytes.Equal(old, raw):
			t.Errorf("adding %s changed %s, which does not hold it", name, stack)
		}
	}
	for stack := range before.templates {
		if _, ok := after.templates[stack]; !ok {
			t.Errorf("adding %s removed stack %s", name, stack)
		}
	}
}

// TestScale synthesizes 200 generated pipelines over the default 10
// pipeline stacks of a staged deployment, built inside a user's own app,
// and checks the limits, the placement, the grants, the stacks'
// independence, cdk-nag and cfn-lint; then adds a pipeline and checks that
// only its stack changes (about 1.5 minutes on 2 cores).
func TestScale(t *testing.T) {
	const n = 200
	props := infra.Props{PipelineDir: genPipelines(t, n), Stage: infra.StageProd}
	dep := synthDeployment(t, props)
	t.Logf("%d pipelines over %d stacks: synthesized in %v", n, len(dep.d.Pipelines), dep.took.Round(time.Millisecond))
	if len(dep.d.Pipelines) != infra.DefaultPipelineStacks {
		t.Fatalf("%d pipeline stacks, want %d", len(dep.d.Pipelines), infra.DefaultPipelineStacks)
	}
	if got := *dep.d.Core.StackName(); got != "Stepline-prod-Core" {
		t.Errorf("core stack %q, want Stepline-prod-Core", got)
	}
	checkDeployment(t, dep, n, infra.DefaultPipelineStacks, "Stepline-prod")
	checkAddOne(t, dep, props, n, infra.DefaultPipelineStacks, "Stepline-prod")
}

// TestScaleSizes is TestScale at 10 and 100 pipelines, in stage dev, for
// the synth times and template sizes it logs: STEPLINE_SCALE=1 (make
// test-scale) runs it.
func TestScaleSizes(t *testing.T) {
	if os.Getenv("STEPLINE_SCALE") == "" {
		t.Skip("STEPLINE_SCALE=1 runs it (make test-scale)")
	}
	for _, n := range []int{10, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			props := infra.Props{PipelineDir: genPipelines(t, n), Stage: infra.StageDev}
			dep := synthDeployment(t, props)
			t.Logf("%d pipelines over %d stacks: synthesized in %v", n, len(dep.d.Pipelines), dep.took.Round(time.Millisecond))
			checkDeployment(t, dep, n, infra.DefaultPipelineStacks, "Stepline-dev")
		})
	}
}

// TestStages checks what each stage keeps and how it names things.
func TestStages(t *testing.T) {
	dir := genPipelines(t, 3)
	for _, tc := range []struct {
		stage, core    string
		deletion, keep bool
		pitr           bool
	}{
		{stage: "dev", core: "Stepline-dev-Core", deletion: false, keep: false, pitr: false},
		{stage: "prod", core: "Stepline-prod-Core", deletion: true, keep: true, pitr: true},
	} {
		t.Run(tc.stage, func(t *testing.T) {
			dep := synthDeployment(t, infra.Props{PipelineDir: dir, Stage: tc.stage, PipelineStacks: 2})
			var doc struct {
				Resources map[string]struct {
					Type           string         `json:"Type"`
					Properties     map[string]any `json:"Properties"`
					DeletionPolicy string         `json:"DeletionPolicy"`
				} `json:"Resources"`
			}
			raw, ok := dep.templates[tc.core]
			if !ok {
				t.Fatalf("no stack %s among %v", tc.core, reflect.ValueOf(dep.templates).MapKeys())
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			autoDelete := 0
			for id, r := range doc.Resources {
				switch r.Type {
				case "AWS::DynamoDB::Table":
					if got := r.Properties["DeletionProtectionEnabled"] == true; got != tc.deletion {
						t.Errorf("table deletion protection %v, want %v", got, tc.deletion)
					}
					if got := text(r.Properties["PointInTimeRecoverySpecification"]) == `{"PointInTimeRecoveryEnabled":true}`; got != tc.pitr {
						t.Errorf("table point-in-time recovery %v, want %v", got, tc.pitr)
					}
					fallthrough
				case "AWS::S3::Bucket", "AWS::Logs::LogGroup":
					if (r.DeletionPolicy == "Retain") != tc.keep && !strings.HasPrefix(id, "ApiAccessLogs") {
						t.Errorf("%s %s DeletionPolicy %q, want kept %v", r.Type, id, r.DeletionPolicy, tc.keep)
					}
				case "Custom::S3AutoDeleteObjects":
					autoDelete++
				}
			}
			if want := map[bool]int{true: 0, false: 2}[tc.keep]; autoDelete != want {
				t.Errorf("%d buckets empty themselves on deletion, want %d", autoDelete, want)
			}
			for _, s := range dep.d.Pipelines {
				if !strings.HasPrefix(*s.StackName(), "Stepline-"+tc.stage+"-Pipelines-") {
					t.Errorf("pipeline stack %q", *s.StackName())
				}
			}
		})
	}
}

func TestNewSteplineErrors(t *testing.T) {
	dir := genPipelines(t, 2)
	tests := []struct {
		name  string
		props infra.Props
		want  string
	}{
		{"unknown stage", infra.Props{PipelineDir: dir, Stage: "qa"}, `stage "qa": want one of dev, staging, prod, or none`},
		{"too many pipeline stacks", infra.Props{PipelineDir: dir, PipelineStacks: 25}, "pipeline stacks 25: want 1 to 19, or -1"},
		{"bad name", infra.Props{PipelineDir: dir, Name: "my app"}, `name "my app": want a letter`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := awscdk.NewApp(nil)
			tc.props.AssetDir = assetDir
			d, err := infra.NewStepline(app, "Stepline", &tc.props)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewStepline = %v, %v; want an error with %q", d, err, tc.want)
			}
			if n := len(*app.Node().Children()); n != 0 {
				t.Errorf("the failed NewStepline added %d constructs to the app", n)
			}
		})
	}
}

// TestVpc runs the functions in a VPC of the user's own stack.
func TestVpc(t *testing.T) {
	ctx := featureFlags(t)
	out, err := os.MkdirTemp(tmpRoot, "cdk.out-")
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	network := awscdk.NewStack(app, jsii.String("Network"), nil)
	vpc := awsec2.NewVpc(network, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(1)})
	d, err := infra.NewStepline(app, "Stepline", &infra.Props{PipelineDir: genPipelines(t, 3), AssetDir: assetDir, Vpc: vpc, Stage: infra.StageStaging, PipelineStacks: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The user's network is theirs to check; Stepline's stacks are nagged.
	for _, s := range append([]awscdk.Stack{d.Core}, d.Pipelines...) {
		awscdk.Aspects_Of(s).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Reports: jsii.Bool(false)}), nil)
	}
	tmpl, err := templateOf(d.Core, out)
	if err != nil {
		t.Fatal(err)
	}
	fns := tmpl.FindResources(jsii.String("AWS::Lambda::Function"), nil)
	if len(*fns) != len(infra.Functions()) {
		t.Fatalf("%d functions, want %d", len(*fns), len(infra.Functions()))
	}
	for id, fn := range *fns {
		props := (*fn)["Properties"].(map[string]any)
		cfg, _ := props["VpcConfig"].(map[string]any)
		if len(list(cfg["SubnetIds"])) != 2 || len(list(cfg["SecurityGroupIds"])) != 1 {
			t.Errorf("%s VpcConfig = %s, want the VPC's two private subnets and a security group", id, text(cfg))
		}
	}
	nag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	ann := assertions.Annotations_FromStack(d.Core)
	for _, m := range append(*ann.FindError(jsii.String("*"), nag), *ann.FindWarning(jsii.String("*"), nag)...) {
		b, _ := json.Marshal(m)
		t.Errorf("cdk-nag: %s", b)
	}
}
