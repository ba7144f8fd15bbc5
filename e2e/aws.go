package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/awsrest"
)

// AWS calls the box's APIs: the SDK clients the module already has (Step
// Functions, DynamoDB) and, for the few operations of other services the
// tier makes, the project's own SigV4 client (package shared/awsrest), so
// that the tier adds no SDK modules.
type AWS struct {
	Config   aws.Config
	SFN      *sfn.Client
	DynamoDB *dynamodb.Client

	lambda, secrets, ssm, cfn, iam, events *awsrest.Client
	s3                                     *awsrest.S3
	s3raw                                  *awsrest.Client
}

// NewAWS returns clients of the box at endpoint, with dummy credentials.
func NewAWS(endpoint string) (*AWS, error) {
	cfg, err := awsenv.Load([]string{"AWS_REGION=" + Region, "AWS_ACCESS_KEY_ID=box", "AWS_SECRET_ACCESS_KEY=box", "AWS_ENDPOINT_URL=" + endpoint})
	if err != nil {
		return nil, err
	}
	a := &AWS{Config: cfg, SFN: sfn.NewFromConfig(cfg), DynamoDB: dynamodb.NewFromConfig(cfg)}
	for _, c := range []struct {
		dst *(*awsrest.Client)
		svc awsrest.Service
	}{
		{&a.lambda, awsrest.Service{SDKID: "Lambda", SigningName: "lambda", EndpointPrefix: "lambda"}},
		{&a.secrets, awsrest.Service{SDKID: "Secrets Manager", SigningName: "secretsmanager", EndpointPrefix: "secretsmanager"}},
		{&a.ssm, awsrest.Service{SDKID: "SSM", SigningName: "ssm", EndpointPrefix: "ssm"}},
		{&a.cfn, awsrest.Service{SDKID: "CloudFormation", SigningName: "cloudformation", EndpointPrefix: "cloudformation"}},
		{&a.iam, awsrest.Service{SDKID: "IAM", SigningName: "iam", EndpointPrefix: "iam"}},
		{&a.events, awsrest.Service{SDKID: "EventBridge", SigningName: "events", EndpointPrefix: "events"}},
		{&a.s3raw, awsrest.Service{SDKID: "S3", SigningName: "s3", EndpointPrefix: "s3", S3Signing: true}},
	} {
		if *c.dst, err = awsrest.New(cfg, c.svc); err != nil {
			return nil, err
		}
	}
	if a.s3, err = awsrest.NewS3(cfg); err != nil {
		return nil, err
	}
	return a, nil
}

// jsonCall makes an AWS JSON 1.1 call (X-Amz-Target) and decodes the
// answer into out (when not nil).
func jsonCall(ctx context.Context, c *awsrest.Client, target string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.1")
	h.Set("X-Amz-Target", target)
	resp, err := c.Do(ctx, awsrest.Request{Method: http.MethodPost, Path: "/", Header: h, Body: body})
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	if out != nil {
		if err := json.Unmarshal(resp.Body, out); err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
	}
	return nil
}

