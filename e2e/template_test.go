package e2e

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stepline/stepline/internal/testenv"
)

const smallTemplate = `{
  "Resources": {
    "Api": {"Type": "AWS::ApiGatewayV2::Api", "Properties": {"Name": "x"}},
    "Route": {"Type": "AWS::ApiGatewayV2::Route", "Properties": {"ApiId": {"Ref": "Api"}}, "DependsOn": ["Api"]},
    "Alarm": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}},
    "Key": {"Type": "AWS::SecretsManager::Secret", "Properties": {"GenerateSecretString": {"PasswordLength": 64, "ExcludePunctuation": true}}},
    "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": "t"}},
    "Fn": {"Type": "AWS::Lambda::Function", "DependsOn": ["Table", "Alarm"], "Properties": {
      "Environment": {"Variables": {"KEY": {"Ref": "Key"}, "API": {"Fn::GetAtt": ["Api", "ApiEndpoint"]}, "TABLE": {"Ref": "Table"}}}}},
    "Bare": {"Type": "AWS::Lambda::Function", "DependsOn": "Alarm", "Properties": {"Role": "r"}},
    "Perm": {"Type": "AWS::Lambda::Permission", "Properties": {
      "SourceArn": {"Fn::Join": ["", ["arn:aws:execute-api:", {"Ref": "Api"}, "/*"]]},
      "Other": {"Fn::Sub": "${Api}/x ${Api.ApiEndpoint} ${Key} ${Table}"},
      "List": {"Fn::Sub": ["${Api}-${Var}", {"Var": "v"}]}}},
    "Machine": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
      "DefinitionString": "{}", "DefinitionSubstitutions": {"StepFunctionArn": {"Fn::GetAtt": ["Fn", "Arn"]}}}}
  },
  "Outputs": {"ApiEndpoint": {"Value": {"Fn::GetAtt": ["Api", "ApiEndpoint"]}}, "TableName": {"Value": {"Ref": "Table"}}}
}`

