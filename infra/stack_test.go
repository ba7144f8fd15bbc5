package infra_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/infra"
	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/store/dynamo"
)

func TestTable(t *testing.T) {
	s := examples.get(t)
	_, table := s.one(t, "AWS::DynamoDB::Table", "Table")
	p := table.Properties
	if p["BillingMode"] != "PAY_PER_REQUEST" {
		t.Errorf("BillingMode = %v, want PAY_PER_REQUEST", p["BillingMode"])
	}
	if got := text(p["PointInTimeRecoverySpecification"]); got != `{"PointInTimeRecoveryEnabled":true}` {
		t.Errorf("PointInTimeRecoverySpecification = %s", got)
	}
	if got := text(p["TimeToLiveSpecification"]); got != `{"AttributeName":"`+dynamo.AttrTTL+`","Enabled":true}` {
		t.Errorf("TimeToLiveSpecification = %s", got)
	}
	// The table mirrors the store's own definition: keys, attribute
	// types, indexes and their projections.
	def := dynamo.Schema()
	keys := func(v any) string {
		var parts []string
		for _, k := range list(v) {
			m := k.(map[string]any)
			parts = append(parts, str(m["AttributeName"])+"/"+str(m["KeyType"]))
		}
		return strings.Join(parts, ",")
	}
	if got, want := keys(p["KeySchema"]), def.PartitionKey+"/HASH,"+def.SortKey+"/RANGE"; got != want {
		t.Errorf("KeySchema = %s, want %s", got, want)
	}
	var attrs []string
	for _, a := range list(p["AttributeDefinitions"]) {
		m := a.(map[string]any)
		attrs = append(attrs, str(m["AttributeName"])+":"+str(m["AttributeType"]))
	}
	var wantAttrs []string
	for _, a := range def.KeyAttributes() {
		wantAttrs = append(wantAttrs, a+":S")
	}
	sort.Strings(attrs)
	sort.Strings(wantAttrs)
	if !reflect.DeepEqual(attrs, wantAttrs) {
		t.Errorf("AttributeDefinitions = %v, want %v", attrs, wantAttrs)
	}
	gsis := map[string]map[string]any{}
	for _, g := range list(p["GlobalSecondaryIndexes"]) {
		m := g.(map[string]any)
		gsis[str(m["IndexName"])] = m
	}
	if len(gsis) != len(def.Indexes) {
		t.Fatalf("%d indexes, want %d", len(gsis), len(def.Indexes))
	}
	for _, want := range def.Indexes {
		g, ok := gsis[want.Name]
		if !ok {
			t.Errorf("index %s missing", want.Name)
			continue
		}
		wantKeys := want.PartitionKey + "/HASH," + want.SortKey + "/RANGE"
		if got := keys(g["KeySchema"]); got != wantKeys {
			t.Errorf("index %s keys = %s, want %s", want.Name, got, wantKeys)
		}
		proj := g["Projection"].(map[string]any)
		got := strs(list(proj["NonKeyAttributes"]))
		wantAttrs := append([]string(nil), dynamo.ProjectedAttributes()...)
		sort.Strings(wantAttrs)
		if proj["ProjectionType"] != "INCLUDE" || !reflect.DeepEqual(got, wantAttrs) {
			t.Errorf("index %s projection = %v %v, want INCLUDE %v", want.Name, proj["ProjectionType"], got, wantAttrs)
		}
	}
}

func TestBuckets(t *testing.T) {
	s := examples.get(t)
	id, bucket := s.one(t, "AWS::S3::Bucket", "Artifacts")
	p := bucket.Properties
	if got := text(p["BucketEncryption"]); !strings.Contains(got, `"SSEAlgorithm":"AES256"`) {
		t.Errorf("artifacts encryption = %s", got)
	}
	if got := text(p["PublicAccessBlockConfiguration"]); got != `{"BlockPublicAcls":true,"BlockPublicPolicy":true,"IgnorePublicAcls":true,"RestrictPublicBuckets":true}` {
		t.Errorf("artifacts public access block = %s", got)
	}
	if got := text(p["LifecycleConfiguration"]); !strings.Contains(got, `"ExpirationInDays":30`) {
		t.Errorf("artifacts lifecycle = %s, want expiry after 30 days", got)
	}
	if p["LoggingConfiguration"] == nil {
		t.Error("artifacts bucket has no server access logging")
	}
	// TLS only: a Deny on aws:SecureTransport false in the bucket policy.
	tls := false
	for _, pol := range s.of("AWS::S3::BucketPolicy") {
		if text(pol.Properties["Bucket"]) != "${"+id+"}" {
			continue
		}
		for _, st := range list(pol.Properties["PolicyDocument"].(map[string]any)["Statement"]) {
			if strings.Contains(text(st), `"Condition":{"Bool":{"aws:SecureTransport":"false"}},"Effect":"Deny"`) {
				tls = true
			}
		}
	}
	if !tls {
		t.Error("the artifact bucket's policy does not deny requests without TLS")
	}
	assert(t, "access log bucket", func() {
		s.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
			"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true, "RestrictPublicBuckets": true},
			"LifecycleConfiguration":         map[string]any{"Rules": []any{map[string]any{"ExpirationInDays": 90, "Status": "Enabled", "Id": "expire-access-logs"}}},
		})
	})
}

