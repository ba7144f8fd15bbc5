// Package states is the Step Functions client of the functions that start
// executions (ingest), read state machines (recorder) or resume a waiting
// run (callback): the calls they make, in the service's JSON 1.0 protocol, signed and retried by
// package shared/awsrest. A function that uses it does not link the
// SDK's Step Functions client, whose serializers, endpoint tables and
// their package initialisers are about 0.8 MiB of a bootstrap and a
// sixth of a millisecond of every cold start.
//
// The endpoint is the one AWS_ENDPOINT_URL_SFN (or AWS_ENDPOINT_URL)
// configures, else https://states.<region>.amazonaws.com. Errors are
// awsrest's: an error answer is an *awsrest.ResponseError whose Code is
// the service's error name (ExecutionAlreadyExists, StateMachineDoesNotExist,
// …). Each call carries an Amz-Sdk-Invocation-Id header, as the SDK's
// do, the same on every attempt of the call.
package states

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stepline/stepline/shared/awsrest"
)

// Client calls Step Functions. Safe for concurrent use.
type Client struct {
	c *awsrest.Client
}

// New returns a client with cfg's region, credentials, HTTP client and
// retry settings.
func New(cfg aws.Config) (*Client, error) {
	c, err := awsrest.New(cfg, awsrest.Service{SDKID: "SFN", SigningName: "states", EndpointPrefix: "states"})
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// maxAnswer bounds an answer: a definition is at most 1 MiB, escaped in
// JSON at most about six times that.
const maxAnswer = 8 << 20

// call posts in as operation op and decodes the answer into out.
func (c *Client) call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amz-Target", "AWSStepFunctions."+op)
	// As the SDK does: one ID per call, the same on each of its attempts.
	h.Set("Amz-Sdk-Invocation-Id", rand.Text())
	resp, err := c.c.Do(ctx, awsrest.Request{Method: http.MethodPost, Path: "/", Header: h, Body: body, MaxBody: maxAnswer})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("%s: malformed answer: %w", op, err)
	}
	return nil
}

// Execution is the StartExecution request: the state machine, the
// execution's name and its input (JSON text).
type Execution struct {
	StateMachineARN string `json:"stateMachineArn"`
	Name            string `json:"name,omitempty"`
	Input           string `json:"input,omitempty"`
}

// StartExecution starts an execution and returns its ARN.
func (c *Client) StartExecution(ctx context.Context, x Execution) (string, error) {
	var out struct {
		ExecutionARN string `json:"executionArn"`
	}
	if err := c.call(ctx, "StartExecution", x, &out); err != nil {
		return "", err
	}
	return out.ExecutionARN, nil
}

// Definition returns the definition (Amazon States Language) of the state
// machine arn, with DescribeStateMachine.
func (c *Client) Definition(ctx context.Context, arn string) (string, error) {
	var out struct {
		Definition *string `json:"definition"`
	}
	if err := c.call(ctx, "DescribeStateMachine", struct {
		StateMachineARN string `json:"stateMachineArn"`
	}{arn}, &out); err != nil {
		return "", err
	}
	if out.Definition == nil {
		return "", fmt.Errorf("DescribeStateMachine: the answer holds no definition")
	}
	return *out.Definition, nil
}

// SendTaskSuccess completes the waiting Task of taskToken with output
// (JSON text): tasktoken.Sender.
func (c *Client) SendTaskSuccess(ctx context.Context, taskToken, output string) error {
	in := struct {
		TaskToken string `json:"taskToken"`
		Output    string `json:"output"`
	}{taskToken, output}
	var out struct{}
	return c.call(ctx, "SendTaskSuccess", in, &out)
}
