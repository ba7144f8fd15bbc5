package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/secret"
)

// DefaultConnectTimeout bounds connecting to an MCP server and listing
// its tools, within the loop's deadline.
const DefaultConnectTimeout = 15 * time.Second

// maxListPages bounds the pages of a server's tool list read.
const maxListPages = 20

// DefaultMaxResponseBytes bounds one HTTP response a streamable HTTP
// server answers with JSON, as the SDK bounds a stdio message and an SSE
// event.
const DefaultMaxResponseBytes = sdk.DefaultMaxEventSize

// Client is the agent.Toolbox over real MCP servers, through the official Go SDK:
// streamable HTTP everywhere, stdio (a command it starts) where Stdio is
// set. A session is opened on a server's first use and kept for the life
// of the Client, shared by every step and run of the process (a warm
// Lambda container reuses it); its tool list is cached with it. A
// session whose server stops answering is dropped, so the next use (the
// step's retry) connects again. Close ends every session; main calls it
// at shutdown.
//
// ${NAME} references in a server's url, headers and env resolve through
// Secrets when its session opens; those values are scrubbed from
// everything the server answers and from every error. Safe for
// concurrent use.
type Client struct {
	// HTTP sends the streamable HTTP requests. Nil: a client without an
	// overall timeout (calls have their own).
	HTTP *http.Client
	// Secrets resolves ${NAME}. Nil: every reference is a missing secret.
	Secrets secret.Resolver
	// Stdio allows servers that run as a command. Off on AWS: such a
	// server is a *fault.ConfigError.
	Stdio bool
	// Environ is the environment a stdio server starts with (main passes
	// os.Environ()), before the server's own env.
	Environ []string
	// ConnectTimeout bounds connecting and listing. Zero:
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxResponseBytes bounds a JSON response of a streamable HTTP
	// server: a call answered with more is a tool error (the session is
	// dropped), a tool list a *fault.ExecutorUnavailable. Zero:
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Logger receives one debug line per connection and call. Nil:
	// nothing is logged.
	Logger *slog.Logger

	mu       sync.Mutex
	sessions map[string]*mcpSession
	closed   bool
}

var _ agent.Toolbox = (*Client)(nil)

// mcpSession is one server's session; mu serialises connecting. over is
// set when a response of the session's HTTP transport was over
// MaxResponseBytes (the SDK then fails the session).
type mcpSession struct {
	mu    sync.Mutex
	cs    *sdk.ClientSession
	red   *secret.Redactor
	tools []agent.Tool
	over  *atomic.Bool
}

// errClosed is the error of a use after Close.
var errClosed = errors.New("MCP sessions are closed")

func (m *Client) log() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// key identifies a server's session by its whole declaration, so a
// changed declaration opens a new one.
func key(s agent.Server) string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return s.Name + "#" + hex.EncodeToString(sum[:8])
}

func (m *Client) entry(s agent.Server) (*mcpSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	if m.sessions == nil {
		m.sessions = map[string]*mcpSession{}
	}
	k := key(s)
	e := m.sessions[k]
	if e == nil {
		e = &mcpSession{}
		m.sessions[k] = e
	}
	return e, nil
}

