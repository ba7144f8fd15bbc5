// Command ingest is the ingest function's Lambda. It turns inbound events
// into runs with package shared/intake (authenticate, normalize, route,
// stage gate, deduplicate, record, start) and starts each run with Step
// Functions StartExecution: execution name = run ID, input =
// {"trigger": <normalized event>}. It answers
//
//   - API Gateway HTTP API requests (payload format 2.0):
//     POST /webhook (source from ?source= or X-Pipeline-Source; the bearer
//     token of the Authorization header must be one of the webhook tokens)
//     and POST /pipelines/{name}/runs (a manual run; the route is
//     IAM-authorized). 202 with {status, run_id, pipeline, source, severity,
//     summary, reason} when accepted, deduplicated or skipped; 400, 401,
//     404, 413 or 422 with {"error"} otherwise;
//   - trigger events from EventBridge rules, {"pipeline", "trigger",
//     "event"}: the rule's pipeline is started when its whole
//     trigger.match holds (an event naming its pipeline starts that one),
//     deduplicated like a webhook.
//
// # Pipelines
//
// Routing needs each pipeline's trigger.match, stage and dedup, which the
// state machines do not carry. The function reads the pipeline files the
// stack was built from in the directory "pipelines" next to its bootstrap
// (/var/task/pipelines on Lambda: <AssetDir>/ingest/pipelines/*.yaml in
// the code asset), or in PIPELINE_DIR when set, in file-name order (the
// routing order). The pipelines found must be exactly those of
// STATE_MACHINES, or the function does not start: a bundle that differs
// from the stack would route events differently than the stack's rules.
//
// Environment:
//
//	TABLE_NAME                DynamoDB table of runs and dedup claims (required)
//	STATE_MACHINES            {"<pipeline>": "<state machine ARN>"} (required)
//	WEBHOOK_TOKEN_SECRET_ARN  Secrets Manager secret holding the webhook bearer tokens, in
//	                          intake.ParseTokenList form: a token, team=token pairs or a JSON
//	                          object team → token (required; read once, when the container starts)
//	PIPELINE_DIR              directory of the pipeline files (default: "pipelines" next to the bootstrap)
//	LOG_LEVEL                 debug, info (default), warn or error
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv; AWS_ENDPOINT_URL_SFN and the like are honoured).
package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store/dynamo"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: logLevel(os.Getenv("LOG_LEVEL"))}))
	fail := func(msg string, args ...any) {
		logger.Error(msg, args...)
		os.Exit(1)
	}
	cfg, err := awsenv.Load(os.Environ())
	if err != nil {
		fail("load AWS configuration", "err", err)
	}
	table := os.Getenv("TABLE_NAME")
	if table == "" {
		fail("TABLE_NAME is not set")
	}
	machines, err := parseMachines(os.Getenv("STATE_MACHINES"))
	if err != nil {
		fail("STATE_MACHINES", "err", err)
	}
	dir := os.Getenv("PIPELINE_DIR")
	if dir == "" {
		exe, err := os.Executable()
		if err != nil {
			fail("find the bootstrap's directory", "err", err)
		}
		dir = filepath.Join(filepath.Dir(exe), "pipelines")
	}
	ps, err := loadPipelines(dir, machines)
	if err != nil {
		fail("pipelines", "err", err)
	}
	router, err := intake.NewRouter(ps)
	if err != nil {
		fail("pipelines", "err", err)
	}
	sm, err := secret.NewSecretsManager(cfg)
	if err != nil {
		fail("secrets", "err", err)
	}
	tokenARN := os.Getenv("WEBHOOK_TOKEN_SECRET_ARN")
	if tokenARN == "" {
		fail("WEBHOOK_TOKEN_SECRET_ARN is not set: webhooks would be unauthenticated")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	v, err := sm.GetSecretValue(ctx, tokenARN)
	cancel()
	if err != nil {
		fail("WEBHOOK_TOKEN_SECRET_ARN", "err", err)
	}
	tokens, err := intake.ParseTokenList(v.String)
	if err != nil || len(tokens) == 0 {
		// The parse error may quote the secret: say where, not what.
		fail("WEBHOOK_TOKEN_SECRET_ARN: the secret holds no usable token list (want a token, team=token pairs or a JSON object)", "secret", tokenARN)
	}
	db, err := dynamo.NewClient(cfg)
	if err != nil {
		fail("dynamodb", "err", err)
	}
	st := dynamo.New(db, table)
	start := starter{sfn: sfn.NewFromConfig(cfg), machines: machines}
	webhooks, err := intake.New(intake.Config{Router: router, Store: st, Starter: start, Tokens: tokens, Logger: logger})
	if err != nil {
		fail("intake", "err", err)
	}
	trigger, err := intake.New(intake.Config{Router: router, Store: st, Starter: start, Logger: logger})
	if err != nil {
		fail("intake", "err", err)
	}
	logger.Debug("pipelines loaded", "dir", dir, "pipelines", sortedNames(router))
	h := &handler{webhooks: webhooks, events: trigger, log: logger}
	lambda.Start(h.Handle)
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
