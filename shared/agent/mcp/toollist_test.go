package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
)

// schemaOf returns an object schema that the client encodes in exactly n
// bytes (keys sorted, as the SDK's client writes them again).
func schemaOf(t *testing.T, n int) json.RawMessage {
	t.Helper()
	const frame = `{"description":"","type":"object"}`
	if n < len(frame) {
		t.Fatalf("a schema has at least %d bytes", len(frame))
	}
	return json.RawMessage(`{"description":"` + strings.Repeat("s", n-len(frame)) + `","type":"object"}`)
}

// newListServer serves tools with the given names, descriptions and
// input schemas over streamable HTTP.
func newListServer(t *testing.T, tools ...*sdk.Tool) *httptest.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "list", Version: "1"}, nil)
	for _, tool := range tools {
		srv.AddTool(tool, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	}
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts
}

// TestToolListBounded: what a server's tool list puts in every model
// request and in the conversation is bounded: descriptions are cut, a
// granted tool whose schema or name is over its bound, or granted tools
// whose specs are over the step's bound, stop the step with a clear
// error naming them, before the model is called.
func TestToolListBounded(t *testing.T) {
	object := json.RawMessage(`{"type":"object"}`)
	// many offers tools t000, t001, … whose specs, as the model is sent
	// them, fill the step's bound exactly, the last one extra bytes more.
	many := func(extra int) []*sdk.Tool {
		n := agent.MaxToolSpecsBytes / agent.MaxToolSchemaBytes
		frame := len(`{"name":"tools__t000","input_schema":}`)
		var out []*sdk.Tool
		for i := range n {
			size := agent.MaxToolSpecsBytes/n - frame
			if i == n-1 {
				size += extra
			}
			out = append(out, &sdk.Tool{Name: fmt.Sprintf("t%03d", i), InputSchema: schemaOf(t, size)})
		}
		return out
	}
	cases := []struct {
		name    string
		tools   []*sdk.Tool
		grant   []string
		wantErr string // "" when the step runs
	}{
		{"a description at the bound is kept", []*sdk.Tool{{Name: "d", Description: strings.Repeat("d", agent.MaxToolDescriptionBytes), InputSchema: object}}, nil, ""},
		{"a description over the bound is cut", []*sdk.Tool{{Name: "d", Description: strings.Repeat("d", 1<<20), InputSchema: object}}, nil, ""},
		{"a schema at the bound is offered", []*sdk.Tool{{Name: "s", InputSchema: schemaOf(t, agent.MaxToolSchemaBytes)}}, nil, ""},
		{"a schema over the bound stops the step", []*sdk.Tool{{Name: "s", InputSchema: schemaOf(t, agent.MaxToolSchemaBytes+1)}}, nil,
			`agent "sre": MCP server "tools" tool "s": its input schema is 32769 bytes, over the 32768 a tool's may be; leave it out of the agent's tools with globs`},
		{"a huge schema not granted is never offered", []*sdk.Tool{{Name: "s", InputSchema: schemaOf(t, 5<<20)}, {Name: "ok", InputSchema: object}}, []string{"ok"}, ""},
		{"a name at the bound is offered", []*sdk.Tool{{Name: strings.Repeat("n", agent.MaxToolNameBytes), InputSchema: object}}, nil, ""},
		{"a name over the bound stops the step", []*sdk.Tool{{Name: strings.Repeat("n", agent.MaxToolNameBytes+1), InputSchema: object}}, nil,
			`agent "sre": MCP server "tools" offers a tool whose name is 129 bytes, over the 128 a tool's may be ("nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn…"); leave it out of the agent's tools with globs`},
		{"specs at the step's bound are offered", many(0), nil, ""},
		{"specs over the step's bound stop the step", many(1), nil,
			`agent "sre": the granted tools' names, descriptions and schemas are over 524288 bytes (at tools.t015, 524289 bytes); narrow the agent's tools with globs`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newListServer(t, tc.tools...)
			tools := &Client{}
			defer tools.Close()
			a := testAgent(ts.URL)
			if tc.grant != nil {
				a.Profile.Tools = []agent.ToolGrant{{Server: "tools", Tools: tc.grant}}
			}
			m := &scriptModel{turns: []func(agent.ModelRequest) agent.ModelReply{answer(goodAnswer)}}
			c, err := run(t, newLoop(a, m, tools), time.Minute)
			if tc.wantErr != "" {
				var ce *fault.ConfigError
				if err == nil || err.Error() != tc.wantErr || !errors.As(err, &ce) {
					t.Fatalf("err = %v (%s)\nwant %s", err, fault.Name(err), tc.wantErr)
				}
				if len(m.reqs) != 0 {
					t.Error("the model was called")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			specs := 0
			for _, s := range m.reqs[0].Tools {
				if len(s.Description) > agent.MaxToolDescriptionBytes || len(s.InputSchema) > agent.MaxToolSchemaBytes {
					t.Errorf("tool %s offered with a description of %d bytes, a schema of %d", s.Name, len(s.Description), len(s.InputSchema))
				}
				b, _ := json.Marshal(s)
				specs += len(b)
			}
			if specs > agent.MaxToolSpecsBytes {
				t.Errorf("tool specs of %d bytes offered", specs)
			}
			if s := c.Size(); s > agent.MaxToolSpecsBytes+64<<10 {
				t.Errorf("conversation of %d bytes", s)
			}
		})
	}
}