func TestTransform(t *testing.T) {
	var tpl map[string]any
	if err := json.Unmarshal([]byte(smallTemplate), &tpl); err != nil {
		t.Fatal(err)
	}
	if gen := SecretsToCreate(tpl); len(gen) != 1 || gen["Key"]["PasswordLength"] != 64.0 {
		t.Fatalf("SecretsToCreate = %v", gen)
	}
	tr := Transform{APIEndpoint: "https://api.box.invalid", Secrets: map[string]string{"Key": "arn:key"}, Env: map[string]string{"HTTPS_PROXY": "http://proxy"}}
	rep, err := tr.Apply(tpl)
	if err != nil {
		t.Fatal(err)
	}
	rs := resources(tpl)
	props := func(id string) map[string]any { return rs[id]["Properties"].(map[string]any) }
	vars := func(id string) map[string]any {
		return props(id)["Environment"].(map[string]any)["Variables"].(map[string]any)
	}
	cases := []struct {
		name      string
		got, want any
	}{
		{"unsupported types removed", slices.Sorted(maps.Keys(rep.Removed)), []string{"Alarm", "Api", "Key", "Route"}},
		{"supported kept", slices.Sorted(maps.Keys(rs)), []string{"Bare", "Fn", "Machine", "Perm", "Table"}},
		{"DependsOn on a removed resource dropped", rs["Fn"]["DependsOn"], []any{"Table"}},
		{"DependsOn left empty deleted", rs["Bare"]["DependsOn"], nil},
		{"secret Ref is its ARN", vars("Fn")["KEY"], "arn:key"},
		{"API endpoint stubbed", vars("Fn")["API"], "https://api.box.invalid"},
		{"kept Ref untouched", vars("Fn")["TABLE"], map[string]any{"Ref": "Table"}},
		{"Env added", vars("Fn")["HTTPS_PROXY"], "http://proxy"},
		{"Env added to a function without environment", vars("Bare")["HTTPS_PROXY"], "http://proxy"},
		{"Ref inside Join stubbed", props("Perm")["SourceArn"].(map[string]any)["Fn::Join"].([]any)[1].([]any)[1], "box-removed-Api"},
		{"Sub string", props("Perm")["Other"], map[string]any{"Fn::Sub": "box-removed-Api/x https://api.box.invalid arn:key ${Table}"}},
		{"Sub list", props("Perm")["List"].(map[string]any)["Fn::Sub"].([]any)[0], "box-removed-Api-${Var}"},
		{"output stubbed", tpl["Outputs"].(map[string]any)["ApiEndpoint"].(map[string]any)["Value"], "https://api.box.invalid"},
		{"secrets reported", rep.Secrets, []string{"Key"}},
		{"functions reported", rep.Functions, []string{"Bare", "Fn"}},
		{"substitutions counted", rep.Substitute["Machine"], 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, _ := json.Marshal(c.got)
			w, _ := json.Marshal(c.want)
			if string(g) != string(w) {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
}

func TestTransformNeedsSecretsFirst(t *testing.T) {
	var tpl map[string]any
	json.Unmarshal([]byte(smallTemplate), &tpl)
	_, err := Transform{}.Apply(tpl)
	if err == nil || !strings.Contains(err.Error(), "secret Key was not created first") {
		t.Errorf("err = %v", err)
	}
}

// TestTransformSynthesizedTemplate applies the transform to make synth's
// template when there is one: nothing unsupported is left, and nothing
// refers to a resource that is gone.
func TestTransformSynthesizedTemplate(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "cdk.out", StackName+".template.json"))
	if err != nil {
		t.Skip("no synthesized template (make synth)")
	}
	var tpl map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	tr := Transform{APIEndpoint: APIBaseURL, Secrets: map[string]string{}}
	for id := range SecretsToCreate(tpl) {
		tr.Secrets[id] = "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + id
	}
	rep, err := tr.Apply(tpl)
	if err != nil {
		t.Fatal(err)
	}
	rs := resources(tpl)
	for id, r := range rs {
		if _, bad := Unsupported[r["Type"].(string)]; bad {
			t.Errorf("%s (%s) is left", id, r["Type"])
		}
	}
	out, _ := json.Marshal(tpl)
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`"Ref":"([A-Za-z0-9]+)"`), regexp.MustCompile(`"Fn::GetAtt":\["([A-Za-z0-9]+)"`), regexp.MustCompile(`\$\{([A-Za-z0-9]+)[.}]`)} {
		for _, m := range re.FindAllStringSubmatch(string(out), -1) {
			if _, gone := rep.Removed[m[1]]; gone {
				t.Errorf("a reference to the removed %s is left: %s", m[1], m[0])
			}
		}
	}
	if len(rep.Substitute) == 0 {
		t.Error("no state machines")
	}
	for id, n := range rep.Substitute {
		if n == 0 {
			t.Errorf("state machine %s lost its DefinitionSubstitutions", id)
		}
	}
}

func TestGenerateSecret(t *testing.T) {
	for _, c := range []struct {
		name string
		gen  map[string]any
		want int
	}{
		{"default", nil, 32},
		{"one", map[string]any{"PasswordLength": 1.0}, 1},
		{"sixty-four", map[string]any{"PasswordLength": 64.0}, 64},
		{"zero is the default", map[string]any{"PasswordLength": 0.0}, 32},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := GenerateSecret(c.gen)
			if len(s) != c.want || strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != "" {
				t.Errorf("GenerateSecret = %q", s)
			}
		})
	}
}

func TestTrimHash(t *testing.T) {
	for in, want := range map[string]string{"StepFunction1F935F84": "StepFunction", "12345678": "12345678", "A12345678": "A", "": ""} {
		if got := trimHash(in); got != want {
			t.Errorf("trimHash(%q) = %q, want %q", in, got, want)
		}
	}
}
