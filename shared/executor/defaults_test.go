package executor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/secret"
)

// TestGatewayDefaultsCheck: a gateway step without base_url is a warning
// at validate only when the environment has no OPENAI_BASE_URL either; a
// templated base_url needs an explicit api_key.
func TestGatewayDefaultsCheck(t *testing.T) {
	type issue struct {
		key     string
		warning bool
		msg     string
	}
	const env = "https://gateway.example.com/v1"
	cases := []struct {
		name string
		env  string
		cfg  map[string]any
		want []issue
	}{
		{"step and environment", env, map[string]any{"base_url": "http://h/v1", "model": "m"}, nil},
		{"step only", "", map[string]any{"base_url": "http://h/v1", "model": "m"}, nil},
		{"environment only", env, map[string]any{"model": "m"}, nil},
		{"neither", "", map[string]any{"model": "m"}, []issue{{"base_url", true, "not set, and OPENAI_BASE_URL is not set here"}}},
		{"environment not a URL", "gateway.example.com", map[string]any{"model": "m"}, []issue{{"base_url", true, "OPENAI_BASE_URL is not an absolute http or https URL"}}},
		{"step not a URL, environment fine", env, map[string]any{"base_url": "h", "model": "m"}, []issue{{"base_url", false, "want an absolute http or https URL"}}},
		{"empty step base_url", env, map[string]any{"base_url": "", "model": "m"}, []issue{{"base_url", false, "must not be empty"}}},
		{"templated base_url without api_key", env, map[string]any{"base_url": "{{ labels.endpoint }}", "model": "m"}, []issue{{"api_key", false, "required when base_url is a template"}}},
		{"templated base_url with api_key", "", map[string]any{"base_url": "{% if x %}http://a{% endif %}", "model": "m", "api_key": "${KEY}"}, nil},
		{"templated base_url with no key on purpose", "", map[string]any{"base_url": "{{ vars.url }}", "model": "m", "api_key": ""}, nil},
		{"secret base_url without api_key", "", map[string]any{"base_url": "${GATEWAY_URL}", "model": "m"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []issue
			for _, err := range (settings.Defaults{OpenAIBaseURL: c.env}).CheckConfig(Gateway, c.cfg) {
				var is *settings.ConfigIssue
				if !errors.As(err, &is) {
					t.Fatalf("%T is not a *ConfigIssue", err)
				}
				got = append(got, issue{is.Key, is.Warning, is.Msg})
			}
			if len(got) != len(c.want) {
				t.Fatalf("issues = %+v\nwant %+v", got, c.want)
			}
			for i := range got {
				if got[i].key != c.want[i].key || got[i].warning != c.want[i].warning || !strings.Contains(got[i].msg, c.want[i].msg) {
					t.Errorf("issue %d = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestDefaultsFromEnv(t *testing.T) {
	d := settings.DefaultsFromEnv(func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": " https://x/v1 ", "OPENAI_API_KEY": "sk"}[k]
	})
	if d != (settings.Defaults{OpenAIBaseURL: "https://x/v1"}) {
		t.Errorf("DefaultsFromEnv = %+v", d)
	}
}

// TestGatewayDefaultsCall: where a call goes and which key it carries, for
// each combination of the step's base_url and api_key, the registry's
// OPENAI_BASE_URL and the secret OPENAI_API_KEY.
func TestGatewayDefaultsCall(t *testing.T) {
	const openAIKey = "sk-openai-0123456789"
	withKey := secret.Env(func(k string) string {
		return map[string]string{"API_KEY": testKey, "OPENAI_API_KEY": openAIKey}[k]
	})
	withoutKey := testSecrets()
	cases := []struct {
		name      string
		stepURL   bool // the step names the step server
		envURL    bool // OPENAI_BASE_URL names the environment server
		apiKey    any  // the step's api_key; nil: absent
		secrets   secret.Resolver
		wantSrv   string // "step", "env", or "" for no call
		wantAuth  string
		wantError string
	}{
		{"step URL wins over the environment", true, true, "${API_KEY}", withKey, "step", "Bearer " + testKey, ""},
		{"step URL, no environment", true, false, "${API_KEY}", withKey, "step", "Bearer " + testKey, ""},
		{"environment URL", false, true, "${API_KEY}", withKey, "env", "Bearer " + testKey, ""},
		{"neither URL", false, false, "${API_KEY}", withKey, "", "", "gateway: executor_config.base_url: required: set it, or OPENAI_BASE_URL where the step runs"},
		{"default key", false, true, nil, withKey, "env", "Bearer " + openAIKey, ""},
		{"default key to the step URL", true, false, nil, withKey, "step", "Bearer " + openAIKey, ""},
		{"default key not set", true, true, nil, withoutKey, "step", "", ""},
		{"empty key sends none", false, true, "", withKey, "env", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stepSrv := newServer(t, answer(200, okChat))
			envSrv := newServer(t, answer(200, okChat))
			d := settings.Defaults{}
			if c.envURL {
				d.OpenAIBaseURL = envSrv.URL + "/v1"
			}
			cfg := map[string]any{"model": "gpt-4o"}
			if c.stepURL {
				cfg["base_url"] = stepSrv.URL + "/v1"
			}
			if c.apiKey != nil {
				cfg["api_key"] = c.apiKey
			}
			reg, _ := newRegistry(t, Deps{Secrets: c.secrets, Defaults: d})
			p := provider(t, reg, Call{Executor: Gateway, Step: "s", Config: cfg})
			_, err := p.Complete(context.Background(), request())
			if c.wantError != "" {
				assertFault(t, err, "ConfigError", c.wantError)
				if n := len(stepSrv.seen()) + len(envSrv.seen()); n != 0 {
					t.Errorf("%d requests sent", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			srv, other := stepSrv, envSrv
			if c.wantSrv == "env" {
				srv, other = envSrv, stepSrv
			}
			if len(other.seen()) != 0 || len(srv.seen()) != 1 {
				t.Fatalf("requests: %s server %d, other %d", c.wantSrv, len(srv.seen()), len(other.seen()))
			}
			got := srv.last(t)
			if got.path != "/v1/chat/completions" {
				t.Errorf("path = %s", got.path)
			}
			if a := got.header.Get("Authorization"); a != c.wantAuth {
				t.Errorf("Authorization = %q, want %q", a, c.wantAuth)
			}
		})
	}
}

// TestGatewayDefaultKeyUnreachable: a secret store that cannot be reached
// fails the call with its retryable error instead of sending no key.
func TestGatewayDefaultKeyUnreachable(t *testing.T) {
	srv := newServer(t, answer(200, okChat))
	down := secret.ResolverFunc(func(_ context.Context, name string) (string, error) {
		return "", fault.Errorf[fault.ExecutorUnavailable]("secret %q: store unreachable", name)
	})
	reg, _ := newRegistry(t, Deps{Secrets: down})
	p := provider(t, reg, Call{Executor: Gateway, Config: map[string]any{"base_url": srv.URL, "model": "m"}})
	_, err := p.Complete(context.Background(), request())
	assertFault(t, err, "ExecutorUnavailable", "default api_key", "OPENAI_API_KEY")
	if len(srv.seen()) != 0 {
		t.Error("a request went out without its key")
	}
}

// TestGatewayDefaultKeyRedacted: the default key is a resolved secret like
// any other: a server that echoes it hands back [REDACTED].
func TestGatewayDefaultKeyRedacted(t *testing.T) {
	const key = "sk-openai-echoed-0123456789"
	srv := newServer(t, answer(200, `{"model":"`+key+`","choices":[{"message":{"content":"{\"confidence\":0.9,\"summary\":\"`+key+`\",\"next_step_context\":\"\"}"},"finish_reason":"stop"}]}`))
	reg, _ := newRegistry(t, Deps{Secrets: secret.Env(func(k string) string {
		return map[string]string{"OPENAI_API_KEY": key}[k]
	}), Defaults: settings.Defaults{OpenAIBaseURL: srv.URL}})
	p := provider(t, reg, Call{Executor: Gateway, Config: map[string]any{"model": "m"}})
	c, err := p.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Content, key) || strings.Contains(c.Model, key) || strings.Contains(string(c.Raw), key) {
		t.Errorf("the default key came back: %+v", c)
	}
	if !strings.Contains(c.Content, "[REDACTED]") {
		t.Errorf("content = %s", c.Content)
	}
}

// TestGatewayWithoutBaseURLBuilds: a step without base_url gets its
// Provider (and, with --responses, its scripted replies) without a base
// URL anywhere: only a real call needs one.
func TestGatewayWithoutBaseURLBuilds(t *testing.T) {
	reg, _ := newRegistry(t, Deps{})
	if _, err := reg.Provider(Call{Executor: Gateway, Config: map[string]any{"model": "m"}}); err != nil {
		t.Fatalf("Provider: %v", err)
	}
}
