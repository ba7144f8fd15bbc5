package awsenv

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

var lambdaEnv = []string{
	"AWS_REGION=eu-west-1",
	"AWS_DEFAULT_REGION=eu-west-1",
	"AWS_ACCESS_KEY_ID=ASIAEXAMPLEKEY",
	"AWS_SECRET_ACCESS_KEY=example-secret-key",
	"AWS_SESSION_TOKEN=example-session-token",
	"AWS_LAMBDA_FUNCTION_NAME=step",
	"PATH=/usr/bin",
}

func with(extra ...string) []string {
	return append(append([]string(nil), lambdaEnv...), extra...)
}

func without(names ...string) []string {
	var out []string
	for _, kv := range lambdaEnv {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, n := range names {
			if k == n {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

func mustLoad(t *testing.T, env []string) aws.Config {
	t.Helper()
	cfg, err := Load(env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

func TestLoadLambdaEnvironment(t *testing.T) {
	cfg := mustLoad(t, with("AWS_ACCOUNT_ID=123456789012"))
	if cfg.Region != "eu-west-1" {
		t.Errorf("region = %q", cfg.Region)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := aws.Credentials{AccessKeyID: "ASIAEXAMPLEKEY", SecretAccessKey: "example-secret-key",
		SessionToken: "example-session-token", AccountID: "123456789012", Source: creds.Source}
	if creds != want || creds.Source == "" {
		t.Errorf("credentials = %+v", creds)
	}
	if creds.Expires != (aws.Credentials{}).Expires || creds.CanExpire {
		t.Error("static credentials should not expire")
	}
	if cfg.BaseEndpoint != nil || cfg.RetryMaxAttempts != 0 || cfg.RetryMode != "" {
		t.Errorf("settings not in the environment are set: %+v", cfg)
	}
	if cfg.HTTPClient == nil {
		t.Error("no shared HTTP client")
	}
}

func TestLoadRegion(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		want string
	}{
		{"AWS_REGION wins", append(without("AWS_REGION", "AWS_DEFAULT_REGION"), "AWS_DEFAULT_REGION=us-west-2", "AWS_REGION=eu-central-1"), "eu-central-1"},
		{"AWS_DEFAULT_REGION alone", append(without("AWS_REGION", "AWS_DEFAULT_REGION"), "AWS_DEFAULT_REGION=us-west-2"), "us-west-2"},
		{"empty AWS_REGION is unset", append(without("AWS_REGION", "AWS_DEFAULT_REGION"), "AWS_REGION=", "AWS_DEFAULT_REGION=ap-south-1"), "ap-south-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustLoad(t, c.env).Region; got != c.want {
				t.Errorf("region = %q, want %q", got, c.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		want string
	}{
		{"no region", without("AWS_REGION", "AWS_DEFAULT_REGION"), "no region: AWS_REGION and AWS_DEFAULT_REGION are unset"},
		{"no credentials", without("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"), "no AWS credentials in the environment"},
		{"key without secret", without("AWS_SECRET_ACCESS_KEY"), "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"},
		{"secret without key", without("AWS_ACCESS_KEY_ID"), "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"},
		{"global endpoint not a URL", with("AWS_ENDPOINT_URL=localhost:8000"), `AWS_ENDPOINT_URL: "localhost:8000" is not an http or https URL`},
		{"service endpoint without host", with("AWS_ENDPOINT_URL_DYNAMODB=http://"), `AWS_ENDPOINT_URL_DYNAMODB: "http://" is not an http or https URL`},
		{"service endpoint of another scheme", with("AWS_ENDPOINT_URL_S3=ftp://files.example"), "AWS_ENDPOINT_URL_S3"},
		{"ignore flag not a boolean", with("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=yes"), `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS="yes": want true or false`},
		{"max attempts not a number", with("AWS_MAX_ATTEMPTS=three"), `AWS_MAX_ATTEMPTS="three"`},
		{"max attempts zero", with("AWS_MAX_ATTEMPTS=0"), `AWS_MAX_ATTEMPTS="0": want a positive whole number`},
		{"unknown retry mode", with("AWS_RETRY_MODE=eager"), `AWS_RETRY_MODE="eager": want standard or adaptive`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			for _, secret := range []string{"example-secret-key", "example-session-token"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error quotes a credential: %v", err)
				}
			}
		})
	}
	_, err := Load(nil)
	if err == nil {
		t.Fatal("Load(nil) succeeded")
	}
	_, err = Load(without("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))
	if !errors.Is(err, ErrNoCredentials) {
		t.Errorf("err = %v, want ErrNoCredentials", err)
	}
}

func TestLoadRetrySettings(t *testing.T) {
	cfg := mustLoad(t, with("AWS_MAX_ATTEMPTS=5", "AWS_RETRY_MODE=adaptive"))
	if cfg.RetryMaxAttempts != 5 || cfg.RetryMode != aws.RetryModeAdaptive {
		t.Errorf("retry = %d %q", cfg.RetryMaxAttempts, cfg.RetryMode)
	}
}

func TestEndpoint(t *testing.T) {
	cases := []struct {
		name  string
		env   []string
		sdkID string
		want  string
	}{
		{"nothing configured", nil, "DynamoDB", ""},
		{"service setting", []string{"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000"}, "DynamoDB", "http://127.0.0.1:8000"},
		{"SDK ID with a space", []string{"AWS_ENDPOINT_URL_SECRETS_MANAGER=https://sm.internal"}, "Secrets Manager", "https://sm.internal"},
		{"two-word service", []string{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME=https://br.internal/"}, "Bedrock Runtime", "https://br.internal/"},
		{"global only", []string{"AWS_ENDPOINT_URL=http://localhost:4566"}, "SSM", "http://localhost:4566"},
		{"service wins over global", []string{"AWS_ENDPOINT_URL=http://localhost:4566", "AWS_ENDPOINT_URL_SSM=http://localhost:9000/ssm"}, "SSM", "http://localhost:9000/ssm"},
		{"another service's setting", []string{"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000"}, "S3", ""},
		{"another service's setting falls back to global", []string{"AWS_ENDPOINT_URL=http://localhost:4566", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000"}, "S3", "http://localhost:4566"},
		{"ignored", []string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=TRUE", "AWS_ENDPOINT_URL=http://localhost:4566", "AWS_ENDPOINT_URL_SSM=http://localhost:9000"}, "SSM", ""},
		{"not ignored", []string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=false", "AWS_ENDPOINT_URL_SSM=http://localhost:9000"}, "SSM", "http://localhost:9000"},
		{"empty service setting is unset", []string{"AWS_ENDPOINT_URL=http://localhost:4566", "AWS_ENDPOINT_URL_SSM="}, "SSM", "http://localhost:4566"},
		{"lookalike variable", []string{"AWS_ENDPOINT_URLS=http://localhost:1"}, "SSM", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Endpoint(mustLoad(t, with(c.env...)), c.sdkID); got != c.want {
				t.Errorf("Endpoint(%q) = %q, want %q", c.sdkID, got, c.want)
			}
		})
	}
	if got := Endpoint(aws.Config{BaseEndpoint: aws.String("http://x")}, "SSM"); got != "http://x" {
		t.Errorf("config without sources: %q", got)
	}
}

func TestEnvName(t *testing.T) {
	for sdkID, want := range map[string]string{
		"DynamoDB":        "AWS_ENDPOINT_URL_DYNAMODB",
		"Secrets Manager": "AWS_ENDPOINT_URL_SECRETS_MANAGER",
		"Bedrock Runtime": "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
	} {
		if got := EnvName(sdkID); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", sdkID, got, want)
		}
	}
}

// TestSDKClientUsesServiceEndpoint checks that an SDK client built from
// the config sends its requests to the AWS_ENDPOINT_URL_<SERVICE> URL,
// signed with the environment's credentials.
func TestSDKClientUsesServiceEndpoint(t *testing.T) {
	// The SDK client also looks at the process environment: a global
	// endpoint there without a DynamoDB one would hide the config source.
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		auth := r.Header.Get("Authorization")
		if r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.ListTables" ||
			!strings.Contains(auth, "Credential=ASIAEXAMPLEKEY/") || !strings.Contains(auth, "/eu-west-1/dynamodb/aws4_request") ||
			r.Header.Get("X-Amz-Security-Token") != "example-session-token" {
			http.Error(w, `{"__type":"UnrecognizedClientException"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{"TableNames":["runs"]}`))
	}))
	defer srv.Close()
	cfg := mustLoad(t, with("AWS_ENDPOINT_URL_DYNAMODB="+srv.URL, "AWS_ENDPOINT_URL_S3=http://127.0.0.1:1"))
	out, err := dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if len(out.TableNames) != 1 || out.TableNames[0] != "runs" || hits.Load() != 1 {
		t.Errorf("tables %v after %d requests", out.TableNames, hits.Load())
	}
}
