// Package infra is Stepline's CDK stack: NewStack compiles every pipeline
// in a directory (package plan) and deploys them with what their runs need.
// The app in infra/app reads the stepline:* context of cdk.json and calls
// it; `npx cdk synth` needs no AWS credentials.
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
// needs: the stack's name, the secret mappings (stepline:secrets), alarm
// e-mail, log levels and retentions, the assets. The two meet in two
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
// pipeline naming the step, the agent and the server. The ingest function,
// which compiles the pipelines it routes, gets the project file, the
// agents' files and the step library (steps/, which pipelines name with
// use:) in its asset beside the pipelines, laid out as in the project
// (the agents and steps directories must therefore lie inside the
// project's directory); a Bedrock model an agent names is granted like a
// bedrock step's. A library step is compiled into each state machine that
// uses it, so editing one changes those definitions at the next deploy.
//
// # Resources
//
//   - DynamoDB table: the run store of shared/store/dynamo, mirrored from
//     dynamo.Schema (keys PK/SK, indexes GSI1 and GSI2 with their
//     INCLUDE projection), on demand, point-in-time recovery, TTL on "ttl",
//     deletion protection, retained.
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
//   - One Standard state machine per pipeline, named <stack>-<pipeline>,
//     from the compiled definition (DefinitionBody_FromString) with the
//     substitutions ${StepFunctionArn}, ${ApprovalFunctionArn} and
//     ${Pipeline<Name>Arn}; logging level ALL (without execution data) to
//     /aws/vendedlogs/states/<name>, X-Ray tracing. Its role may invoke
//     exactly the functions the definition calls and start, describe and
//     stop exactly the sub-pipelines it names.
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
//     alarms on failed runs, timed-out executions, function errors and
//     undelivered events, sent to an SNS topic encrypted with a KMS key;
//     a CloudWatch dashboard per pipeline.
//
// # What the functions read
//
// Environment (Env* constants): TABLE_NAME, LOG_LEVEL and METRIC_NAMESPACE
// everywhere; ARTIFACT_BUCKET (step); SECRET_REFS (step, approval,
// recorder, and callback with chat approvals: NAME=ref pairs as
// secret.ParseRefs reads them); APPROVAL_KEY_SECRET_ARN (approval,
// callback); API_BASE_URL (approval, and callback with chat approvals);
// HUMAN_APPROVAL (approval, callback, with chat approvals);
// WEBHOOK_TOKEN_SECRET_ARN (ingest); STATE_MACHINES (ingest, recorder:
// {"<pipeline>": "<state machine ARN>"}); OPENAI_BASE_URL (step, from
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
// Pipeline) from the step function per recorded step. The dashboards and
// the failed-run alarms read them.
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
// make lint-template runs cfn-lint on the synthesized template in CI: no
// errors, no warnings. A resource exempt from a rule carries it in its
// Metadata (cfn-lint.config.ignore_checks), set by lintExempt with the
// reason beside it (lint.go): the functions and state machines are exempt
// from W3005, since CDK's DependsOn on their role repeats the Role
// property's Fn::GetAtt.
package infra
