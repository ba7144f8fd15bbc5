package awsui

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stepline/stepline/shared/awsrest"
)

// The outputs of the stack's core that the UI reads (infra's
// addOutputs).
const (
	OutputTableName          = "TableName"
	OutputStateMachinePrefix = "StateMachinePrefix"
)

// Stack is what the UI needs of a deployed stack.
type Stack struct {
	Name    string
	ID      string            // its ARN
	Outputs map[string]string // output key → value
}

// CloudFormation calls DescribeStacks over CloudFormation's query
// protocol (awsrest: SigV4, retries), so that the CLI links no
// CloudFormation SDK package for one call.
type CloudFormation struct{ c *awsrest.Client }

// NewCloudFormation returns a client configured from cfg: the endpoint is
// AWS_ENDPOINT_URL_CLOUDFORMATION (or AWS_ENDPOINT_URL) when set, else
// the regional one.
func NewCloudFormation(cfg aws.Config) (*CloudFormation, error) {
	c, err := awsrest.New(cfg, awsrest.Service{SDKID: "CloudFormation", SigningName: "cloudformation", EndpointPrefix: "cloudformation"})
	if err != nil {
		return nil, err
	}
	return &CloudFormation{c: c}, nil
}

// maxStackAnswer bounds a DescribeStacks answer (a stack has at most 200
// outputs).
const maxStackAnswer = 1 << 20

// LookupStack returns a stack's ARN and outputs. Errors name the stack;
// one that does not exist is CloudFormation's ValidationError.
func (cf *CloudFormation) LookupStack(ctx context.Context, name string) (Stack, error) {
	form := url.Values{"Action": {"DescribeStacks"}, "Version": {"2010-05-15"}, "StackName": {name}}
	h := http.Header{}
	h.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	resp, err := cf.c.Do(ctx, awsrest.Request{Method: http.MethodPost, Path: "/", Header: h, Body: []byte(form.Encode()), MaxBody: maxStackAnswer})
	if err != nil {
		return Stack{}, fmt.Errorf("describe stack %q: %w", name, err)
	}
	var out struct {
		Stacks []struct {
			ID      string `xml:"StackId"`
			Name    string `xml:"StackName"`
			Outputs []struct {
				Key   string `xml:"OutputKey"`
				Value string `xml:"OutputValue"`
			} `xml:"Outputs>member"`
		} `xml:"DescribeStacksResult>Stacks>member"`
	}
	if err := xml.Unmarshal(resp.Body, &out); err != nil {
		return Stack{}, fmt.Errorf("describe stack %q: read the answer: %w", name, err)
	}
	if len(out.Stacks) != 1 {
		return Stack{}, fmt.Errorf("describe stack %q: %d stacks in the answer, want 1", name, len(out.Stacks))
	}
	s := Stack{Name: out.Stacks[0].Name, ID: out.Stacks[0].ID, Outputs: map[string]string{}}
	for _, o := range out.Stacks[0].Outputs {
		s.Outputs[o.Key] = o.Value
	}
	return s, nil
}