func TestFunctions(t *testing.T) {
	s := examples.get(t)
	fns := s.of("AWS::Lambda::Function")
	if len(fns) != len(infra.Functions()) {
		t.Fatalf("%d functions, want %d", len(fns), len(infra.Functions()))
	}
	longest := 0
	for _, p := range s.pipelines {
		longest = max(longest, p.StepTimeout)
	}
	wantTimeout := map[string]float64{"Step": float64(longest), "Approval": 30, "Callback": 10, "Ingest": 28, "Recorder": 60}
	env := map[string][]string{
		"Step":     {infra.EnvArtifactBucket, infra.EnvLogLevel, infra.EnvMCPCloseOnShutdown, infra.EnvMetricNamespace, infra.EnvSecretRefs, infra.EnvTableName},
		"Approval": {infra.EnvAPIBaseURL, infra.EnvApprovalKeySecretARN, infra.EnvLogLevel, infra.EnvMetricNamespace, infra.EnvSecretRefs, infra.EnvTableName},
		"Callback": {infra.EnvApprovalKeySecretARN, infra.EnvLogLevel, infra.EnvMetricNamespace, infra.EnvTableName},
		"Ingest":   {infra.EnvLogLevel, infra.EnvMetricNamespace, infra.EnvStateMachineAccount, infra.EnvStateMachinePrefix, infra.EnvTableName, infra.EnvWebhookTokenSecretARN},
		"Recorder": {infra.EnvLogLevel, infra.EnvMetricNamespace, infra.EnvSecretRefs, infra.EnvStateMachineAccount, infra.EnvStateMachinePrefix, infra.EnvTableName},
	}
	refs, err := plan.Secrets(s.pipelines, exampleSecrets)
	if err != nil {
		t.Fatal(err)
	}
	for name, timeout := range wantTimeout {
		t.Run(name, func(t *testing.T) {
			_, fn := s.one(t, "AWS::Lambda::Function", name+"Function")
			p := fn.Properties
			if got := text(p["Architectures"]); got != `["arm64"]` {
				t.Errorf("Architectures = %s", got)
			}
			if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" {
				t.Errorf("Runtime, Handler = %v, %v", p["Runtime"], p["Handler"])
			}
			if got := text(p["TracingConfig"]); got != `{"Mode":"Active"}` {
				t.Errorf("TracingConfig = %s", got)
			}
			if got := p["LoggingConfig"].(map[string]any); got["LogFormat"] != "JSON" || got["ApplicationLogLevel"] != "INFO" || got["LogGroup"] == nil {
				t.Errorf("LoggingConfig = %v", got)
			}
			if got := p["Timeout"].(float64); got != timeout || got > 900 {
				t.Errorf("Timeout = %v, want %v", got, timeout)
			}
			vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			var names []string
			for k := range vars {
				names = append(names, k)
			}
			sort.Strings(names)
			if !reflect.DeepEqual(names, env[name]) {
				t.Errorf("environment = %v, want %v", names, env[name])
			}
			if v, ok := vars[infra.EnvSecretRefs]; ok && v != plan.RefsEnv(refs) {
				t.Errorf("%s = %v, want %q", infra.EnvSecretRefs, v, plan.RefsEnv(refs))
			}
		})
	}
	if longest != 900 {
		t.Errorf("the examples' longest step timeout is %d, want 900 (order-intake has steps without one)", longest)
	}
	// No list of state machines: the naming rule's prefix and account,
	// whatever the number of pipelines.
	for _, fn := range []string{"IngestFunction", "RecorderFunction"} {
		_, f := s.one(t, "AWS::Lambda::Function", fn)
		vars := f.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		if got := text(vars[infra.EnvStateMachinePrefix]); got != "Stepline" {
			t.Errorf("%s: %s = %s, want Stepline", fn, infra.EnvStateMachinePrefix, got)
		}
		if got := text(vars[infra.EnvStateMachineAccount]); got != "${AWS::AccountId}" {
			t.Errorf("%s: %s = %s, want the stack's account", fn, infra.EnvStateMachineAccount, got)
		}
	}
}