// queryCall makes an AWS query-protocol call and decodes the XML answer
// into out (when not nil).
func queryCall(ctx context.Context, c *awsrest.Client, action, version string, params url.Values, out any) error {
	form := url.Values{"Action": {action}, "Version": {version}}
	for k, v := range params {
		form[k] = v
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	resp, err := c.Do(ctx, awsrest.Request{Method: http.MethodPost, Path: "/", Header: h, Body: []byte(form.Encode()), MaxBody: 64 << 20})
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if out != nil {
		if err := xml.Unmarshal(resp.Body, out); err != nil {
			return fmt.Errorf("%s: %w", action, err)
		}
	}
	return nil
}

// CreateRole creates an IAM role that Lambda (and Step Functions) may
// assume and returns its ARN. The box does not enforce IAM: the role only
// has to exist.
func (a *AWS) CreateRole(ctx context.Context, name string) (string, error) {
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":["lambda.amazonaws.com","states.amazonaws.com"]},"Action":"sts:AssumeRole"}]}`
	var out struct {
		Arn string `xml:"CreateRoleResult>Role>Arn"`
	}
	err := queryCall(ctx, a.iam, "CreateRole", "2010-05-08", url.Values{"RoleName": {name}, "AssumeRolePolicyDocument": {trust}}, &out)
	return out.Arn, err
}

// Function is a Lambda function to create in the box.
type Function struct {
	Name      string
	Bootstrap string            // the bootstrap binary, zipped as the package's "bootstrap"
	Files     map[string]string // more files of the package: name in the zip → path
	Env       map[string]string
	Role      string
	Timeout   int // seconds
}

// CreateFunction creates fn (runtime provided.al2023) and returns its ARN.
func (a *AWS) CreateFunction(ctx context.Context, fn Function) (string, error) {
	pkg, err := zipPackage(fn.Bootstrap, fn.Files)
	if err != nil {
		return "", fmt.Errorf("function %s: %w", fn.Name, err)
	}
	// The package goes through S3, as CDK deploys it: moto takes several
	// seconds to read a 10 MB ZipFile from a request's JSON.
	if err := a.CreateBucket(ctx, CodeBucket); err != nil && !isCode(err, "BucketAlreadyOwnedByYou", "BucketAlreadyExists") {
		return "", err
	}
	key := fn.Name + ".zip"
	if err := a.PutObject(ctx, CodeBucket, key, pkg); err != nil {
		return "", fmt.Errorf("function %s: %w", fn.Name, err)
	}
	in := map[string]any{
		"FunctionName": fn.Name, "Runtime": "provided.al2023", "Handler": "bootstrap", "Role": fn.Role,
		"Code": map[string]any{"S3Bucket": CodeBucket, "S3Key": key}, "Timeout": max(fn.Timeout, 3),
		"MemorySize": 256, "Environment": map[string]any{"Variables": fn.Env},
	}
	body, _ := json.Marshal(in)
	h := http.Header{"Content-Type": {"application/json"}}
	resp, err := a.lambda.Do(ctx, awsrest.Request{Method: http.MethodPost, Path: "/2015-03-31/functions", Header: h, Body: body})
	if err != nil {
		return "", fmt.Errorf("create function %s: %w", fn.Name, err)
	}
	var out struct{ FunctionArn string }
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return "", fmt.Errorf("create function %s: %w", fn.Name, err)
	}
	return out.FunctionArn, nil
}

// CodeBucket holds the deployment packages of the functions the tier
// creates.
const CodeBucket = "stepline-box-code"

// isCode reports whether err is an AWS error answer with one of codes.
func isCode(err error, codes ...string) bool {
	var re *awsrest.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	for _, c := range codes {
		if re.Code == c {
			return true
		}
	}
	return false
}

// zipPackage is a deployment package: bootstrap (executable) and files.
func zipPackage(bootstrap string, files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	add := func(name, path string, mode os.FileMode) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: name, Method: zip.Store} // deflating 10 MB takes most of a second
		h.SetMode(mode)
		w, err := z.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	if err := add("bootstrap", bootstrap, 0o755); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := add(n, files[n], 0o644); err != nil {
			return nil, err
		}
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Invocation is a function's answer.
type Invocation struct {
	Payload       json.RawMessage
	FunctionError string // X-Amz-Function-Error: set when the function returned an error
}

// Invoke calls a function synchronously (RequestResponse).
func (a *AWS) Invoke(ctx context.Context, function string, payload any) (Invocation, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return Invocation{}, err
	}
	resp, err := a.lambda.Do(ctx, awsrest.Request{Method: http.MethodPost, Path: "/2015-03-31/functions/" + awsrest.EscapePath(function, false) + "/invocations", Body: body, MaxBody: 8 << 20})
	if err != nil {
		return Invocation{}, fmt.Errorf("invoke %s: %w", function, err)
	}
	return Invocation{Payload: resp.Body, FunctionError: resp.Header.Get("X-Amz-Function-Error")}, nil
}

// CreateSecret stores a Secrets Manager secret and returns its ARN.
func (a *AWS) CreateSecret(ctx context.Context, name, value string) (string, error) {
	var out struct{ ARN string }
	err := jsonCall(ctx, a.secrets, "secretsmanager.CreateSecret", map[string]string{"Name": name, "SecretString": value}, &out)
	return out.ARN, err
}

// PutParameter stores an SSM parameter (SecureString unless plain).
func (a *AWS) PutParameter(ctx context.Context, name, value string, plain bool) error {
	typ := "SecureString"
	if plain {
		typ = "String"
	}
	return jsonCall(ctx, a.ssm, "AmazonSSM.PutParameter", map[string]any{"Name": name, "Value": value, "Type": typ, "Overwrite": true}, nil)
}

// CreateBucket creates an S3 bucket (path style).
func (a *AWS) CreateBucket(ctx context.Context, bucket string) error {
	_, err := a.s3raw.Do(ctx, awsrest.Request{Method: http.MethodPut, Path: "/" + awsrest.EscapePath(bucket, false)})
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	return nil
}

// PutObject stores an S3 object.
func (a *AWS) PutObject(ctx context.Context, bucket, key string, body []byte) error {
	return a.s3.PutObject(ctx, bucket, key, body, "")
}

