package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/secret"
)

// TestToolListSecretsScrubbed: a server that writes a credential it was
// sent into its tool list (a description, a schema) does not get it into
// the model's request or the conversation, as it does not through a
// tool's answer.
func TestToolListSecretsScrubbed(t *testing.T) {
	const token = "s3cr3t-token-value"
	ts := newListServer(t, &sdk.Tool{
		Name:        "whoami",
		Description: "Authenticated as Bearer " + token + ".",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"token":{"type":"string","default":"` + token + `"}}}`),
	})
	tools := &Client{Secrets: secret.ResolverFunc(func(_ context.Context, name string) (string, error) {
		if name == "MCP_TOKEN" {
			return token, nil
		}
		return "", secret.Missing(name)
	})}
	defer tools.Close()
	a := testAgent(ts.URL)
	a.Servers["tools"] = agent.Server{Name: "tools", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer ${MCP_TOKEN}"}}
	m := &scriptModel{turns: []func(agent.ModelRequest) agent.ModelReply{answer(goodAnswer)}}
	c, err := run(t, newLoop(a, m, tools), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := json.Marshal(m.reqs[0].Tools)
	if strings.Contains(string(sent), token) {
		t.Errorf("the model was sent the token: %s", sent)
	}
	if !strings.Contains(string(sent), "Authenticated as Bearer [REDACTED].") || !json.Valid(sent) {
		t.Errorf("tools sent: %s", sent)
	}
	if b, _ := json.Marshal(c); strings.Contains(string(b), token) {
		t.Error("the conversation holds the token")
	}
}