func TestNothingSecretInTemplate(t *testing.T) {
	s := examples.get(t)
	for id, r := range s.of("AWS::SecretsManager::Secret") {
		if _, ok := r.Properties["SecretString"]; ok {
			t.Errorf("secret %s has its value in the template", id)
		}
		if r.Properties["GenerateSecretString"] == nil {
			t.Errorf("secret %s is not generated by Secrets Manager", id)
		}
	}
	raw, _ := json.Marshal(s.template.ToJSON())
	// The definitions keep the secret references unresolved and escaped,
	// so that no substitution can put a value in their place.
	for _, name := range []string{"OPENAI_API_KEY", "AUTOMATION_TOKEN", "SLACK_WEBHOOK_URL", "WAREHOUSE_TOKEN"} {
		if strings.Contains(string(raw), "${"+name+"}") {
			t.Errorf("the template holds ${%s} unescaped", name)
		}
	}
}

func TestStateMachines(t *testing.T) {
	s := examples.get(t)
	sms := s.of("AWS::StepFunctions::StateMachine")
	if len(sms) != len(s.pipelines) {
		t.Fatalf("%d state machines, want one per pipeline (%d)", len(sms), len(s.pipelines))
	}
	stepID, _ := s.one(t, "AWS::Lambda::Function", "StepFunction")
	approvalID, _ := s.one(t, "AWS::Lambda::Function", "ApprovalFunction")
	for _, p := range s.pipelines {
		t.Run(p.Name, func(t *testing.T) {
			_, sm := s.one(t, "AWS::StepFunctions::StateMachine", pipelineID(p.Name))
			props := sm.Properties
			if props["DefinitionString"] != p.Definition {
				t.Error("DefinitionString is not the compiled definition")
			}
			if props["StateMachineType"] != "STANDARD" || props["StateMachineName"] != "Stepline-"+p.Name {
				t.Errorf("type, name = %v, %v", props["StateMachineType"], props["StateMachineName"])
			}
			if got := text(props["TracingConfiguration"]); got != `{"Enabled":true}` {
				t.Errorf("TracingConfiguration = %s", got)
			}
			logging := props["LoggingConfiguration"].(map[string]any)
			if logging["Level"] != "ALL" || len(list(logging["Destinations"])) != 1 {
				t.Errorf("LoggingConfiguration = %v", logging)
			}
			subs := map[string]string{}
			for k, v := range props["DefinitionSubstitutions"].(map[string]any) {
				subs[k] = text(v)
			}
			want := map[string]string{"StepFunctionArn": "${" + stepID + ".Arn}"}
			if p.Approvals() {
				want["ApprovalFunctionArn"] = "${" + approvalID + ".Arn}"
			}
			if !reflect.DeepEqual(subs, want) {
				t.Errorf("DefinitionSubstitutions = %v, want %v", subs, want)
			}
			// The role invokes exactly the functions the definition calls.
			sts := s.statements(t, pipelineID(p.Name)+"Role")
			invoke := sid(sts, "InvokeFunctions")
			if invoke == nil {
				t.Fatal("no InvokeFunctions statement")
			}
			var wantInvoke []string
			for _, v := range want {
				wantInvoke = append(wantInvoke, v)
			}
			sort.Strings(wantInvoke)
			if got := texts(invoke.Resources); !reflect.DeepEqual(got, wantInvoke) || !reflect.DeepEqual(invoke.Actions, []string{"lambda:InvokeFunction"}) {
				t.Errorf("InvokeFunctions = %v on %v, want lambda:InvokeFunction on %v", invoke.Actions, got, wantInvoke)
			}
			for _, st := range sts {
				for _, a := range st.Actions {
					if strings.HasPrefix(a, "states:") {
						t.Errorf("a pipeline without sub-pipelines may %s", a)
					}
				}
			}
		})
	}
}

