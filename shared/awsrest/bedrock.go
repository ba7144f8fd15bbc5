package awsrest

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// BedrockRuntime calls the Amazon Bedrock runtime API. Safe for concurrent
// use.
type BedrockRuntime struct{ c *Client }

// NewBedrockRuntime returns a Bedrock runtime client configured as New
// configures one, for the SDK ID "Bedrock Runtime"
// (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, AWS_ENDPOINT_URL); its regional
// endpoint is https://bedrock-runtime.<region>.amazonaws.com and requests
// are signed for the service name "bedrock".
func NewBedrockRuntime(cfg aws.Config) (*BedrockRuntime, error) {
	c, err := New(cfg, Service{SDKID: "Bedrock Runtime", SigningName: "bedrock", EndpointPrefix: "bedrock-runtime"})
	if err != nil {
		return nil, err
	}
	return &BedrockRuntime{c: c}, nil
}

// Converse sends a Converse request body (JSON: messages, system,
// inferenceConfig, toolConfig, …) for the model with the given id,
// inference profile or ARN, and returns the answer's body. Errors are as
// Client.Do's; a refusal of the service is a *ResponseError.
func (b *BedrockRuntime) Converse(ctx context.Context, modelID string, body []byte) ([]byte, error) {
	if modelID == "" {
		return nil, fmt.Errorf("converse: empty model id")
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	resp, err := b.c.Do(ctx, Request{
		Method: http.MethodPost,
		Path:   "/model/" + EscapePath(modelID, false) + "/converse",
		Header: h,
		Body:   body,
	})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