// session returns e's open session, connecting when it has none; fresh
// reports that it was opened by this call.
func (m *Client) session(ctx context.Context, e *mcpSession, s agent.Server) (cs *sdk.ClientSession, fresh bool, err error) {
	if e.cs != nil {
		return e.cs, false, nil
	}
	if s.IsStdio() && !m.Stdio {
		return nil, false, fault.Errorf[fault.ConfigError]("MCP server %q runs a command (stdio), which only local runs start; give it a url", s.Name)
	}
	if !s.IsStdio() && s.URL == "" {
		return nil, false, fault.Errorf[fault.ConfigError]("MCP server %q has neither a url nor a command", s.Name)
	}
	red := secret.NewRedactor(m.Secrets)
	var t sdk.Transport
	var over *atomic.Bool
	if s.IsStdio() {
		args, err := expandList(ctx, red, s.Args)
		if err != nil {
			return nil, false, fault.Errorf[fault.ConfigError]("MCP server %q: args: %v", s.Name, red.Error(err))
		}
		env, err := expandMap(ctx, red, s.Env)
		if err != nil {
			return nil, false, fault.Errorf[fault.ConfigError]("MCP server %q: env: %v", s.Name, red.Error(err))
		}
		cmd := exec.Command(s.Command, args...)
		cmd.Env = slices.Clone(m.Environ)
		for _, k := range slices.Sorted(maps.Keys(env)) {
			cmd.Env = append(cmd.Env, k+"="+env[k])
		}
		cmd.Stderr = io.Discard
		t = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	} else {
		url, err := secret.Expand(ctx, red, s.URL)
		if err != nil {
			return nil, false, fault.Errorf[fault.ConfigError]("MCP server %q: url: %v", s.Name, red.Error(err))
		}
		headers, err := expandMap(ctx, red, s.Headers)
		if err != nil {
			return nil, false, fault.Errorf[fault.ConfigError]("MCP server %q: headers: %v", s.Name, red.Error(err))
		}
		base := m.HTTP
		if base == nil {
			base = &http.Client{}
		}
		client := *base
		over = &atomic.Bool{}
		client.Transport = headerTransport{base: base.Transport, headers: headers, limit: m.maxResponse(), over: over}
		t = &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &client, MaxRetries: -1, DisableStandaloneSSE: true}
	}
	limit := m.ConnectTimeout
	if limit <= 0 {
		limit = DefaultConnectTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	client := sdk.NewClient(&sdk.Implementation{Name: "stepline", Version: "1"}, &sdk.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	cs, err = client.Connect(cctx, t, nil)
	m.log().DebugContext(ctx, "mcp connect", "server", s.Name, "duration", time.Since(start), "error", err != nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("MCP server %q: connect: %w", s.Name, ctx.Err())
		}
		return nil, false, fault.Errorf[fault.ExecutorUnavailable]("MCP server %q: cannot connect: %v", s.Name, red.Error(err))
	}
	e.cs, e.red, e.tools, e.over = cs, red, nil, over
	return cs, true, nil
}

// drop closes e's session after a failure, so the next use connects anew.
func (e *mcpSession) drop() {
	if e.cs != nil {
		_ = e.cs.Close()
	}
	e.cs, e.tools = nil, nil
}

