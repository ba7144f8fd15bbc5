package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServer returns the streamable HTTP handler of scenario id's fake MCP
// server named server, made on first use: an official go-sdk server
// listing the tools s scripts for it (see Fake).
func (f *Fake) mcpServer(id, server string, s *Script) http.Handler {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := id + "/" + server
	if h, ok := f.mcp[k]; ok {
		return h
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "stepline-box-" + server, Version: "1"}, &sdk.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	for _, qualified := range s.Tools() {
		name, ok := strings.CutPrefix(qualified, server+".")
		if !ok {
			continue
		}
		srv.AddTool(&sdk.Tool{Name: name, Description: ToolDescription(qualified), InputSchema: json.RawMessage(`{"type":"object"}`)}, toolAnswer(s, qualified))
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)})
	f.mcp[k] = h
	return h
}

// toolAnswer answers each call of tool ("server.tool") with its next
// scripted answer: the text, or a tool error for {error: message} and
// when none is left. Every call is recorded (kind "tool").
func toolAnswer(s *Script, tool string) sdk.ToolHandler {
	return func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args []byte
		if req != nil && req.Params != nil {
			args = req.Params.Arguments
		}
		call := Call{Key: tool, Kind: "tool", Body: string(args), Status: http.StatusOK}
		defer func() { s.record(call) }()
		rep, ok := s.nextTool(tool)
		switch {
		case !ok:
			call.Status = http.StatusBadRequest
			return toolResult("the box has no scripted answer left for tool "+tool, true), nil
		case rep.IsError:
			return toolResult(rep.Error, true), nil
		}
		return toolResult(rep.Text, false), nil
	}
}

func toolResult(text string, isError bool) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: isError}
}
