package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor"
)

// Reply is one scripted answer of a responses file (the format `stepline
// run --responses` reads; see package shared/executor): a model's raw
// reply with the token usage it reports, a tool-calling turn of an agent
// step, a failed call, a human decision, or (under tool_results) a
// tool's answer.
type Reply struct {
	Text          string // the reply; a tool-calling turn's text; a tool's answer
	InputTokens   int64
	OutputTokens  int64
	Error         string     // the call fails: "timeout…" times out, anything else is HTTP 503 (a tool: an error result)
	Calls         []ToolCall // a tool-calling turn: the tools the model asks for
	Decision      string     // "approve" or "reject"
	By            string
	IsDecision    bool
	IsError       bool
	IsPlainString bool // written as a bare string (a decision word is then a decision)
}

// ToolCall is one tool call a scripted turn asks for.
type ToolCall struct {
	ID        string          // as scripted; "" lets the fake name it as its provider would
	Name      string          // "server.tool"
	Arguments json.RawMessage // a JSON object
}

// Timeout reports whether the reply scripts a call that times out.
func (r Reply) Timeout() bool {
	return r.IsError && strings.HasPrefix(strings.ToLower(strings.TrimSpace(r.Error)), "timeout")
}

// Script is a scenario's scripted replies, by step key ("triage",
// "triage:verifier", "check/0"), consumed in order, and its tools'
// answers (tool_results, by "server.tool"), consumed in order across the
// run. Safe for concurrent use.
type Script struct {
	mu        sync.Mutex
	replies   map[string][]Reply
	used      map[string]int
	tools     map[string][]Reply  // tool_results, by "server.tool"
	toolsUsed map[string]int      // by "server.tool"
	routes    map[string][]string // provider → the step keys whose agents call it (SetRoutes)
	turns     map[string]int      // model turns served, by step key: they name the calls
	pending   map[string][]string // by step key: the calls of its last tool-calling turn
	calls     []Call
}

// Call is one request the fake served for a script.
type Call struct {
	Key    string // a step key; a server ("mcp"); "server.tool" ("tool")
	Kind   string // gateway, anthropic, bedrock, webhook, notify (failure webhooks and notifications), mcp (a request to a fake MCP server), tool (a tool call it answered)
	Path   string
	Header http.Header
	Body   string // the request; a tool call's arguments
	Status int
}

// ParseScript reads a responses file's replies and its tool_results.
func ParseScript(data []byte) (*Script, error) {
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("responses: %w", err)
	}
	s := &Script{replies: map[string][]Reply{}, used: map[string]int{}, tools: map[string][]Reply{}, toolsUsed: map[string]int{},
		routes: map[string][]string{}, turns: map[string]int{}, pending: map[string][]string{}}
	for key, node := range doc {
		if key == executor.ToolResultsKey {
			if err := s.parseToolResults(&node); err != nil {
				return nil, err
			}
			continue
		}
		items := []*yaml.Node{&node}
		if node.Kind == yaml.SequenceNode {
			items = node.Content
		}
		for _, it := range items {
			r, err := parseReply(it)
			if err != nil {
				return nil, fmt.Errorf("responses: %s: line %d: %w", key, it.Line, err)
			}
			s.replies[key] = append(s.replies[key], r)
		}
	}
	return s, nil
}

// parseToolResults reads tool_results: for each "server.tool", its
// answers (a string, a mapping sent as its JSON, or {error: message}).
func (s *Script) parseToolResults(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("responses: %s: line %d: want a mapping from server.tool to answers", executor.ToolResultsKey, n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, v := n.Content[i].Value, n.Content[i+1]
		if server, tool, ok := strings.Cut(name, "."); !ok || server == "" || tool == "" {
			return fmt.Errorf("responses: %s: line %d: want server.tool, got %q", executor.ToolResultsKey, n.Content[i].Line, name)
		}
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		for _, it := range items {
			r, err := parseReply(it)
			if err == nil && (r.IsDecision || len(r.Calls) > 0) {
				err = fmt.Errorf("want a tool's answer (a string, a mapping or {error: message})")
			}
			if err != nil {
				return fmt.Errorf("responses: %s.%s: line %d: %w", executor.ToolResultsKey, name, it.Line, err)
			}
			s.tools[name] = append(s.tools[name], r)
		}
	}
	return nil
}

