// Command hellosecret is the hello-world bootstrap that first reads one
// secret from Secrets Manager, as the approval, callback and ingest
// functions must before they take work (their signing key, their webhook
// tokens): the floor of their cold start (BenchmarkSecretFloor).
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/secret"
)

func main() {
	cfg, err := awsenv.Load(os.Environ())
	if err != nil {
		os.Exit(1)
	}
	sm, err := secret.NewSecretsManager(cfg)
	if err != nil {
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = sm.GetSecretValue(ctx, os.Getenv("SECRET_ARN"))
	cancel()
	if err != nil {
		os.Exit(1)
	}
	lambda.Start(func(context.Context, map[string]any) (string, error) { return "hello", nil })
}
