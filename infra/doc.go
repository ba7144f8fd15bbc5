// Package infra is Stepline's CDK construct: NewStepline compiles every
// pipeline in a directory (package plan) and adds a deployment of them,
// with what their runs need, to a CDK app: a core stack and stacks of
// pipelines. A CDK user adds Stepline to an app of their own in a few
// lines:
//
//	app := awscdk.NewApp(nil)
//	_, err := infra.NewStepline(app, "Stepline", &infra.Props{
//		PipelineDir: "pipelines",
//		Secrets:     map[string]string{"OPENAI_API_KEY": "secretsmanager:stepline/openai#api_key"},
//		AlarmEmail:  "oncall@example.com",
//		Stage:       infra.StageProd,
//		Vpc:         vpc, // optional
//	})
//
// NewStack is the same deployment in one stack. The app in infra/app reads
// the stepline:* context of cdk.json (and -c stage=…) and calls
// NewStepline, then CheckLimits on what it synthesized; `npx cdk synth`
// needs no AWS credentials.
//
// # Stacks, names and limits
//
// The core stack holds the table, the buckets, the secrets, the five
// functions, the HTTP API, the alarm topic and the core alarms. Each
// pipeline is in pipeline stack bucket(name) = (first four bytes of
// SHA-256(name)) mod Props.PipelineStacks, a stack named
// <prefix>-Pipelines-NN holding its state machine, log group, role,
// rules, schedule and outputs, and for the stack: one managed policy per
// core function that acts on its pipelines (ingest starts them, the
// recorder reads their definitions, the callback function decides their
// approvals), attached to the core role by name, the status-change
// rules to the recorder, a dead-letter queue with its alarm, and the
// stack's pipeline bundle for the ingest function (below). The bucket
// depends on the name alone: adding a pipeline changes its stack and no
// other (a pipeline that brings a new secret, Bedrock model or SNS topic,
// or a longer step timeout, also changes the step function's grants or
// settings in the core).
//
// The ingest function routes with the pipelines, which the state
// machines do not carry. Each stack that holds pipelines publishes its
// files, each with its model compiled at synth, as one bundle (package
// shared/catalog): a JSON document staged as
// <AssetDir>/bundles/<sha256>.json and uploaded as a file asset to the
// CDK bootstrap bucket, a Parameter Store parameter
// /stepline/<prefix>/pipelines/<NN or core> holding its s3:// URL, and a
// grant for ingest to read that one object (in the stack's managed
// policy). The core grants ingest ssm:GetParametersByPath on
// /stepline/<prefix>/pipelines alone. Ingest reads every bundle when it
// starts and lists the parameters again at most once a minute: a stack
// deployed with other files reaches a warm function within a minute. Changing PipelineStacks moves most
// pipelines: deploy the stacks they leave before the stacks they join.
//
// The stacks share no export, output or Fn::ImportValue. Names are
// derived from the prefix, Props.Name (the id given to NewStepline,
// stepline:stackName in the app, "Stepline" by default) and the stage:
// <name>-<stage>, or <name> without a stage. State machines are
// <prefix>-<pipeline> (shared/awsenv.StateMachineName: cut to 80
// characters with a hash), and the functions find them by that rule from
// STATE_MACHINE_PREFIX and STATE_MACHINE_ACCOUNT: no function environment
// grows with the pipelines. With pipeline stacks the functions, their
// roles and the alarm topic are named too (<prefix>-<function>,
// <prefix>-<function>-role, <prefix>-alarms): deploying needs
// CAPABILITY_NAMED_IAM, which cdk deploy grants.
//
// Without a stage the pipelines stay in the core stack, named <name>
// (PipelineStacks -1: the offline synth, the e2e tier and small
// deployments); with one they are spread over DefaultPipelineStacks (10)
// stacks unless PipelineStacks says otherwise, at most MaxPipelineStacks
// (19): each pipeline stack attaches a managed policy to three core roles,
// and IAM allows 10 per role (20 when raised; with a Vpc the default is 9,
// CDK attaching the VPC access policy to every function role). A pipeline
// takes about 100 characters of the ingest and recorder policies (IAM's
// limit: 6,144) and about 20 KB of template (a three-step pipeline; the
// definition is most of it), so a stack holds 30 to 40 pipelines within
// the headroom: 10 stacks hold 200 spread by the hash. CheckLimits, which the app
// runs after synthesis, fails when a template uses more than 80% of
// CloudFormation's limits (500 resources, 1 MB of template, 200 outputs,
// 200 parameters) or of IAM's (6,144 characters per managed policy, 10,240
// for a role's inline policies), or when a function's environment reaches
// Lambda's 4 KB, counting what CloudFormation resolves at its longest. A
// status-change rule's event pattern is kept within 80% of EventBridge's
// 2,048 characters by spreading a stack's state machines over several
// rules.
//
// # Stages
//
// Props.Stage (-c stage=dev|staging|prod) names the stacks
// (Stepline-prod-Core, Stepline-prod-Pipelines-03) and what is kept: in
// dev the table, buckets and log groups are destroyed with the stack (the
// buckets emptied first by CDK's auto-delete custom resource) and the
// table has no point-in-time recovery; staging keeps them, with
// point-in-time recovery; prod keeps them too and protects the table from
// deletion, as a deployment without a stage does. A pipeline's own stage
// keeps its meaning in every deployment stage: the rules of a testing
// pipeline are created disabled.
//
// # Monitoring
//
// The core alarms on failed runs of any pipeline (the recorder's Runs
// metric by Status alone), each function's errors and undelivered events;
// each pipeline stack on its own undelivered events. Per-pipeline alarms
// (failed runs, timed-out executions) and a dashboard per pipeline are
// opt-in (Props.PipelineMonitoring, stepline:pipelineMonitoring): three
// more resources per pipeline.
//
// # cdk.json and stepline.yaml
//
// The pipelines compile in their project, the stepline.yaml the CLI uses
// (package shared/project): the stepline:config context
// (Props.Config) names it, else it is the first stepline.yaml found
// walking up from the pipeline directory, as stepline validate finds it
// walking up from a pipeline file. The project holds what a pipeline
// means wherever it runs: agents, MCP servers, the tool policy, model
// providers, executor defaults. cdk.json holds what one deployment
// needs: the deployment's name (stepline:stackName), its stage (stage),
// stepline:pipelineStacks, stepline:pipelineMonitoring, the secret
// mappings (stepline:secrets), alarm e-mail (stepline:alarmEmail), log
// level and retentions (stepline:logLevel, stepline:logRetentionDays,
// stepline:artifactRetentionDays), the assets (stepline:assets), cdk-nag
// (stepline:nag) and stepline:openaiBaseUrl; the other keys are CDK's
// feature flags. Each Context* constant names one, and -c key=value sets
// it for one command (make synth CDK_ARGS="-c stage=dev"). The two meet in two
// places. The pipeline directory is stepline:pipelines when cdk.json (or
// -c) sets it, else the project's pipelines directory, else pipelines/:
// drop stepline:pipelines from cdk.json to take it from stepline.yaml.
// And every ${NAME} the project writes that a deployed pipeline uses (a
// provider's api_key, an MCP server's url or headers) is mapped in
// stepline:secrets like the pipelines' own; synth fails naming any left
// unmapped. stepline:openaiBaseUrl sets OPENAI_BASE_URL for gateway steps
// that have no base_url after the project's executors.openai.
//
// An agent step carries its resolved agent in its compiled configuration,
// so the step function reads no file of the project. An agent that needs
// a stdio MCP server (command) cannot run there, and synth refuses its
// pipeline naming the step, the agent and the server. The ingest function
// reads no file of the project either: each bundle carries its pipelines'
// models as synth compiled them (agents and library steps resolved), and
// ingest's code asset is its bootstrap (what earlier synths staged beside
// it, the project file, its agents and step library, is removed). A
// Bedrock model an agent names is granted like a bedrock step's. A library
// step is compiled into each state machine that uses it, so editing one
// changes those definitions at the next deploy.
//
// # Resources
//
//   - DynamoDB table: the run store of shared/store/dynamo, mirrored from
//     dynamo.Schema (keys PK/SK, indexes GSI1 and GSI2 with their
//     INCLUDE projection), on demand, TTL on "ttl", point-in-time
//     recovery, deletion protection and retention as the stage says.
//   - S3 bucket for artifacts: SSE-S3, public access blocked, TLS only,
//     objects expire after ArtifactRetentionDays; its server access logs go
//     to a second bucket kept 90 days.
//   - Five Lambda functions (arm64, provided.al2023, handler "bootstrap",
//     code from <AssetDir>/<name>/, JSON logs to their own log group,
//     X-Ray active), each with its own role and no managed policy:
//     step, approval, callback, ingest, recorder (see the Function*
//     constants). The step function's timeout is the longest TimeoutSeconds
//     of the step Tasks of any pipeline (at most 900 s); the others have
//     fixed timeouts.
//   - One state machine per pipeline, named <prefix>-<pipeline>, of the
//     type the compiler decides (compiler.WorkflowOf: Express when the
//     pipeline's workflow: auto or express allows it, else Standard), from
//     the compiled definition (DefinitionBody_FromString) with the
//     substitutions ${StepFunctionArn}, ${ApprovalFunctionArn} and
//     ${Pipeline<Name>Arn}; logging level ALL (without execution data) to
//     /aws/vendedlogs/states/<name> (an Express workflow's only execution
//     history), X-Ray tracing. Its role may invoke exactly the functions
//     the definition calls and start, describe and stop exactly the
//     sub-pipelines it names. An Express workflow emits no execution
//     status change event: its definition closes a completed run's record
//     itself (compiler: "Record run"), the step function counts its ends
//     in Runs, and an alarm watches its timed-out executions.
//   - Triggers: the EventBridge rules package plan compiles from
//     trigger.match (disabled for stage testing); an EventBridge Scheduler
//     schedule for schedule.cron (in schedule.timezone, UTC by default);
//     an HTTP API (see addRoutes) with access logs and throttling: the
//     webhook, manual runs (/pipelines/{name}/runs and the reference's
//     /pipelines/{name}/run), run queries (GET /runs, GET /runs/{id}),
//     reruns (POST /runs/{id}/rerun), GET /pipelines[/{name}] and GET
//     /schedules to the ingest function, IAM-authorized
//     but the webhook; approval links to the callback function. The
//     ingest function's table grant (GetItem, PutItem, UpdateItem, Query
//     on the table and its indexes) covers the queries and reruns.
//   - A rule on "Step Functions Execution Status Change" of the pipelines'
//     state machines to the recorder, so that a run that fails where the
//     state machine cannot catch it is still recorded and notified.
//   - Secrets: the approval signing key and the webhook token are generated
//     by Secrets Manager; the pipelines' ${NAME} references are mapped in
//     Props.Secrets and the functions that resolve them (step,
//     approval, recorder) may read exactly those secrets and parameters.
//     No secret value is in the template.
//   - Chat approvals, when the project's stepline.yaml has human_approval
//     (or notifications.telegram): the routes go to the approval and
//     callback functions as HUMAN_APPROVAL (JSON, secrets as ${NAME}); the
//     HTTP API gets POST /telegram/{bot} when a Telegram bot routes
//     approvals and POST /slack/{app} when a Slack app does, both on the
//     callback function, which authenticates them (Telegram's secret
//     token, Slack's signature). Every ${NAME} of the routes must be
//     mapped in Props.Secrets; the approval function may read the
//     ones it sends with (bot tokens, a Teams webhook URL), the callback
//     function only the ones it takes answers with (bot tokens, webhook
//     and signing secrets). A Telegram channel without webhook_secret is
//     an error: a Lambda cannot long-poll.
//   - A dead-letter queue for every EventBridge target and schedule;
//     alarms on failed runs, function errors and undelivered events, sent
//     to an SNS topic encrypted with a KMS key; per-pipeline alarms and
//     dashboards on request (see Monitoring).
//
// # What the functions read
//
// Environment (Env* constants): TABLE_NAME, LOG_LEVEL and METRIC_NAMESPACE
// everywhere; ARTIFACT_BUCKET (step); SECRET_REFS (step, approval,
// recorder, and callback with chat approvals: NAME=ref pairs as
// secret.ParseRefs reads them); APPROVAL_KEY_SECRET_ARN (approval,
// callback); API_BASE_URL (approval, and callback with chat approvals);
// HUMAN_APPROVAL (approval, callback, with chat approvals);
// WEBHOOK_TOKEN_SECRET_ARN (ingest); STATE_MACHINE_PREFIX and
// STATE_MACHINE_ACCOUNT (ingest, recorder: the naming rule, see Stacks,
// names and limits); MCP_CLOSE_ON_SHUTDOWN=true (step, when an agent of
// the pipelines uses MCP servers: the function then closes their sessions
// when its container stops); OPENAI_BASE_URL (step, from
// Props.OpenAIBaseURL, the stepline:openaiBaseUrl context, when set:
// the base URL of gateway steps without one). A gateway step without
// api_key sends the secret OPENAI_API_KEY: mapped in Props.Secrets,
// the step function may read it; unmapped, such steps send no key.
//
// Events: the ingest function receives API Gateway HTTP API requests
// (payload format 2.0) and, from EventBridge rules, {"pipeline": <name>,
// "trigger": <event detail>, "event": {"id", "source", "time"}}. The
// recorder receives Step Functions execution status change events. State
// machines started by a rule get {"trigger": <event detail>}; by a
// schedule, {"trigger": {source "scheduler", pipeline, severity, summary,
// team, labels, metadata{cron, schedule_arn}, received_at}}; by a rerun,
// {"trigger": …, "rerun": {original_run_id, from_step, steps, items}} (see
// package compiler). A failed execution may also be redriven (Step
// Functions RedriveExecution): it resumes at the failed state under the
// same run ID, while a rerun is a new run.
//
// # Metrics
//
// The functions emit CloudWatch embedded metric format records in
// namespace MetricNamespace ("Stepline"): Runs (Count; Pipeline, Status)
// from the recorder when a run ends; StepConfidence (None; Pipeline, Step),
// InputTokens and OutputTokens (Count; Pipeline) and CostUSD (None;
// Pipeline) from the step function per recorded step; TaskErrors (Count;
// Pipeline, and Function alone) from the step function per failed Task
// (not a step's run-ending answer). The dashboards, the failed-run alarms
// and the step function's error alarm read them.
//
// # Assets
//
// NewStack packages <AssetDir>/<function>/ for each function and fails if
// a bootstrap is missing; `make lambdas` builds them (GOOS=linux GOARCH=arm64
// CGO_ENABLED=0, -tags lambda.norpc). To synthesize without building, point
// the stepline:assets context (Props.AssetDir) at a directory holding
// a placeholder bootstrap per function, as the tests do; such a stack must
// not be deployed.
//
// # cfn-lint
//
// make lint-template runs cfn-lint on the synthesized templates in CI: no
// errors, no warnings. A resource exempt from a rule carries it in its
// Metadata (cfn-lint.config.ignore_checks), set by lintExempt with the
// reason beside it (lint.go): the functions and state machines are exempt
// from W3005, since CDK's DependsOn on their role repeats the Role
// property's Fn::GetAtt (in stage dev so is the handler of CDK's
// auto-delete custom resource).
package infra