// pipelineID is the construct id prefix of a pipeline's resources:
// "sre-alert-triage" → "PipelineSreAlertTriage".
func pipelineID(name string) string {
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' })
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return "Pipeline" + strings.Join(parts, "")
}

// resourceStarAllowed are the actions AWS only grants on Resource "*":
// X-Ray and CloudWatch Logs' vended log delivery.
var resourceStarAllowed = []string{
	"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets",
	"logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
	"logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
}

func TestIAMPolicies(t *testing.T) {
	for name, l := range map[string]*lazy{"examples": examples, "fixtures": fixtures, "chat": chatStack} {
		t.Run(name, func(t *testing.T) {
			s := l.get(t)
			for id, pol := range s.of("AWS::IAM::Policy") {
				doc := pol.Properties["PolicyDocument"].(map[string]any)
				for _, raw := range list(doc["Statement"]) {
					st := raw.(map[string]any)
					actions := strs(list(st["Action"]))
					if st["Effect"] != "Allow" {
						t.Errorf("%s: unexpected %v statement", id, st["Effect"])
					}
					for _, a := range actions {
						if strings.Contains(a, "*") {
							t.Errorf("%s: wildcard action %q", id, a)
						}
					}
					for _, r := range list(st["Resource"]) {
						if r != "*" {
							continue
						}
						for _, a := range actions {
							if !slices.Contains(resourceStarAllowed, a) {
								t.Errorf("%s: %s on Resource *", id, a)
							}
						}
					}
				}
			}
		})
	}
}

func TestFunctionGrants(t *testing.T) {
	s := examples.get(t)
	tableID, _ := s.one(t, "AWS::DynamoDB::Table", "Table")
	wantTable := []string{"${" + tableID + ".Arn}", "${" + tableID + ".Arn}/index/GSI1", "${" + tableID + ".Arn}/index/GSI2"}
	wantSecrets := []string{
		"arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:stepline/anthropic-??????",
		"arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:stepline/automation-token-??????",
		"arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:stepline/grafana-mcp-token-??????",
		"arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:stepline/openai-??????",
		"arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:stepline/warehouse-token-??????",
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:openrouter-AbCdEf",
	}
	wantParams := []string{
		"arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/stepline-slack-webhook-url",
		"arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/stepline/ops-hook-key",
	}
	machine := func(name string) string {
		return "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:Stepline-" + name
	}
	var allMachines []string
	for _, p := range s.pipelines {
		allMachines = append(allMachines, machine(p.Name))
	}
	sort.Strings(allMachines)
	type grant struct {
		actions   []string
		resources []string
	}
	tests := []struct {
		role    string
		want    map[string]grant // by Sid
		without []string         // Sids the role must not have
	}{
		{role: "StepRole", want: map[string]grant{
			"RunStore":           {[]string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}, wantTable},
			"PipelineSecrets":    {[]string{"secretsmanager:GetSecretValue"}, wantSecrets},
			"PipelineParameters": {[]string{"ssm:GetParameter"}, wantParams},
			"BedrockModels": {[]string{"bedrock:InvokeModel"}, []string{"arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/anthropic.claude-3-5-sonnet-20240620-v1:0",
				"arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/anthropic.claude-3-haiku-20240307-v1:0"}},
		}, without: []string{"StartRuns", "DecideApprovals"}},
		{role: "ApprovalRole", want: map[string]grant{
			"PipelineSecrets": {[]string{"secretsmanager:GetSecretValue"}, wantSecrets},
		}, without: []string{"Artifacts", "BedrockModels", "StartRuns"}},
		{role: "CallbackRole", want: map[string]grant{
			"DecideApprovals": {[]string{"states:SendTaskFailure", "states:SendTaskSuccess"}, []string{machine("sre-alert-triage"), machine("sre-investigation")}},
		}, without: []string{"PipelineSecrets", "PipelineParameters", "Artifacts", "StartRuns"}},
		{role: "IngestRole", want: map[string]grant{
			"StartRuns": {[]string{"states:StartExecution"}, allMachines},
		}, without: []string{"PipelineSecrets", "PipelineParameters", "Artifacts", "DecideApprovals"}},
		{role: "RecorderRole", want: map[string]grant{
			"ReadPipelines":   {[]string{"states:DescribeStateMachine"}, allMachines},
			"PipelineSecrets": {[]string{"secretsmanager:GetSecretValue"}, wantSecrets},
			// The recorder reads definitions only: the status-change
			// event carries what it needs of an execution.
		}, without: []string{"StartRuns", "Artifacts", "ReadRuns"}},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			sts := s.statements(t, tt.role)
			for id, want := range tt.want {
				st := sid(sts, id)
				if st == nil {
					t.Errorf("no %s statement", id)
					continue
				}
				if got := texts(st.Resources); !reflect.DeepEqual(st.Actions, want.actions) || !reflect.DeepEqual(got, want.resources) {
					t.Errorf("%s = %v on %v\nwant %v on %v", id, st.Actions, got, want.actions, want.resources)
				}
			}
			for _, id := range tt.without {
				if sid(sts, id) != nil {
					t.Errorf("has %s, which it does not need", id)
				}
			}
			if rs := sid(sts, "RunStore"); rs == nil || !reflect.DeepEqual(texts(rs.Resources), wantTable) {
				t.Errorf("RunStore = %v, want the table and its two indexes", rs)
			}
		})
	}
	for _, st := range s.statements(t, "StepRole") {
		for _, r := range texts(st.Resources) {
			if strings.Contains(r, "not-used") {
				t.Errorf("the step function may read %s, which no pipeline uses", r)
			}
		}
	}
}

