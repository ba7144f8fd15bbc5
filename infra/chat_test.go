package infra_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/stepline/stepline/infra"
	"github.com/stepline/stepline/shared/approval"
)

// chatProject routes approvals: Telegram by default (webhook), Slack for
// payments, Teams for search.
var chatProject = map[string]string{
	"stepline.yaml": `human_approval:
  default:
    channel: telegram
    telegram: {bot_token: "${OPS_BOT_TOKEN}", chat_id: -1001234567890, webhook_secret: "${OPS_BOT_WEBHOOK}"}
  teams:
    payments:
      channel: slack
      slack: {bot_token: "${PAY_SLACK_BOT}", signing_secret: "${PAY_SLACK_SIGNING}", channel_id: C0PAYMENTS1}
    search:
      channel: msteams
      msteams: {webhook_url: "${SEARCH_TEAMS_HOOK}"}
`,
}

var chatSecrets = map[string]string{
	"HOOK_TOKEN":        "ssm:/hook",
	"OPS_BOT_TOKEN":     "secretsmanager:stepline/ops-bot-token",
	"OPS_BOT_WEBHOOK":   "secretsmanager:stepline/ops-bot-webhook",
	"PAY_SLACK_BOT":     "secretsmanager:stepline/pay-slack-bot",
	"PAY_SLACK_SIGNING": "secretsmanager:stepline/pay-slack-signing",
	"SEARCH_TEAMS_HOOK": "ssm:/stepline/search-teams-hook",
}

var chatStack = &lazy{props: func(t *testing.T) infra.Props {
	return infra.Props{
		PipelineDir: writeFiles(t, map[string]string{"child.yaml": fixturePipelines["child.yaml"], "parent.yaml": fixturePipelines["parent.yaml"]}),
		Config:      filepath.Join(writeTree(t, chatProject), "stepline.yaml"),
		Secrets:     chatSecrets,
	}
}}

// TestChatRoutes: with human_approval, the HTTP API gets the Telegram
// webhook and the Slack request URL on the callback function, the
// callback function the routes and only the secrets it takes answers
// with, the approval function those it sends requests with.
func TestChatRoutes(t *testing.T) {
	s := chatStack.get(t)
	callbackID, callback := s.one(t, "AWS::Lambda::Function", "CallbackFunction")
	integrations := map[string]string{}
	for id, in := range s.of("AWS::ApiGatewayV2::Integration") {
		integrations[id] = text(in.Properties["IntegrationUri"])
	}
	found := map[string]bool{}
	for _, r := range s.of("AWS::ApiGatewayV2::Route") {
		key := str(r.Properties["RouteKey"])
		if key != "POST "+infra.PathTelegram && key != "POST "+infra.PathSlack {
			continue
		}
		found[key] = true
		integration := strings.TrimSuffix(strings.TrimPrefix(text(r.Properties["Target"]), "integrations/${"), "}")
		if r.Properties["AuthorizationType"] != "NONE" || integrations[integration] != "${"+callbackID+".Arn}" {
			t.Errorf("%s: authorization %v, integrates %s", key, r.Properties["AuthorizationType"], integrations[integration])
		}
	}
	if !found["POST /telegram/{bot}"] || !found["POST /slack/{app}"] {
		t.Errorf("chat routes %v", found)
	}
	vars := func(fn resource) map[string]any {
		return fn.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	}
	cv := vars(callback)
	var routes approval.Routes
	if err := json.Unmarshal([]byte(str(cv[infra.EnvHumanApproval])), &routes); err != nil || routes.Default == nil || routes.Default.Telegram.WebhookSecret != "${OPS_BOT_WEBHOOK}" || len(routes.Teams) != 2 {
		t.Errorf("callback %s = %v (%v)", infra.EnvHumanApproval, cv[infra.EnvHumanApproval], err)
	}
	if got, want := str(cv[infra.EnvSecretRefs]), "OPS_BOT_TOKEN=secretsmanager:stepline/ops-bot-token,OPS_BOT_WEBHOOK=secretsmanager:stepline/ops-bot-webhook,PAY_SLACK_SIGNING=secretsmanager:stepline/pay-slack-signing"; got != want {
		t.Errorf("callback %s = %q, want %q", infra.EnvSecretRefs, got, want)
	}
	if cv[infra.EnvAPIBaseURL] == nil {
		t.Error("callback has no API_BASE_URL")
	}
	_, approvalFn := s.one(t, "AWS::Lambda::Function", "ApprovalFunction")
	av := vars(approvalFn)
	if got, want := str(av[infra.EnvSecretRefs]), "HOOK_TOKEN=ssm:/hook,OPS_BOT_TOKEN=secretsmanager:stepline/ops-bot-token,PAY_SLACK_BOT=secretsmanager:stepline/pay-slack-bot,SEARCH_TEAMS_HOOK=ssm:/stepline/search-teams-hook"; got != want {
		t.Errorf("approval %s = %q, want %q", infra.EnvSecretRefs, got, want)
	}
	if av[infra.EnvHumanApproval] == nil {
		t.Error("approval has no HUMAN_APPROVAL")
	}
	// Least privilege: each role reads exactly its secrets.
	grants := func(role string) []string {
		var out []string
		for _, st := range s.statements(t, role) {
			if st.Sid == "PipelineSecrets" || st.Sid == "PipelineParameters" {
				out = append(out, texts(st.Resources)...)
			}
		}
		return out
	}
	arn := func(name string) string {
		return "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:stepline/" + name + "-??????"
	}
	if got, want := grants("CallbackRole"), []string{arn("ops-bot-token"), arn("ops-bot-webhook"), arn("pay-slack-signing")}; !reflect.DeepEqual(got, want) {
		t.Errorf("callback reads %v, want %v", got, want)
	}
	approvalGrants := strings.Join(grants("ApprovalRole"), " ")
	for _, want := range []string{arn("ops-bot-token"), arn("pay-slack-bot"), "parameter/stepline/search-teams-hook"} {
		if !strings.Contains(approvalGrants, want) {
			t.Errorf("approval cannot read %s: %s", want, approvalGrants)
		}
	}
	for _, never := range []string{"ops-bot-webhook", "pay-slack-signing"} {
		if strings.Contains(approvalGrants, never) {
			t.Errorf("approval reads %s", never)
		}
	}
	for _, role := range []string{"StepRole", "RecorderRole", "IngestRole"} {
		for _, g := range grants(role) {
			if strings.Contains(g, "bot") || strings.Contains(g, "slack") {
				t.Errorf("%s reads %s", role, g)
			}
		}
	}
}

