package infra

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/secret"
)

// More environment variables.
const (
	// EnvHumanApproval is the project's approval routes as JSON
	// (approval.Routes, secrets as ${NAME}): approval and callback.
	EnvHumanApproval = "HUMAN_APPROVAL"
)

// Chat routes of the HTTP API.
const (
	PathTelegram = "/telegram/{bot}"
	PathSlack    = "/slack/{app}"
)

// chatConfig is what the stack deploys of the project's human_approval.
type chatConfig struct {
	routes approval.Routes
	// send are the secrets the approval function resolves to send
	// requests (bot tokens, a Teams webhook URL); receive those the
	// callback function resolves to take the answers (bot tokens, webhook
	// and signing secrets).
	send, receive map[string]secret.Ref
}

// newChatConfig checks routes for AWS and maps their secrets: every
// Telegram channel human_approval declares needs a webhook_secret (a
// Lambda cannot long-poll), and every ${NAME} must be mapped in mapping.
// declared are the routes human_approval declares; routes may add
// notifications.telegram's chat as the default, which, without a webhook,
// gets requests with their link and no buttons (approval.Router's
// WebhooksOnly).
func newChatConfig(routes, declared approval.Routes, mapping map[string]string) (chatConfig, error) {
	c := chatConfig{routes: routes, send: map[string]secret.Ref{}, receive: map[string]secret.Ref{}}
	if routes.Empty() {
		return c, nil
	}
	var errs []error
	bots, err := routes.TelegramBots()
	if err != nil {
		errs = append(errs, err)
	}
	add := func(dst map[string]secret.Ref, value, where string) {
		for _, n := range secret.Names(value) {
			raw, ok := mapping[n]
			if !ok {
				errs = append(errs, fmt.Errorf("secret %q (used by %s) has no mapping: add it to the stepline:secrets context, e.g. %q: \"secretsmanager:stepline/%s\"", n, where, n, n))
				continue
			}
			ref, err := secret.ParseRef(raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("secret %q (used by %s): %w", n, where, err))
				continue
			}
			dst[n] = ref
		}
	}
	declaredBots, _ := declared.TelegramBots()
	for _, b := range bots {
		where := "human_approval telegram bot " + b.Name
		if b.WebhookSecret == "" && slices.ContainsFunc(declaredBots, func(d approval.BotConfig) bool { return d.BotToken == b.BotToken }) {
			errs = append(errs, fmt.Errorf("%s: on AWS the HTTP API takes the bot's updates at POST /telegram/%s: give its channels a webhook_secret (a ${NAME} secret), and set the bot's webhook with it", where, b.Name))
		}
		add(c.send, b.BotToken, where)
		if b.WebhookSecret != "" {
			add(c.receive, b.BotToken, where)
			add(c.receive, b.WebhookSecret, where)
		}
	}
	for _, a := range routes.SlackApps() {
		add(c.receive, a.SigningSecret, "human_approval slack app "+a.Name)
	}
	each := func(ch approval.Channel) {
		switch {
		case ch.Slack != nil:
			add(c.send, ch.Slack.BotToken, "human_approval slack")
		case ch.MSTeams != nil:
			add(c.send, ch.MSTeams.WebhookURL, "human_approval msteams")
		}
	}
	if routes.Default != nil {
		each(*routes.Default)
	}
	for _, ch := range routes.Teams {
		each(ch)
	}
	return c, errors.Join(errs...)
}

// routesJSON is the routes as the functions read them.
func (c chatConfig) routesJSON() string {
	b, _ := json.Marshal(c.routes)
	return string(b)
}

// merge returns a and b together.
func merge(a, b map[string]secret.Ref) map[string]secret.Ref {
	out := make(map[string]secret.Ref, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// addChat gives the approval and callback functions the routes and their
// secrets (each only the secrets it resolves).
func (b *builder) addChat() {
	c := b.cfg.chat
	if c.routes.Empty() {
		return
	}
	for _, name := range []string{FunctionApproval, FunctionCallback} {
		b.functions[name].AddEnvironment(jsii.String(EnvHumanApproval), jsii.String(c.routesJSON()), nil)
	}
	callback := b.functions[FunctionCallback]
	callback.AddEnvironment(jsii.String(EnvAPIBaseURL), b.api.ApiEndpoint(), nil)
	if len(c.receive) > 0 {
		callback.AddEnvironment(jsii.String(EnvSecretRefs), jsii.String(plan.RefsEnv(c.receive)), nil)
		b.grantSecretRefs(b.roles[FunctionCallback], c.receive)
	}
}

// addChatRoutes adds POST /telegram/{bot} when the routes have a Telegram
// bot and POST /slack/{app} when they have a Slack app, both to the
// callback function, which authenticates them (the secret token in
// constant time; the v0 signature within five minutes).
func (b *builder) addChatRoutes(callback awsapigatewayv2integrations.HttpLambdaIntegration) {
	r := b.cfg.chat.routes
	bots, _ := r.TelegramBots()
	add := func(path, reason string) {
		routes := b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST},
			Integration: callback,
		})
		for _, rt := range *routes {
			suppress(rt, nagRule{id: "AwsSolutions-APIG4", reason: reason})
		}
	}
	if slices.ContainsFunc(bots, func(b approval.BotConfig) bool { return b.WebhookSecret != "" }) {
		add(PathTelegram, "Telegram cannot sign requests with SigV4: the callback function requires the X-Telegram-Bot-Api-Secret-Token the bot's webhook was set with (a Secrets Manager secret), compared in constant time, and decides only presses whose HMAC-signed reference checks for the chat.")
	}
	if len(r.SlackApps()) > 0 {
		add(PathSlack, "Slack cannot sign requests with SigV4: the callback function verifies Slack's v0 HMAC-SHA256 signature with the app's signing secret (a Secrets Manager secret) in constant time and refuses timestamps over five minutes old.")
	}
}