func TestTriggers(t *testing.T) {
	s := examples.get(t)
	ingestID, _ := s.one(t, "AWS::Lambda::Function", "IngestFunction")
	rules := s.of("AWS::Events::Rule")
	want := 2 // status changes and named triggers
	for _, p := range s.pipelines {
		if p.Trigger != nil {
			want += len(p.Trigger.Rules())
		}
	}
	if len(rules) != want {
		t.Errorf("%d rules, want %d", len(rules), want)
	}
	for _, p := range s.pipelines {
		if p.Trigger == nil {
			continue
		}
		smID, _ := s.one(t, "AWS::StepFunctions::StateMachine", pipelineID(p.Name))
		for _, r := range p.Trigger.Rules() {
			t.Run(p.Name+"/"+r.ID, func(t *testing.T) {
				_, rule := s.one(t, "AWS::Events::Rule", pipelineID(p.Name)+r.ID)
				pattern, _ := json.Marshal(rule.Properties["EventPattern"])
				wantPattern, _ := json.Marshal(r.Pattern)
				if string(pattern) != string(wantPattern) {
					t.Errorf("EventPattern = %s, want %s", pattern, wantPattern)
				}
				wantState := "DISABLED"
				if p.Model.Stage == "production" {
					wantState = "ENABLED"
				}
				if rule.Properties["State"] != wantState {
					t.Errorf("State = %v, want %s (stage %s)", rule.Properties["State"], wantState, p.Model.Stage)
				}
				targets := list(rule.Properties["Targets"])
				if len(targets) != 1 {
					t.Fatalf("%d targets, want 1", len(targets))
				}
				target := targets[0].(map[string]any)
				transformer := text(target["InputTransformer"])
				switch r.Target {
				case plan.TargetStateMachine:
					if text(target["Arn"]) != "${"+smID+"}" {
						t.Errorf("target %s, want the state machine", text(target["Arn"]))
					}
					if transformer != `{"InputPathsMap":{"detail":"$.detail"},"InputTemplate":"{\"trigger\":\u003cdetail\u003e}"}` {
						t.Errorf("InputTransformer = %s", transformer)
					}
				case plan.TargetIngest:
					if text(target["Arn"]) != "${"+ingestID+".Arn}" {
						t.Errorf("target %s, want the ingest function", text(target["Arn"]))
					}
					if !strings.Contains(transformer, `\"pipeline\":\"`+p.Name+`\"`) || !strings.Contains(transformer, `\"trigger\":\u003cdetail\u003e`) {
						t.Errorf("InputTransformer = %s", transformer)
					}
				}
				if target["DeadLetterConfig"] == nil || target["RetryPolicy"] == nil {
					t.Error("target without dead-letter queue or retry policy")
				}
			})
		}
	}
	_, named := s.one(t, "AWS::Events::Rule", "NamedTriggers")
	if got, want := text(named.Properties["EventPattern"]), text(plan.ExplicitPattern()); got != want {
		t.Errorf("named triggers pattern = %s, want %s", got, want)
	}
	target := list(named.Properties["Targets"])[0].(map[string]any)
	if text(target["Arn"]) != "${"+ingestID+".Arn}" || strings.Contains(text(target["InputTransformer"]), `\"pipeline\"`) {
		t.Errorf("named triggers target = %s, want the ingest function without a pipeline name", text(target))
	}

	_, status := s.one(t, "AWS::Events::Rule", "RunStatusChanges")
	pattern := status.Properties["EventPattern"].(map[string]any)
	if text(pattern["source"]) != `["aws.states"]` || text(pattern["detail-type"]) != `["Step Functions Execution Status Change"]` {
		t.Errorf("status rule pattern = %s", text(pattern))
	}
	detail := pattern["detail"].(map[string]any)
	if n := len(list(detail["stateMachineArn"])); n != len(s.pipelines) {
		t.Errorf("status rule names %d state machines, want %d", n, len(s.pipelines))
	}
	if got := strs(list(detail["status"])); !reflect.DeepEqual(got, []string{"ABORTED", "FAILED", "RUNNING", "SUCCEEDED", "TIMED_OUT"}) {
		t.Errorf("status rule statuses = %v", got)
	}
	recorderID, _ := s.one(t, "AWS::Lambda::Function", "RecorderFunction")
	if got := text(list(status.Properties["Targets"])[0].(map[string]any)["Arn"]); got != "${"+recorderID+".Arn}" {
		t.Errorf("status rule target = %s, want the recorder", got)
	}
}

