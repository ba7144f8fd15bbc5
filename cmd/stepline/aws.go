package main

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/stepline/stepline/shared/awsrest"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/fault"
)

// bedrockClient is the Bedrock runtime client of local runs: the signed
// REST client the step Lambda uses (awsrest.BedrockRuntime), configured
// from the AWS SDK's standard configuration chain — the environment, the
// shared config and credentials files, the profile in AWS_PROFILE, SSO,
// credential processes, the instance's role — as the AWS CLI is. Unlike a
// Lambda function's cold start, the CLI's start can afford the SDK's
// config package. The configuration is loaded on the first call, so a run
// without bedrock steps reads none; a configuration that does not load
// fails that call and every later one with the same error.
type bedrockClient struct {
	once   sync.Once
	client *awsrest.BedrockRuntime
	err    error
}

var _ executor.ConverseAPI = (*bedrockClient)(nil)

// Converse implements executor.ConverseAPI.
func (b *bedrockClient) Converse(ctx context.Context, modelID string, body []byte) ([]byte, error) {
	b.once.Do(func() { b.client, b.err = newBedrockRuntime(context.WithoutCancel(ctx)) })
	if b.err != nil {
		return nil, b.err
	}
	return b.client.Converse(ctx, modelID, body)
}

func newBedrockRuntime(ctx context.Context) (*awsrest.BedrockRuntime, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fault.Errorf[fault.ConfigError]("load the AWS configuration: %v", err)
	}
	if cfg.Region == "" {
		return nil, fault.Errorf[fault.ConfigError]("no AWS region is configured: set AWS_REGION, or region in the profile of ~/.aws/config (AWS_PROFILE picks the profile)")
	}
	return awsrest.NewBedrockRuntime(cfg)
}
