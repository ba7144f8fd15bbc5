// Command step is the step function's Lambda: every Task of a compiled
// state machine invokes it (package shared/steprun does the work).
//
// Environment:
//
//	TABLE_NAME        DynamoDB table of runs, steps and approvals (required)
//	ARTIFACT_BUCKET   S3 bucket for artifacts (optional: artifacts stay inline)
//	SECRET_REFS       where ${NAME} secrets live: NAME=secretsmanager:id[#key],NAME=ssm:/param
//	PRICE_TABLE       optional YAML/JSON price table file (default: the built-in example table)
//	LOG_LEVEL         debug, info (default), warn or error
//
// Secrets not listed in SECRET_REFS are read from the environment.
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv: region, the execution role's credentials,
// AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> overrides), not through
// the SDK's config package, whose credential chain the function never
// needs and whose package initialisers slow every cold start.
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/pricing"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/task"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: logLevel(os.Getenv("LOG_LEVEL"))}))
	cfg, err := awsenv.Load(os.Environ())
	if err != nil {
		logger.Error("load AWS configuration", "err", err)
		os.Exit(1)
	}
	table := os.Getenv("TABLE_NAME")
	if table == "" {
		logger.Error("TABLE_NAME is not set")
		os.Exit(1)
	}
	refs, err := secret.ParseRefs(os.Getenv("SECRET_REFS"))
	if err != nil {
		logger.Error("SECRET_REFS", "err", err)
		os.Exit(1)
	}
	sm, err := secret.NewSecretsManager(cfg)
	if err != nil {
		logger.Error("secrets", "err", err)
		os.Exit(1)
	}
	ps, err := secret.NewParameterStore(cfg)
	if err != nil {
		logger.Error("secrets", "err", err)
		os.Exit(1)
	}
	secrets, err := secret.NewAWS(secret.AWSConfig{
		SecretsManager: sm,
		SSM:            ps,
		Refs:           refs,
		Fallback:       secret.Env(os.Getenv),
	})
	if err != nil {
		logger.Error("secrets", "err", err)
		os.Exit(1)
	}
	prices := loadPricesInBackground(os.Getenv("PRICE_TABLE"), logger)
	client := &http.Client{}
	h := &steprun.Handler{
		Store:     dynamo.New(dynamodb.NewFromConfig(cfg), table),
		Executors: executor.NewRegistry(executor.Deps{HTTP: client, Secrets: secrets, Bedrock: bedrockruntime.NewFromConfig(cfg), Logger: logger}),
		HTTP:      client,
		Secrets:   secrets,
		Logger:    logger,
	}
	if bucket := os.Getenv("ARTIFACT_BUCKET"); bucket != "" {
		h.Artifacts = steprun.S3{Client: s3.NewFromConfig(cfg), Bucket: bucket}
	}
	handle := h.Lambda()
	var priced sync.Once
	lambda.Start(func(ctx context.Context, req task.Request) (task.Response, error) {
		priced.Do(func() { h.Pricing = prices() })
		return handle(ctx, req)
	})
}

// loadPricesInBackground parses the price table on another goroutine, so
// that the parse (about a third of a millisecond) overlaps the runtime's
// fetch of the first event, and returns a function that waits for the
// table. A table that does not load is logged and leaves costs unknown.
func loadPricesInBackground(path string, logger *slog.Logger) func() *pricing.Table {
	done := make(chan struct{})
	var t *pricing.Table
	go func() {
		defer close(done)
		var err error
		if t, err = loadPrices(path); err != nil {
			logger.Warn("price table does not load; costs stay unknown", "err", err)
		}
	}()
	return func() *pricing.Table {
		<-done
		return t
	}
}

func loadPrices(path string) (*pricing.Table, error) {
	if path == "" {
		return pricing.Default()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return pricing.Load(path, f)
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