func TestAPI(t *testing.T) {
	s := examples.get(t)
	ingestID, _ := s.one(t, "AWS::Lambda::Function", "IngestFunction")
	callbackID, _ := s.one(t, "AWS::Lambda::Function", "CallbackFunction")
	integrations := map[string]string{} // logical id → function
	for id, in := range s.of("AWS::ApiGatewayV2::Integration") {
		integrations[id] = text(in.Properties["IntegrationUri"])
		if in.Properties["PayloadFormatVersion"] != "2.0" {
			t.Errorf("integration %s payload format %v, want 2.0", id, in.Properties["PayloadFormatVersion"])
		}
	}
	want := map[string][2]string{
		"POST /webhook":               {"NONE", ingestID},
		"POST /pipelines/{name}/runs": {"AWS_IAM", ingestID},
		"POST /pipelines/{name}/run":  {"AWS_IAM", ingestID},
		"GET /runs":                   {"AWS_IAM", ingestID},
		"GET /runs/{id}":              {"AWS_IAM", ingestID},
		"POST /runs/{id}/rerun":       {"AWS_IAM", ingestID},
		"GET /pipelines":              {"AWS_IAM", ingestID},
		"GET /pipelines/{name}":       {"AWS_IAM", ingestID},
		"GET /schedules":              {"AWS_IAM", ingestID},
		"GET /approvals/{token}":      {"NONE", callbackID},
		"POST /approvals/{token}":     {"NONE", callbackID},
	}
	routes := s.of("AWS::ApiGatewayV2::Route")
	if len(routes) != len(want) {
		t.Errorf("%d routes, want %d", len(routes), len(want))
	}
	for _, r := range routes {
		key := str(r.Properties["RouteKey"])
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected route %q", key)
			continue
		}
		if r.Properties["AuthorizationType"] != w[0] {
			t.Errorf("%s authorization %v, want %s", key, r.Properties["AuthorizationType"], w[0])
		}
		integration := strings.TrimSuffix(strings.TrimPrefix(text(r.Properties["Target"]), "integrations/${"), "}")
		if got := integrations[integration]; got != "${"+w[1]+".Arn}" {
			t.Errorf("%s integrates %s, want %s", key, got, w[1])
		}
	}
	_, stage := s.one(t, "AWS::ApiGatewayV2::Stage", "ApiStage")
	p := stage.Properties
	logs := p["AccessLogSettings"].(map[string]any)
	if p["StageName"] != "$default" || logs["DestinationArn"] == nil || !strings.Contains(str(logs["Format"]), "$context.requestId") {
		t.Errorf("stage = %s", text(p))
	}
	if strings.Contains(str(logs["Format"]), "$context.path") || strings.Contains(str(logs["Format"]), "$context.requestOverride") {
		t.Error("access logs could record approval link tokens")
	}
	if got := text(p["DefaultRouteSettings"]); got != `{"ThrottlingBurstLimit":100,"ThrottlingRateLimit":50}` {
		t.Errorf("throttling = %s", got)
	}
}

