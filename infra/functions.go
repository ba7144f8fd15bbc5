package infra

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/secret"
)

// function is what differs between the functions.
type function struct {
	name        string
	description string
	memoryMB    float64
	timeout     int // seconds
}

// Timeouts of the functions other than step, in seconds.
const (
	approvalTimeout = 30
	callbackTimeout = 10 // behind the HTTP API, whose limit is 30 s
	ingestTimeout   = 28 // behind the HTTP API
	recorderTimeout = 60
)

// stepTimeout is the step function's timeout: the longest step Task of any
// pipeline (the compiler keeps each within Lambda's 900 s).
func (b *builder) stepTimeout() int {
	longest := 0
	for _, p := range b.cfg.pipelines {
		longest = max(longest, p.StepTimeout)
	}
	return min(longest, plan.MaxLambdaTimeout)
}

func (b *builder) addFunctions() {
	specs := []function{
		{FunctionStep, "Stepline: runs a step (render, execute, verify, decide, record)", 512, b.stepTimeout()},
		{FunctionApproval, "Stepline: records a pending approval and sends its signed links", 256, approvalTimeout},
		{FunctionCallback, "Stepline: approval page and decision (GET/POST /approvals/{token}), chat approval buttons", 256, callbackTimeout},
		{FunctionIngest, "Stepline: webhooks, manual runs and checked EventBridge triggers: normalize, route, dedup, start", 256, ingestTimeout},
		{FunctionRecorder, "Stepline: records execution status changes and sends run notifications", 256, recorderTimeout},
	}
	b.functions = map[string]awslambda.Function{}
	b.roles = map[string]awsiam.Role{}
	for _, spec := range specs {
		b.addFunction(spec)
	}

	tableName := b.table.TableName()
	for _, name := range Functions() {
		fn := b.functions[name]
		fn.AddEnvironment(jsii.String(EnvTableName), tableName, nil)
		fn.AddEnvironment(jsii.String(EnvLogLevel), jsii.String(b.cfg.props.LogLevel), nil)
		fn.AddEnvironment(jsii.String(EnvMetricNamespace), jsii.String(MetricNamespace), nil)
		b.roles[name].AddToPrincipalPolicy(b.tableAccess())
	}

	step := b.functions[FunctionStep]
	step.AddEnvironment(jsii.String(EnvArtifactBucket), b.artifacts.BucketName(), nil)
	if u := b.cfg.props.OpenAIBaseURL; u != "" {
		step.AddEnvironment(jsii.String(EnvOpenAIBaseURL), jsii.String(u), nil)
	}
	b.roles[FunctionStep].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("Artifacts"),
		Actions:   jsii.Strings("s3:GetObject", "s3:PutObject"),
		Resources: jsii.Strings(*b.artifacts.ArnForObjects(jsii.String("*"))),
	}))
	suppress(b.roles[FunctionStep], nagRule{"AwsSolutions-IAM5",
		"Artifacts are objects keyed by run and step under the artifact bucket; the step function reads and writes objects of that bucket only (no list, no delete).",
		[]string{`/^Resource::<Artifacts[A-Za-z0-9]+\.Arn>\/\*$/g`}})
	b.grantBedrock()

	for _, name := range []string{FunctionStep, FunctionApproval, FunctionRecorder} {
		refs := b.cfg.secrets
		if name == FunctionApproval {
			refs = merge(refs, b.cfg.chat.send) // it also sends the chat requests
		}
		if len(refs) > 0 {
			b.functions[name].AddEnvironment(jsii.String(EnvSecretRefs), jsii.String(plan.RefsEnv(refs)), nil)
			b.grantSecretRefs(b.roles[name], refs)
		}
	}
	b.addChat()

	b.grantTopics()

	for _, name := range []string{FunctionApproval, FunctionCallback} {
		b.functions[name].AddEnvironment(jsii.String(EnvApprovalKeySecretARN), b.approvalKey.SecretArn(), nil)
		b.approvalKey.GrantRead(b.roles[name], nil)
	}
	b.functions[FunctionApproval].AddEnvironment(jsii.String(EnvAPIBaseURL), b.api.ApiEndpoint(), nil)

	b.webhookToken.GrantRead(b.roles[FunctionIngest], nil)
	b.functions[FunctionIngest].AddEnvironment(jsii.String(EnvWebhookTokenSecretARN), b.webhookToken.SecretArn(), nil)
	// The functions find the state machines by their names (package
	// shared/awsenv): the environment does not grow with the pipelines.
	// Their grants are added per stack of pipelines (group.grantRuns).
	for _, name := range []string{FunctionIngest, FunctionRecorder} {
		b.functions[name].AddEnvironment(jsii.String(EnvStateMachinePrefix), jsii.String(b.cfg.names.prefix), nil)
		b.functions[name].AddEnvironment(jsii.String(EnvStateMachineAccount), b.stack.Account(), nil)
	}
}