func TestChatStackErrors(t *testing.T) {
	good := writeFiles(t, map[string]string{"a.yaml": fixturePipelines["child.yaml"]})
	tests := []struct {
		name, project string
		want          []string
	}{
		{"telegram without webhook secret", "human_approval:\n  default: {channel: telegram, telegram: {bot_token: '${BOT}', chat_id: 1}}\n",
			[]string{"human_approval telegram bot BOT: on AWS the HTTP API takes the bot's updates at POST /telegram/BOT: give its channels a webhook_secret"}},
		{"the default from notifications.telegram, unmapped", "notifications:\n  telegram: {bot_token: '${NB}', chat_id: 1}\n",
			[]string{`secret "NB" (used by human_approval telegram bot NB) has no mapping`}},
		{"unmapped chat secret", "human_approval:\n  default: {channel: slack, slack: {bot_token: '${SB}', signing_secret: '${SS}', channel_id: C0AB}}\n",
			[]string{`secret "SB" (used by human_approval slack) has no mapping`, `secret "SS" (used by human_approval slack app SS) has no mapping`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := awscdk.NewApp(nil)
			_, err := infra.NewStack(app, "Stepline", &infra.Props{PipelineDir: good, AssetDir: assetDir,
				Config: filepath.Join(writeTree(t, map[string]string{"stepline.yaml": tt.project}), "stepline.yaml"), Secrets: map[string]string{"HOOK_TOKEN": "ssm:/h"}})
			if err == nil {
				t.Fatal("NewStack succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestChatFromNotifications: a project with notifications.telegram only
// deploys: its chat is the approvals' default, sent with links only (no
// webhook, so no route and nothing for the callback function to read).
func TestChatFromNotifications(t *testing.T) {
	s, err := synth(t, infra.Props{
		PipelineDir: writeFiles(t, map[string]string{"parent.yaml": fixturePipelines["parent.yaml"], "child.yaml": fixturePipelines["child.yaml"]}),
		Config:      filepath.Join(writeTree(t, map[string]string{"stepline.yaml": "notifications:\n  telegram: {bot_token: '${NB}', chat_id: 1}\n"}), "stepline.yaml"),
		Secrets:     map[string]string{"HOOK_TOKEN": "ssm:/hook", "NB": "secretsmanager:stepline/nb"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.of("AWS::ApiGatewayV2::Route") {
		if k := str(r.Properties["RouteKey"]); strings.Contains(k, "telegram") || strings.Contains(k, "slack") {
			t.Errorf("route %s", k)
		}
	}
	_, cb := s.one(t, "AWS::Lambda::Function", "CallbackFunction")
	if v := cb.Properties["Environment"].(map[string]any)["Variables"].(map[string]any); v[infra.EnvSecretRefs] != nil {
		t.Errorf("callback SECRET_REFS = %v", v[infra.EnvSecretRefs])
	}
	_, ap := s.one(t, "AWS::Lambda::Function", "ApprovalFunction")
	if v := ap.Properties["Environment"].(map[string]any)["Variables"].(map[string]any); !strings.Contains(str(v[infra.EnvSecretRefs]), "NB=secretsmanager:stepline/nb") {
		t.Errorf("approval SECRET_REFS = %v", v[infra.EnvSecretRefs])
	}
}
