package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestServeAWSFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"--stack without --aws", []string{"serve", "--stack", "Prod"}, "--stack needs --aws"},
		{"--table without --aws", []string{"serve", "--table", "t"}, "--table needs --aws"},
		{"--aws with --pipelines", []string{"serve", "--aws", "--pipelines", "p"}, "--pipelines has no use with --aws"},
		{"--aws with --dir", []string{"serve", "--dir", "state", "--aws"}, "--dir has no use with --aws"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runIn(t, nil, false, tt.args...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, exitUsage, tt.want)
			}
		})
	}
}

// TestServeAWSStackLookup: the stack is looked up at the configured
// endpoint; a missing stack, or one without a table output, stops serve
// with a message that says what to pass.
func TestServeAWSStackLookup(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		asked = append(asked, r.PostForm.Get("Action")+" "+r.PostForm.Get("StackName"))
		if r.PostForm.Get("StackName") == "Bare" {
			w.Write([]byte(`<DescribeStacksResponse><DescribeStacksResult><Stacks><member><StackId>arn:aws:cloudformation:eu-west-1:1:stack/Bare/x</StackId><StackName>Bare</StackName></member></Stacks></DescribeStacksResult></DescribeStacksResponse>`))
			return
		}
		w.WriteHeader(400)
		w.Write([]byte(`<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id Stepline does not exist</Message></Error></ErrorResponse>`))
	}))
	defer srv.Close()
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": srv.URL, "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_PROFILE": "", "AWS_MAX_ATTEMPTS": "1"} {
		t.Setenv(k, v)
	}
	code, _, errOut := runIn(t, nil, false, "serve", "--aws")
	if code != exitFailed || !strings.Contains(errOut, `describe stack "Stepline"`) || !strings.Contains(errOut, "does not exist") || !strings.Contains(errOut, "--stack names the stack") {
		t.Errorf("missing stack: exit %d, %q", code, errOut)
	}
	code, _, errOut = runIn(t, nil, false, "serve", "--aws", "--stack", "Bare", "--region", "eu-west-1")
	if code != exitFailed || !strings.Contains(errOut, `stack "Bare" has no TableName output: pass --table`) {
		t.Errorf("stack without outputs: exit %d, %q", code, errOut)
	}
	if strings.Join(asked, ",") != "DescribeStacks Stepline,DescribeStacks Bare" {
		t.Errorf("asked %v", asked)
	}
}