// addFunction adds one function with its own role and log group. The
// role starts empty: no managed policy, only the grants added here and by
// the callers.
func (b *builder) addFunction(spec function) {
	id := constructID(spec.name)
	var roleName, functionName *string
	if b.split() {
		// The pipeline stacks find them by name.
		roleName = jsii.String(b.cfg.names.role(spec.name))
		functionName = jsii.String(b.cfg.names.function(spec.name))
	}
	role := awsiam.NewRole(b.stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		RoleName:    roleName,
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Stepline " + spec.name + " function"),
	})
	logGroup := awslogs.NewLogGroup(b.stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     b.cfg.logRetention,
		RemovalPolicy: b.cfg.removal(),
	})
	logGroup.GrantWrite(role)
	var subnets *awsec2.SubnetSelection
	if b.cfg.props.Vpc != nil {
		subnets = &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}
	}
	fn := awslambda.NewFunction(b.stack, jsii.String(id+"Function"), &awslambda.FunctionProps{
		FunctionName:          functionName,
		Vpc:                   b.cfg.props.Vpc,
		VpcSubnets:            subnets,
		Description:           jsii.String(spec.description),
		Runtime:               awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:          awslambda.Architecture_ARM_64(),
		Handler:               jsii.String("bootstrap"),
		Code:                  awslambda.Code_FromAsset(jsii.String(filepath.Join(b.cfg.props.AssetDir, spec.name)), nil),
		MemorySize:            jsii.Number(spec.memoryMB),
		Timeout:               awscdk.Duration_Seconds(jsii.Number(float64(spec.timeout))),
		Role:                  role,
		LogGroup:              logGroup,
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel(b.cfg.props.LogLevel),
		SystemLogLevelV2:      awslambda.SystemLogLevel_INFO,
		Tracing:               awslambda.Tracing_ACTIVE,
	})
	suppress(role, nagRule{"AwsSolutions-IAM5",
		"X-Ray's PutTraceSegments and PutTelemetryRecords have no resource-level permissions: active tracing needs Resource *.",
		[]string{"Resource::*"}})
	if b.cfg.props.Vpc != nil {
		suppress(role, nagRule{"AwsSolutions-IAM4",
			"A function in a VPC needs AWSLambdaVPCAccessExecutionRole to create and delete its network interfaces; CDK attaches it, and it grants nothing else.",
			[]string{"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"}})
	}
	lintExempt(fn, redundantDependsOn)
	b.functions[spec.name] = fn
	b.roles[spec.name] = role
}

// grantSecretRefs lets role read exactly the secrets of refs:
// secretsmanager:GetSecretValue on each secret (a name matches the ARN
// with Secrets Manager's six-character suffix) and ssm:GetParameter on
// each parameter.
func (b *builder) grantSecretRefs(role awsiam.Role, refs map[string]secret.Ref) {
	var sm, ssm []*string
	seen := map[string]bool{}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ref := refs[n]
		if seen[ref.Source+":"+ref.ID] {
			continue
		}
		seen[ref.Source+":"+ref.ID] = true
		switch ref.Source {
		case secret.SourceSecretsManager:
			sm = append(sm, b.secretARN(ref.ID))
		case secret.SourceSSM:
			ssm = append(ssm, b.parameterARN(ref.ID))
		}
	}
	if len(sm) > 0 {
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("PipelineSecrets"),
			Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
			Resources: &sm,
		}))
	}
	if len(ssm) > 0 {
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("PipelineParameters"),
			Actions:   jsii.Strings("ssm:GetParameter"),
			Resources: &ssm,
		}))
	}
}

