package awsenv_test

import (
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/awsenv"
)

func TestStateMachineName(t *testing.T) {
	long := strings.Repeat("p", 90)
	tests := []struct {
		name, prefix, pipeline, want string
	}{
		{"short", "Stepline", "sre-alert-triage", "Stepline-sre-alert-triage"},
		{"staged", "Stepline-prod", "order-intake", "Stepline-prod-order-intake"},
		{"exactly 80", "Stepline", strings.Repeat("x", 71), "Stepline-" + strings.Repeat("x", 71)},
		{"cut with a hash", "Stepline", long, ("Stepline-" + long)[:71] + "-" + "4f1b0a4e"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := awsenv.StateMachineName(tc.prefix, tc.pipeline)
			if len(got) > awsenv.MaxStateMachineName {
				t.Errorf("%q is %d characters, over %d", got, len(got), awsenv.MaxStateMachineName)
			}
			if tc.name == "cut with a hash" {
				// The hash is of the whole name: check its shape and that
				// two long names differing at the end stay distinct.
				if !strings.HasPrefix(got, tc.want[:71]+"-") || len(got) != 80 {
					t.Errorf("got %q", got)
				}
				if other := awsenv.StateMachineName(tc.prefix, long+"q"); other == got {
					t.Errorf("two long names share %q", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPartition(t *testing.T) {
	for region, want := range map[string]string{
		"eu-west-1": "aws", "us-east-1": "aws", "cn-north-1": "aws-cn", "us-gov-west-1": "aws-us-gov",
		"us-iso-east-1": "aws-iso", "us-isob-east-1": "aws-iso-b", "eusc-de-east-1": "aws-eusc",
	} {
		if got := awsenv.Partition(region); got != want {
			t.Errorf("Partition(%q) = %q, want %q", region, got, want)
		}
	}
}

func TestStateMachinesFromEnv(t *testing.T) {
	ok := []string{"AWS_REGION=eu-west-1", "STATE_MACHINE_ACCOUNT=123456789012", "STATE_MACHINE_PREFIX=Stepline-prod"}
	tests := []struct {
		name    string
		env     []string
		wantARN string
		wantErr []string
	}{
		{name: "lambda", env: ok, wantARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:Stepline-prod-triage"},
		{name: "default region, china", env: []string{"AWS_DEFAULT_REGION=cn-north-1", "STATE_MACHINE_ACCOUNT=123456789012", "STATE_MACHINE_PREFIX=Stepline"},
			wantARN: "arn:aws-cn:states:cn-north-1:123456789012:stateMachine:Stepline-triage"},
		{name: "nothing set", env: nil, wantErr: []string{"AWS_REGION and AWS_DEFAULT_REGION are unset", "STATE_MACHINE_ACCOUNT is unset", "STATE_MACHINE_PREFIX is unset"}},
		{name: "bad account", env: []string{"AWS_REGION=eu-west-1", "STATE_MACHINE_ACCOUNT=12345", "STATE_MACHINE_PREFIX=S"}, wantErr: []string{`STATE_MACHINE_ACCOUNT="12345": want a 12-digit account ID`}},
		{name: "bad prefix", env: []string{"AWS_REGION=eu-west-1", "STATE_MACHINE_ACCOUNT=123456789012", "STATE_MACHINE_PREFIX=a:b"}, wantErr: []string{`STATE_MACHINE_PREFIX="a:b"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := awsenv.StateMachinesFromEnv(tc.env)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, got %+v", s)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.ARN("triage"); got != tc.wantARN {
				t.Errorf("ARN = %q, want %q", got, tc.wantARN)
			}
			if p, ok := s.Pipeline(tc.wantARN); !ok || p != "triage" {
				t.Errorf("Pipeline(%q) = %q, %v, want triage", tc.wantARN, p, ok)
			}
		})
	}
}

func TestPipelineOfARN(t *testing.T) {
	s := awsenv.StateMachines{Partition: "aws", Region: "eu-west-1", Account: "123456789012", Prefix: "Stepline"}
	long := strings.Repeat("p", 90)
	tests := []struct {
		name, arn, want string
		ok              bool
	}{
		{"ours", s.ARN("order-intake"), "order-intake", true},
		{"another deployment", "arn:aws:states:eu-west-1:123456789012:stateMachine:Other-order-intake", "", false},
		{"another account", "arn:aws:states:eu-west-1:210987654321:stateMachine:Stepline-order-intake", "", false},
		{"the prefix alone", "arn:aws:states:eu-west-1:123456789012:stateMachine:Stepline-", "", false},
		{"a cut name", s.ARN(long), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := s.Pipeline(tc.arn)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Pipeline(%q) = %q, %v, want %q, %v", tc.arn, got, ok, tc.want, tc.ok)
			}
		})
	}
}
