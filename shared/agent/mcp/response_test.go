package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
)

type sizedIn struct {
	Bytes int `json:"bytes"`
}

// newJSONServer serves, over streamable HTTP answering with JSON bodies
// (not event streams), a tool "sized" that answers the number of bytes
// asked for, and "echo".
func newJSONServer(t *testing.T, extra ...*sdk.Tool) *httptest.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "json", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "sized"}, func(_ context.Context, _ *sdk.CallToolRequest, in sizedIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", in.Bytes)}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	for _, tool := range extra {
		srv.AddTool(tool, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	}
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: true}))
	t.Cleanup(ts.Close)
	return ts
}

// TestResponseBounded: a streamable HTTP server's JSON answer is read up
// to MaxResponseBytes; a larger one is a tool error the model is told of
// (the step goes on, and the next call connects anew), not a whole body
// held in memory.
func TestResponseBounded(t *testing.T) {
	const limit = 64 << 10
	ts := newJSONServer(t)
	cases := []struct {
		name  string
		bytes int
		cut   bool
	}{
		{"an answer within the bound is read", limit - 1024, false},
		{"an answer over the bound is a tool error", limit + 1024, true},
		{"a 20 MB answer is a tool error", 20 << 20, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tools := &Client{MaxResponseBytes: limit}
			defer tools.Close()
			a := testAgent(ts.URL)
			a.Profile.TraceToolResultMaxChars = 100
			m := &scriptModel{turns: []func(agent.ModelRequest) agent.ModelReply{
				call("tools__sized", `{"bytes": `+itoa(tc.bytes)+`}`), call("tools__echo", `{"text": "after"}`), answer(goodAnswer),
			}}
			c, err := run(t, newLoop(a, m, tools), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var results []agent.Event
			for _, ev := range c.Trace {
				if ev.Type == agent.EventToolResult {
					results = append(results, ev)
				}
			}
			if len(results) != 2 {
				t.Fatalf("trace: %+v", c.Trace)
			}
			r := results[0]
			want := `tool "sized" answered more than 65536 bytes, more than is read: ask it for less`
			switch {
			case tc.cut && (!r.IsError || r.Content != want):
				t.Errorf("result %+v, want the error %q", r, want)
			case !tc.cut && (r.IsError || r.Chars != tc.bytes):
				t.Errorf("result %+v, want %d characters", r, tc.bytes)
			}
			if results[1].IsError || results[1].Content != "echo: after" {
				t.Errorf("the next call: %+v", results[1])
			}
		})
	}
}

// TestToolListResponseBounded: a tool list over the bound is a clear
// *fault.ExecutorUnavailable.
func TestToolListResponseBounded(t *testing.T) {
	ts := newJSONServer(t, &sdk.Tool{Name: "wordy", Description: strings.Repeat("w", 128<<10), InputSchema: json.RawMessage(`{"type":"object"}`)})
	tools := &Client{MaxResponseBytes: 64 << 10}
	defer tools.Close()
	_, err := tools.Tools(context.Background(), agent.Server{Name: "tools", URL: ts.URL})
	if fault.Name(err) != fault.NameExecutorUnavailable || !strings.Contains(err.Error(), "answered more than 65536 bytes") {
		t.Fatalf("err = %v (%s)", err, fault.Name(err))
	}
}

func TestLimitedBody(t *testing.T) {
	for _, tc := range []struct {
		size, limit int
		over        bool
	}{{9, 10, false}, {10, 10, false}, {11, 10, true}} {
		var over atomic.Bool
		b := newLimitedBody(io.NopCloser(strings.NewReader(strings.Repeat("a", tc.size))), int64(tc.limit), &over)
		got, err := io.ReadAll(b)
		if (err != nil) != tc.over || over.Load() != tc.over {
			t.Errorf("%d bytes, limit %d: err %v, over %v", tc.size, tc.limit, err, over.Load())
		}
		if !tc.over && len(got) != tc.size {
			t.Errorf("%d bytes, limit %d: read %d", tc.size, tc.limit, len(got))
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