func (b *builder) secretARN(id string) *string {
	if strings.HasPrefix(id, "arn:") {
		return jsii.String(id)
	}
	return b.stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("secretsmanager"),
		Resource:     jsii.String("secret"),
		ResourceName: jsii.String(id + "-??????"),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

func (b *builder) parameterARN(id string) *string {
	if strings.HasPrefix(id, "arn:") {
		return jsii.String(id)
	}
	return b.stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("ssm"),
		Resource:     jsii.String("parameter"),
		ResourceName: jsii.String(strings.TrimPrefix(id, "/")),
		ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}

// inferenceGeographies are the prefixes of Bedrock's cross-region
// inference profile ids ("us.anthropic.claude-…").
var inferenceGeographies = []string{"us", "eu", "apac", "us-gov", "global", "jp", "au", "ca"}

// grantBedrock lets the step function call the Bedrock models the
// pipelines name (bedrock:InvokeModel, which Converse needs): a model id
// is a foundation model of the stack's region; a cross-region inference
// profile id is that profile and its foundation model in any region the
// profile routes to; an ARN is taken as it is.
func (b *builder) grantBedrock() {
	var models []string
	for _, p := range b.cfg.pipelines {
		models = append(models, p.Models...)
	}
	slices.Sort(models)
	models = slices.Compact(models)
	if len(models) == 0 {
		return
	}
	var resources []*string
	profiles := false
	for _, id := range models {
		if strings.HasPrefix(id, "arn:") {
			resources = append(resources, jsii.String(id))
			continue
		}
		parts := strings.SplitN(id, ".", 3)
		if len(parts) == 3 && slices.Contains(inferenceGeographies, parts[0]) {
			profiles = true
			resources = append(resources,
				b.stack.FormatArn(&awscdk.ArnComponents{
					Service:      jsii.String("bedrock"),
					Resource:     jsii.String("inference-profile"),
					ResourceName: jsii.String(id),
					ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
				}),
				b.stack.FormatArn(&awscdk.ArnComponents{
					Service:      jsii.String("bedrock"),
					Region:       jsii.String("*"),
					Account:      jsii.String(""),
					Resource:     jsii.String("foundation-model"),
					ResourceName: jsii.String(parts[1] + "." + parts[2]),
					ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
				}))
			continue
		}
		resources = append(resources, b.stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("bedrock"),
			Account:      jsii.String(""),
			Resource:     jsii.String("foundation-model"),
			ResourceName: jsii.String(id),
			ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		}))
	}
	b.roles[FunctionStep].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("BedrockModels"),
		Actions:   jsii.Strings("bedrock:InvokeModel"),
		Resources: &resources,
	}))
	if profiles {
		suppress(b.roles[FunctionStep], nagRule{"AwsSolutions-IAM5",
			"A cross-region inference profile sends each request to its foundation model in any region of the profile's geography; the grant names the model, with the region left open.",
			[]string{`/^Resource::arn:<AWS::Partition>:bedrock:\*::foundation-model\/.+$/g`}})
	}
}

// grantTopics lets the functions that send notifications publish to
// exactly the SNS topics the pipelines' sns channels name.
func (b *builder) grantTopics() {
	var topics []string
	for _, p := range b.cfg.pipelines {
		for _, a := range p.Model.Notifications {
			for _, n := range a.Notices {
				if n.Channel != "sns" {
					continue
				}
				if arn, _ := n.Config["topic_arn"].(string); arn != "" && !slices.Contains(topics, arn) {
					topics = append(topics, arn)
				}
			}
		}
	}
	if len(topics) == 0 {
		return
	}
	sort.Strings(topics)
	for _, name := range []string{FunctionStep, FunctionApproval, FunctionRecorder} {
		b.roles[name].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("PublishNotifications"),
			Actions:   jsii.Strings("sns:Publish"),
			Resources: jsii.Strings(topics...),
		}))
	}
}