// ObjectExists reports whether bucket holds an object named key.
func (a *AWS) ObjectExists(ctx context.Context, bucket, key string) (bool, error) {
	_, err := a.s3.GetObject(ctx, bucket, key, 16<<20)
	switch {
	case err == nil:
		return true, nil
	case awsrest.IsNoSuchKey(err):
		return false, nil
	}
	return false, fmt.Errorf("get s3://%s/%s: %w", bucket, key, err)
}

// Stack is what DescribeStacks says of a stack.
type Stack struct {
	Status  string            `xml:"StackStatus"`
	Reason  string            `xml:"StackStatusReason"`
	Outputs map[string]string `xml:"-"`
}

// CreateStack creates a CloudFormation stack from a template body.
func (a *AWS) CreateStack(ctx context.Context, name string, template []byte, params map[string]string) error {
	v := url.Values{"StackName": {name}, "TemplateBody": {string(template)}, "Capabilities.member.1": {"CAPABILITY_IAM"}}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		v.Set(fmt.Sprintf("Parameters.member.%d.ParameterKey", i+1), k)
		v.Set(fmt.Sprintf("Parameters.member.%d.ParameterValue", i+1), params[k])
	}
	return queryCall(ctx, a.cfn, "CreateStack", "2010-05-15", v, nil)
}

// DescribeStack returns a stack's status and outputs.
func (a *AWS) DescribeStack(ctx context.Context, name string) (Stack, error) {
	var out struct {
		Stacks []struct {
			Stack
			Outputs []struct {
				Key   string `xml:"OutputKey"`
				Value string `xml:"OutputValue"`
			} `xml:"Outputs>member"`
		} `xml:"DescribeStacksResult>Stacks>member"`
	}
	if err := queryCall(ctx, a.cfn, "DescribeStacks", "2010-05-15", url.Values{"StackName": {name}}, &out); err != nil {
		return Stack{}, err
	}
	if len(out.Stacks) == 0 {
		return Stack{}, fmt.Errorf("stack %s not found", name)
	}
	s := out.Stacks[0].Stack
	s.Outputs = map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		s.Outputs[o.Key] = o.Value
	}
	return s, nil
}

// StackResource is one resource of a stack.
type StackResource struct {
	LogicalID  string `xml:"LogicalResourceId"`
	PhysicalID string `xml:"PhysicalResourceId"`
	Type       string `xml:"ResourceType"`
	Status     string `xml:"ResourceStatus"`
}

// StackResources lists a stack's resources.
func (a *AWS) StackResources(ctx context.Context, name string) ([]StackResource, error) {
	var out struct {
		Resources []StackResource `xml:"DescribeStackResourcesResult>StackResources>member"`
	}
	err := queryCall(ctx, a.cfn, "DescribeStackResources", "2010-05-15", url.Values{"StackName": {name}}, &out)
	return out.Resources, err
}

// Rule is an EventBridge rule with its targets.
type Rule struct {
	Name         string
	EventPattern string
	State        string
	Targets      []Target
}

// Target is a rule's target.
type Target struct {
	ID               string
	Arn              string
	Input            string
	InputPath        string
	InputTransformer *struct {
		InputPathsMap map[string]string
		InputTemplate string
	}
}

// Rules lists the default event bus's rules and their targets.
func (a *AWS) Rules(ctx context.Context) ([]Rule, error) {
	var out struct{ Rules []Rule }
	if err := jsonCall(ctx, a.events, "AWSEvents.ListRules", map[string]any{"Limit": 100}, &out); err != nil {
		return nil, err
	}
	for i := range out.Rules {
		var ts struct{ Targets []Target }
		if err := jsonCall(ctx, a.events, "AWSEvents.ListTargetsByRule", map[string]any{"Rule": out.Rules[i].Name}, &ts); err != nil {
			return nil, err
		}
		out.Rules[i].Targets = ts.Targets
	}
	return out.Rules, nil
}

// Matches asks EventBridge (TestEventPattern) whether event matches pattern.
func (a *AWS) Matches(ctx context.Context, pattern string, event []byte) (bool, error) {
	var out struct{ Result bool }
	err := jsonCall(ctx, a.events, "AWSEvents.TestEventPattern", map[string]any{"EventPattern": pattern, "Event": string(event)}, &out)
	return out.Result, err
}

// functionArn is the ARN of a function in the box.
func functionArn(name string) string {
	return "arn:aws:lambda:" + Region + ":" + Account + ":function:" + name
}

// stateMachineArn is the ARN of a state machine in the box.
func stateMachineArn(name string) string {
	return "arn:aws:states:" + Region + ":" + Account + ":stateMachine:" + name
}

// bootstrap is the path of a function's amd64 bootstrap.
func (t Tools) bootstrap(fn string) string {
	return filepath.Join(t.Bootstraps, fn, "bootstrap")
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
