// Package mcp is the agent.Toolbox over real MCP servers, through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk): streamable HTTP
// everywhere, stdio (a command) only where Client.Stdio is set, which the
// step Lambda never sets. A session is opened on a server's first use and
// kept, with its tool list, for the life of the Client (a warm Lambda
// container reuses it); a session whose server stops answering is
// dropped, and the next use connects anew (a call is never repeated: it
// may have run). ${NAME} references in a server's url, headers, args and
// env resolve when its session opens and are scrubbed from everything the
// server answers. What a server sends is bounded: a stdio message and an
// SSE event by the SDK (16 MiB), a JSON response by Client.MaxResponseBytes
// (the same by default; a call answered with more is a tool error the
// model is told of). Close ends every session.
//
// Its tests run the agent loop against a real MCP server on loopback.
package mcp