func TestMonitoring(t *testing.T) {
	s := examples.get(t)
	if n := len(s.of("AWS::CloudWatch::Dashboard")); n != len(s.pipelines) {
		t.Errorf("%d dashboards, want one per pipeline (%d)", n, len(s.pipelines))
	}
	topicID, _ := s.one(t, "AWS::SNS::Topic", "Alarms")
	alarms := s.of("AWS::CloudWatch::Alarm")
	var runsFailed int
	for id, a := range alarms {
		if got := texts(list(a.Properties["AlarmActions"])); !reflect.DeepEqual(got, []string{"${" + topicID + "}"}) {
			t.Errorf("alarm %s actions = %v, want the alarm topic", id, got)
		}
		if a.Properties["MetricName"] == infra.MetricRuns {
			runsFailed++
			if a.Properties["Namespace"] != infra.MetricNamespace || !strings.Contains(text(a.Properties["Dimensions"]), `"Value":"failed"`) {
				t.Errorf("alarm %s = %s", id, text(a.Properties))
			}
		}
	}
	if runsFailed != len(s.pipelines)+1 {
		t.Errorf("%d failed-run alarms, want one per pipeline and the deployment's", runsFailed)
	}
	_, all := s.one(t, "AWS::CloudWatch::Alarm", "RunsFailed")
	if got := text(all.Properties["Dimensions"]); got != `[{"Name":"Status","Value":"failed"}]` {
		t.Errorf("the deployment's failed-runs alarm has dimensions %s, want Status alone", got)
	}
	for _, fn := range []string{"Step", "Approval", "Callback", "Ingest", "Recorder"} {
		_, a := s.one(t, "AWS::CloudWatch::Alarm", fn+"Errors")
		// The step function's alarm counts failed Tasks (TaskErrors), not
		// Lambda's Errors, which also count the runs a step ended.
		want := map[string]any{"Namespace": "AWS/Lambda", "MetricName": "Errors", "Threshold": 1.0}
		if fn == "Step" {
			want = map[string]any{"Namespace": infra.MetricNamespace, "MetricName": infra.MetricTaskErrors, "Threshold": 5.0,
				"Dimensions": `[{"Name":"Function","Value":"step"}]`}
		}
		for k, v := range want {
			got := a.Properties[k]
			if k == "Dimensions" {
				got = text(got)
			}
			if got != v {
				t.Errorf("alarm %sErrors: %s = %v, want %v", fn, k, got, v)
			}
		}
	}
	s.one(t, "AWS::CloudWatch::Alarm", "UndeliveredEvents")
	assert(t, "email subscription", func() {
		s.template.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{
			"Protocol": "email", "Endpoint": "oncall@example.com",
		})
	})
	_, dash := s.one(t, "AWS::CloudWatch::Dashboard", "PipelineSreAlertTriageDashboard")
	body := text(dash.Properties["DashboardBody"])
	for _, want := range []string{"Runs by status", "Step confidence", "Tokens", "Cost (USD)", infra.MetricStepConfidence, "approve-remediation", infra.MetricCost} {
		if !strings.Contains(body, want) {
			t.Errorf("the sre-alert-triage dashboard lacks %q", want)
		}
	}
}

func TestNag(t *testing.T) {
	for name, l := range map[string]*lazy{"examples": examples, "fixtures": fixtures, "chat": chatStack} {
		t.Run(name, func(t *testing.T) {
			s := l.get(t)
			nag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
			ann := assertions.Annotations_FromStack(s.stack)
			// An error also fails the synthesis (see templateOf); warnings
			// do not, and are as unwelcome.
			for _, m := range *ann.FindError(jsii.String("*"), nag) {
				b, _ := json.Marshal(m)
				t.Errorf("cdk-nag error: %s", b)
			}
			for _, m := range *ann.FindWarning(jsii.String("*"), nag) {
				b, _ := json.Marshal(m)
				t.Errorf("cdk-nag warning: %s", b)
			}
			// Every suppression says why.
			count := 0
			for id, r := range s.resources {
				nagMeta, _ := r.Metadata["cdk_nag"].(map[string]any)
				for _, raw := range list(nagMeta["rules_to_suppress"]) {
					sup := raw.(map[string]any)
					count++
					if reason := str(sup["reason"]); len(reason) < 40 {
						t.Errorf("%s: suppression of %v has no real reason: %q", id, sup["id"], reason)
					}
				}
			}
			if count == 0 {
				t.Error("no suppression found: the metadata walk is broken")
			}
		})
	}
}