func parseReply(n *yaml.Node) (Reply, error) {
	if n.Kind == yaml.ScalarNode {
		return Reply{Text: n.Value, IsPlainString: true}, nil
	}
	if n.Kind != yaml.MappingNode {
		return Reply{}, fmt.Errorf("want a string or a mapping")
	}
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return Reply{}, err
	}
	switch {
	case m["error"] != nil:
		return Reply{Error: fmt.Sprint(m["error"]), IsError: true}, nil
	case m["tool_calls"] != nil:
		return parseToolCalls(n)
	case m["reply"] != nil:
		r := Reply{Text: fmt.Sprint(m["reply"])}
		r.InputTokens, _ = toInt(m["input_tokens"])
		r.OutputTokens, _ = toInt(m["output_tokens"])
		return r, nil
	case m["decision"] != nil:
		r := Reply{Decision: strings.ToLower(fmt.Sprint(m["decision"])), IsDecision: true}
		if by, ok := m["by"].(string); ok {
			r.By = by
		}
		return r, nil
	}
	b, err := json.Marshal(m)
	return Reply{Text: string(b)}, err
}

// parseToolCalls reads a tool-calling turn, {tool_calls: [{name,
// arguments, id}], text, input_tokens, output_tokens}. Arguments are
// written as JSON the way `stepline run` writes them (keys sorted), so
// both engines see the same bytes.
func parseToolCalls(n *yaml.Node) (Reply, error) {
	var turn struct {
		Calls []struct {
			ID        string         `yaml:"id"`
			Name      string         `yaml:"name"`
			Arguments map[string]any `yaml:"arguments"`
		} `yaml:"tool_calls"`
		Text         string `yaml:"text"`
		InputTokens  int64  `yaml:"input_tokens"`
		OutputTokens int64  `yaml:"output_tokens"`
	}
	if err := n.Decode(&turn); err != nil {
		return Reply{}, fmt.Errorf("tool_calls: %w", err)
	}
	if len(turn.Calls) == 0 {
		return Reply{}, fmt.Errorf("tool_calls: want a list of calls")
	}
	r := Reply{Text: turn.Text, InputTokens: turn.InputTokens, OutputTokens: turn.OutputTokens}
	for i, c := range turn.Calls {
		if server, tool, ok := strings.Cut(c.Name, "."); !ok || server == "" || tool == "" {
			return Reply{}, fmt.Errorf("tool_calls[%d].name: want server.tool, got %q", i, c.Name)
		}
		args := json.RawMessage("{}")
		if c.Arguments != nil {
			b, err := json.Marshal(c.Arguments)
			if err != nil {
				return Reply{}, fmt.Errorf("tool_calls[%d].arguments: %w", i, err)
			}
			args = b
		}
		r.Calls = append(r.Calls, ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return r, nil
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		return int64(x), true
	}
	return 0, false
}

// Keys are the step keys the script has replies for.
func (s *Script) Keys() []string {
	keys := make([]string, 0, len(s.replies))
	for k := range s.replies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Replies are key's replies, used or not.
func (s *Script) Replies(key string) []Reply { return s.replies[key] }

// Tools are the tools tool_results scripts, "server.tool", sorted: the
// only tools a scripted run has, so the fake MCP servers list these.
func (s *Script) Tools() []string {
	out := make([]string, 0, len(s.tools))
	for k := range s.tools {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SetRoutes adds the step keys whose agents call each provider through
// the scenario's provider routes (Variant.Providers).
func (s *Script) SetRoutes(routes map[string][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, keys := range routes {
		for _, k := range keys {
			if !slices.Contains(s.routes[p], k) {
				s.routes[p] = append(s.routes[p], k)
			}
		}
	}
}

// route is the step key a provider route answers for: the one step
// whose agent calls the provider.
func (s *Script) route(provider string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch keys := s.routes[provider]; len(keys) {
	case 1:
		return keys[0], nil
	case 0:
		return "", fmt.Errorf("no agent step of the scenario calls provider %s", provider)
	default:
		sorted := slices.Sorted(slices.Values(keys))
		return "", fmt.Errorf("provider %s serves the agents of steps %s: the box cannot tell their calls apart", provider, strings.Join(sorted, ", "))
	}
}

// next consumes key's next reply.
func (s *Script) next(key string) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.used[key]
	if i >= len(s.replies[key]) {
		return Reply{}, false
	}
	s.used[key] = i + 1
	return s.replies[key][i], true
}

// nextTool consumes tool's next answer.
func (s *Script) nextTool(tool string) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.toolsUsed[tool]
	if i >= len(s.tools[tool]) {
		return Reply{}, false
	}
	s.toolsUsed[tool] = i + 1
	return s.tools[tool][i], true
}

// unanswered returns a call of key's last tool-calling turn that body
// (key's next model request, in kind's wire format) carries no result
// for, "" when it answers all: the conversation, kept between Tasks, must
// bring every result back.
func (s *Script) unanswered(key, kind string, body []byte) string {
	s.mu.Lock()
	pending := s.pending[key]
	s.mu.Unlock()
	if len(pending) == 0 {
		return ""
	}
	answered := toolResultIDs(kind, body)
	for _, id := range pending {
		if !answered[id] {
			return id
		}
	}
	return ""
}

// toolResultIDs are the calls a model request in kind's wire format
// carries results for: OpenAI "tool" messages' tool_call_id, Anthropic
// tool_result blocks' tool_use_id, Converse toolResult blocks' toolUseId.
func toolResultIDs(kind string, body []byte) map[string]bool {
	var req struct {
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	out := map[string]bool{}
	if json.Unmarshal(body, &req) != nil {
		return out
	}
	for _, m := range req.Messages {
		if kind == "gateway" {
			if m.Role == "tool" {
				out[m.ToolCallID] = true
			}
			continue
		}
		var blocks []struct {
			Type       string `json:"type"`
			ToolUseID  string `json:"tool_use_id"`
			ToolResult *struct {
				ToolUseID string `json:"toolUseId"`
			} `json:"toolResult"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			switch {
			case kind == "anthropic" && b.Type == "tool_result":
				out[b.ToolUseID] = true
			case kind == "bedrock" && b.ToolResult != nil:
				out[b.ToolResult.ToolUseID] = true
			}
		}
	}
	return out
}

// served notes a model turn served for key: the IDs of the calls it asked
// for, which the next request must answer (none for a final answer).
func (s *Script) served(key string, ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[key] = ids
}

// turn counts a model turn of key and returns its number (from 1).
func (s *Script) turn(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns[key]++
	return s.turns[key]
}

// Decision consumes key's next reply as a human decision: approve or
// reject and who decided; ok is false when none is left.
func (s *Script) Decision(key string) (decision, by string, ok bool) {
	r, ok := s.next(key)
	if !ok {
		return "", "", false
	}
	if r.IsDecision {
		return r.Decision, r.By, true
	}
	switch strings.ToLower(strings.TrimSpace(r.Text)) {
	case "approve", "approved":
		return "approve", "", true
	case "reject", "rejected":
		return "reject", "", true
	}
	return "", "", false
}

// Calls are the requests served so far.
func (s *Script) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Unused lists the replies and tool answers nobody asked for, as "key: n
// left" ("tool_results/server.tool: n left" for a tool).
func (s *Script) Unused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, k := range s.Keys() {
		if left := len(s.replies[k]) - s.used[k]; left > 0 {
			out = append(out, fmt.Sprintf("%s: %d left", k, left))
		}
	}
	for _, t := range s.Tools() {
		if left := len(s.tools[t]) - s.toolsUsed[t]; left > 0 {
			out = append(out, fmt.Sprintf("%s/%s: %d left", executor.ToolResultsKey, t, left))
		}
	}
	return out
}

func (s *Script) record(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

// MaxHangSeconds bounds how long a call scripted to time out is held
// open: the step's own deadline ends it first.
const MaxHangSeconds = 60

// Fake is an HTTP server that answers as the model providers, MCP
// servers and webhooks of the box's pipelines, from per-scenario scripts:
//
//	/s/<scenario>/m/<key>/v1/chat/completions   OpenAI-compatible (gateway steps)
//	/s/<scenario>/m/<key>/v1/messages           Anthropic Messages (anthropic steps)
//	/bedrock/model/<model>~<scenario>~<key>/converse   Bedrock Converse (bedrock steps)
//	/s/<scenario>/p/<provider>/v1/chat/completions, /v1/messages
//	                                            a project's provider (the step whose agent calls it)
//	/s/<scenario>/mcp/<server>                  an MCP server (streamable HTTP; see below)
//	/s/<scenario>/h/<key>                       webhook and notify steps: the reply is the body of a 200
//	/s/<scenario>/n/<what>                      failure webhooks and notifications: 200, recorded
//
// As a proxy (HTTPS_PROXY, HTTP_PROXY) it refuses every request with 403
// and notes the host (Egress). A reply scripted as an error answers 503; one scripted as a timeout
// holds the call until the caller gives up. A key with no reply left
// answers 400 naming it.
//
// An agent step's tool-calling turn is answered with native tool calls
// in the provider's wire format (OpenAI tool_calls, Anthropic tool_use
// blocks, Bedrock Converse toolUse blocks), each call named as the
// request's tools offer it and given an ID as the provider would
// ("call_box…", "toolu_box…", "tooluse_box…") unless the script gives
// one. The step's next model request must answer every one of those
// calls (carry its ID), or the fake answers 400 naming the call: a
// conversation kept between Tasks that lost a tool result fails loudly.
//
// Each MCP server is an official go-sdk server (streamable HTTP) per
// scenario, listing the tools the scenario's tool_results scripts for it
// (what `stepline run --responses` offers the agent) and answering each
// call with the tool's next scripted answer; {error: message} is a tool
// error. A tool's description is ToolDescription of its qualified name,
// which is how the fake model finds the name the request offers it by.
type Fake struct {
	URL string

	srv     *http.Server
	mu      sync.Mutex
	scripts map[string]*Script
	mcp     map[string]http.Handler // by "<scenario>/<server>"
	egress  []string                // hosts asked for through the proxy
}

// Egress lists the hosts functions asked the proxy for, in order.
func (f *Fake) Egress() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.egress...)
}

// StartFake serves on a free loopback port.
func StartFake() (*Fake, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Fake{URL: "http://" + l.Addr().String(), scripts: map[string]*Script{}, mcp: map[string]http.Handler{}}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(l)
	return f, nil
}

// Close stops the server.
func (f *Fake) Close() error { return f.srv.Close() }

// Load makes s the script of scenario id.
func (f *Fake) Load(id string, s *Script) {
	f.mu.Lock()
	f.scripts[id] = s
	for k := range f.mcp {
		if strings.HasPrefix(k, id+"/") {
			delete(f.mcp, k)
		}
	}
	f.mu.Unlock()
}

func (f *Fake) script(id string) *Script {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scripts[id]
}

// Base is the URL prefix of scenario id's routes.
func (f *Fake) Base(id string) string { return f.URL + "/s/" + id }

// MCPURL is the URL of scenario id's fake MCP server named server.
func (f *Fake) MCPURL(id, server string) string { return f.Base(id) + "/mcp/" + server }

// ProviderURL is the base_url of scenario id's route for a project's
// provider, speaking api (agent.APIGateway or agent.APIAnthropic).
func (f *Fake) ProviderURL(id, provider, api string) string {
	if api == agent.APIGateway {
		return f.Base(id) + "/p/" + provider + "/v1"
	}
	return f.Base(id) + "/p/" + provider
}

// BedrockEndpoint is the AWS_ENDPOINT_URL_BEDROCK_RUNTIME of the step
// function.
func (f *Fake) BedrockEndpoint() string { return f.URL + "/bedrock" }

// BedrockModel is the model ID a rewritten bedrock step asks for, which
// tells the fake its scenario and step.
func BedrockModel(model, scenario, key string) string { return model + "~" + scenario + "~" + key }

// ToolDescription is the description the fake MCP servers give a tool,
// "server.tool" its qualified name.
func ToolDescription(qualified string) string { return "box tool " + qualified }

func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect || r.URL.IsAbs() {
		// A request through the box's proxy (HTTPS_PROXY of the stack's
		// functions): nothing leaves the machine.
		host := r.Host
		if r.URL.IsAbs() {
			host = r.URL.Host
		}
		f.mu.Lock()
		f.egress = append(f.egress, host)
		f.mu.Unlock()
		http.Error(w, "the box has no way out to "+host, http.StatusForbidden)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	path := r.URL.Path
	var id, key, kind string
	routeErr := ""
	switch {
	case strings.HasPrefix(path, "/bedrock/model/") && strings.HasSuffix(path, "/converse"):
		model := strings.TrimSuffix(strings.TrimPrefix(path, "/bedrock/model/"), "/converse")
		if m, err := url.PathUnescape(model); err == nil {
			model = m
		}
		parts := strings.Split(model, "~")
		if len(parts) < 3 {
			http.Error(w, `{"message": "model `+jsonEscape(model)+` names no scenario"}`, http.StatusBadRequest)
			return
		}
		id, key, kind = parts[len(parts)-2], parts[len(parts)-1], "bedrock"
	case strings.HasPrefix(path, "/s/"):
		rest := strings.TrimPrefix(path, "/s/")
		var route string
		id, route, _ = strings.Cut(rest, "/")
		switch {
		case strings.HasPrefix(route, "m/") && strings.HasSuffix(route, "/v1/chat/completions"):
			key, kind = strings.TrimSuffix(strings.TrimPrefix(route, "m/"), "/v1/chat/completions"), "gateway"
		case strings.HasPrefix(route, "m/") && strings.HasSuffix(route, "/v1/messages"):
			key, kind = strings.TrimSuffix(strings.TrimPrefix(route, "m/"), "/v1/messages"), "anthropic"
		case strings.HasPrefix(route, "p/") && strings.HasSuffix(route, "/v1/chat/completions"):
			key, kind = strings.TrimSuffix(strings.TrimPrefix(route, "p/"), "/v1/chat/completions"), "gateway"
		case strings.HasPrefix(route, "p/") && strings.HasSuffix(route, "/v1/messages"):
			key, kind = strings.TrimSuffix(strings.TrimPrefix(route, "p/"), "/v1/messages"), "anthropic"
		case strings.HasPrefix(route, "mcp/"):
			key, kind = strings.TrimPrefix(route, "mcp/"), "mcp"
		case strings.HasPrefix(route, "h/"):
			key, kind = strings.TrimPrefix(route, "h/"), "webhook"
		case strings.HasPrefix(route, "n/"):
			key, kind = strings.TrimPrefix(route, "n/"), "notify"
		}
		if provider, ok := strings.CutPrefix(route, "p/"); ok && kind != "" {
			if s := f.script(id); s != nil {
				provider, _, _ = strings.Cut(provider, "/")
				var err error
				if key, err = s.route(provider); err != nil {
					routeErr = err.Error()
				}
			}
		}
	}
	s := f.script(id)
	if s == nil || kind == "" {
		http.Error(w, `{"error": {"message": "the fake has no route `+jsonEscape(path)+`"}}`, http.StatusNotFound)
		return
	}
	if kind == "mcp" {
		s.record(Call{Key: key, Kind: kind, Path: path, Header: r.Header.Clone(), Body: string(body)})
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mcpServer(id, key, s).ServeHTTP(w, r)
		return
	}
	call := Call{Key: key, Kind: kind, Path: path, Header: r.Header.Clone(), Body: string(body)}
	defer func() { s.record(call) }()
	if routeErr != "" {
		call.Status = http.StatusBadRequest
		http.Error(w, `{"error": {"message": "`+jsonEscape(routeErr)+`"}}`, http.StatusBadRequest)
		return
	}
	if kind == "notify" {
		call.Status = http.StatusOK
		io.WriteString(w, "ok")
		return
	}
	if kind != "webhook" {
		if id := s.unanswered(key, kind, body); id != "" {
			call.Status = http.StatusBadRequest
			http.Error(w, `{"error": {"message": "the request does not answer tool call `+jsonEscape(id)+` of the previous turn"}}`, http.StatusBadRequest)
			return
		}
	}
	rep, ok := s.next(key)
	if !ok {
		call.Status = http.StatusBadRequest
		http.Error(w, `{"error": {"message": "no scripted reply left for `+jsonEscape(key)+`"}}`, http.StatusBadRequest)
		return
	}
	switch {
	case rep.Timeout():
		select {
		case <-r.Context().Done():
		case <-time.After(MaxHangSeconds * time.Second):
		}
		call.Status = -1
		return
	case rep.IsError:
		call.Status = http.StatusServiceUnavailable
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error": {"message": "scripted: `+jsonEscape(rep.Error)+`"}}`)
		return
	case rep.IsDecision:
		call.Status = http.StatusBadRequest
		http.Error(w, `{"error": {"message": "a decision is not a reply"}}`, http.StatusBadRequest)
		return
	}
	call.Status = http.StatusOK
	if kind == "webhook" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, rep.Text)
		return
	}
	out := modelAnswer(kind, rep, body, s.turn(key))
	s.served(key, out.ids)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out.body)
}

// answer is a model's answer and the IDs of the tool calls it asks for.
type answer struct {
	body any
	ids  []string
}

// modelAnswer is rep in kind's wire format; body is the request, turn the
// number of the step's model turn (it names the calls).
func modelAnswer(kind string, rep Reply, body []byte, turn int) answer {
	var model struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &model)
	offered := offeredTools(kind, body)
	prefix := map[string]string{"gateway": "call_box", "anthropic": "toolu_box", "bedrock": "tooluse_box"}[kind]
	var a answer
	type wireCall struct{ id, name string }
	calls := make([]wireCall, len(rep.Calls))
	for i, c := range rep.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("%s%d_%d", prefix, turn, i+1)
		}
		name := c.Name
		if w, ok := offered[c.Name]; ok {
			name = w
		}
		calls[i] = wireCall{id, name}
		a.ids = append(a.ids, id)
	}
	switch kind {
	case "gateway":
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		finish := "stop"
		if len(calls) > 0 {
			tcs := make([]any, len(calls))
			for i, c := range calls {
				tcs[i] = map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": string(rep.Calls[i].Arguments)}}
			}
			msg["tool_calls"], finish = tcs, "tool_calls"
			if rep.Text == "" {
				msg["content"] = nil
			}
		}
		a.body = map[string]any{
			"id": "chatcmpl-box", "object": "chat.completion", "model": model.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": rep.InputTokens, "completion_tokens": rep.OutputTokens, "total_tokens": rep.InputTokens + rep.OutputTokens},
		}
	case "anthropic":
		content := []any{}
		if rep.Text != "" || len(calls) == 0 {
			content = append(content, map[string]any{"type": "text", "text": rep.Text})
		}
		stop := "end_turn"
		for i, c := range calls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": rep.Calls[i].Arguments})
			stop = "tool_use"
		}
		a.body = map[string]any{
			"id": "msg_box", "type": "message", "role": "assistant", "model": model.Model,
			"content": content, "stop_reason": stop,
			"usage": map[string]any{"input_tokens": rep.InputTokens, "output_tokens": rep.OutputTokens},
		}
	case "bedrock":
		content := []any{}
		if rep.Text != "" || len(calls) == 0 {
			content = append(content, map[string]any{"text": rep.Text})
		}
		stop := "end_turn"
		for i, c := range calls {
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": c.id, "name": c.name, "input": rep.Calls[i].Arguments}})
			stop = "tool_use"
		}
		a.body = map[string]any{
			"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
			"stopReason": stop,
			"usage":      map[string]any{"inputTokens": rep.InputTokens, "outputTokens": rep.OutputTokens, "totalTokens": rep.InputTokens + rep.OutputTokens},
			"metrics":    map[string]any{"latencyMs": 1},
		}
	}
	return a
}

// offeredTools maps each tool a model request offers whose description
// is a ToolDescription to the name the request gives it: the name a
// model answers with.
func offeredTools(kind string, body []byte) map[string]string {
	var req struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Function    struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"function"`
		} `json:"tools"`
		ToolConfig struct {
			Tools []struct {
				ToolSpec struct {
					Name        string `json:"name"`
					Description string `json:"description"`
				} `json:"toolSpec"`
			} `json:"tools"`
		} `json:"toolConfig"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	out := map[string]string{}
	add := func(name, desc string) {
		if q, ok := strings.CutPrefix(desc, ToolDescription("")); ok && name != "" {
			out[q] = name
		}
	}
	switch kind {
	case "gateway":
		for _, t := range req.Tools {
			add(t.Function.Name, t.Function.Description)
		}
	case "anthropic":
		for _, t := range req.Tools {
			add(t.Name, t.Description)
		}
	case "bedrock":
		for _, t := range req.ToolConfig.Tools {
			add(t.ToolSpec.Name, t.ToolSpec.Description)
		}
	}
	return out
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

// readFile is os.ReadFile with the path in the error.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}