// Tools implements agent.Toolbox. The list is read once per session (all its
// pages, at most 20) and cached with it; a reused session that fails to
// list is dropped and one new session is tried.
func (m *Client) Tools(ctx context.Context, s agent.Server) ([]agent.Tool, error) {
	e, err := m.entry(s)
	if err != nil {
		return nil, fault.Errorf[fault.ExecutorUnavailable]("MCP server %q: %v", s.Name, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for try := 0; ; try++ {
		if e.tools != nil {
			return e.tools, nil
		}
		cs, fresh, err := m.session(ctx, e, s)
		if err != nil {
			return nil, err
		}
		tools, err := m.list(ctx, cs, e.red)
		if err == nil {
			e.tools = tools
			return tools, nil
		}
		e.drop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("MCP server %q: list tools: %w", s.Name, ctx.Err())
		}
		if fresh || try > 0 {
			return nil, fault.Errorf[fault.ExecutorUnavailable]("MCP server %q: list tools: %v", s.Name, e.redact(err))
		}
	}
}

func (e *mcpSession) redact(err error) error {
	if e.red == nil {
		return err
	}
	return e.red.Error(err)
}

// list reads a server's tool list, its descriptions and schemas scrubbed
// of the session's secrets (they go to the model); names are kept, as
// calls name them.
func (m *Client) list(ctx context.Context, cs *sdk.ClientSession, red *secret.Redactor) ([]agent.Tool, error) {
	limit := m.ConnectTimeout
	if limit <= 0 {
		limit = DefaultConnectTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tools := []agent.Tool{}
	params := &sdk.ListToolsParams{}
	for page := 0; page < maxListPages; page++ {
		res, err := cs.ListTools(lctx, params)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			if t == nil || t.Name == "" {
				continue
			}
			schema, _ := json.Marshal(t.InputSchema)
			tools = append(tools, agent.Tool{Name: t.Name, Description: red.Redact(t.Description), InputSchema: red.RedactJSON(schema)})
		}
		if res.NextCursor == "" {
			break
		}
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
	sort.SliceStable(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, nil
}

// Call implements agent.Toolbox. A JSON-RPC error about the call (unknown tool,
// invalid arguments) is the tool's answer, with IsError; any other
// failure drops the session and is a *fault.ExecutorUnavailable (the
// call is not repeated here: it may have run).
func (m *Client) Call(ctx context.Context, s agent.Server, tool string, args json.RawMessage) (agent.ToolOutput, error) {
	e, err := m.entry(s)
	if err != nil {
		return agent.ToolOutput{}, fault.Errorf[fault.ExecutorUnavailable]("MCP server %q: %v", s.Name, err)
	}
	e.mu.Lock()
	cs, _, err := m.session(ctx, e, s)
	red, over := e.red, e.over
	e.mu.Unlock()
	if err != nil {
		return agent.ToolOutput{}, err
	}
	start := time.Now()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	m.log().DebugContext(ctx, "mcp call", "server", s.Name, "tool", tool, "duration", time.Since(start), "error", err != nil)
	var wire *jsonrpc.Error
	switch {
	case err == nil:
		out := agent.ToolOutput{Content: outputText(res), IsError: res.IsError}
		out.Content = red.Redact(out.Content)
		return out, nil
	case over != nil && over.Load():
		// The answer was not read; the SDK failed the session over it.
		e.mu.Lock()
		if e.cs == cs {
			e.drop()
		}
		e.mu.Unlock()
		return agent.ToolOutput{IsError: true, Content: fmt.Sprintf("tool %q answered more than %d bytes, more than is read: ask it for less", tool, m.maxResponse())}, nil
	case errors.As(err, &wire) && !transportCode(wire.Code):
		return agent.ToolOutput{IsError: true, Content: red.Redact(fmt.Sprintf("MCP error %d: %s", wire.Code, wire.Message))}, nil
	case ctx.Err() != nil:
		return agent.ToolOutput{}, fmt.Errorf("MCP server %q: call %q: %w", s.Name, tool, ctx.Err())
	}
	e.mu.Lock()
	if e.cs == cs {
		e.drop()
	}
	e.mu.Unlock()
	return agent.ToolOutput{}, fault.Errorf[fault.ExecutorUnavailable]("MCP server %q: call %q: %v", s.Name, tool, red.Error(err))
}

// transportCode reports whether a JSON-RPC error code is the SDK's own
// word for a connection that failed (unknown error, client or server
// closing, rejected by the transport) rather than the server's answer.
func transportCode(code int64) bool {
	switch code {
	case -32001, -32003, -32004, -32005:
		return true
	}
	return false
}

// Close ends every session (stdio servers are stopped); later uses fail.
func (m *Client) Close() error {
	m.mu.Lock()
	sessions := m.sessions
	m.sessions, m.closed = nil, true
	m.mu.Unlock()
	var errs []error
	for _, e := range sessions {
		e.mu.Lock()
		if e.cs != nil {
			if err := e.cs.Close(); err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
			e.cs = nil
		}
		e.mu.Unlock()
	}
	return errors.Join(errs...)
}

// outputText is a tool's answer as text: its text parts in order, other
// parts named by a short note, and the structured content when there is
// no content.
func outputText(res *sdk.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *sdk.TextContent:
			b.WriteString(c.Text)
		case *sdk.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *sdk.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *sdk.ResourceLink:
			fmt.Fprintf(&b, "[resource %s]", c.URI)
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s, %d bytes]", c.Resource.URI, len(c.Resource.Blob))
			}
		default:
			fmt.Fprintf(&b, "[%T content]", c)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		j, _ := json.Marshal(res.StructuredContent)
		b.Write(j)
	}
	return b.String()
}

func (m *Client) maxResponse() int64 {
	if m.MaxResponseBytes > 0 {
		return m.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}

// headerTransport sets a server's headers on every request and bounds
// every response that is not an event stream (the SDK bounds each event
// of those) to limit bytes, setting over when one goes past it.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	limit   int64
	over    *atomic.Bool
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := base.RoundTrip(r)
	if err == nil && resp.Body != nil && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = newLimitedBody(resp.Body, t.limit, t.over)
	}
	return resp, err
}

// limitedBody is http.MaxBytesReader's bound on a response body, which
// also sets over when the body went past it.
type limitedBody struct {
	io.ReadCloser
	over *atomic.Bool
}

func newLimitedBody(body io.ReadCloser, limit int64, over *atomic.Bool) *limitedBody {
	return &limitedBody{ReadCloser: http.MaxBytesReader(nil, body, limit), over: over}
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) && b.over != nil {
		b.over.Store(true)
		err = fmt.Errorf("the MCP server answered more than %d bytes", tooLarge.Limit)
	}
	return n, err
}

func expandMap(ctx context.Context, r secret.Resolver, m map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v, err := secret.Expand(ctx, r, m[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func expandList(ctx context.Context, r secret.Resolver, l []string) ([]string, error) {
	out := make([]string, len(l))
	for i, s := range l {
		v, err := secret.Expand(ctx, r, s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
