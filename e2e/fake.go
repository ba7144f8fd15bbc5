package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// Reply is one scripted answer of a responses file (the format `stepline
// run --responses` reads; see package shared/executor): a model's raw
// reply with the token usage it reports, a failed call, or a human
// decision.
type Reply struct {
	Text          string
	InputTokens   int64
	OutputTokens  int64
	Error         string // the call fails: "timeout…" times out, anything else is HTTP 503
	Decision      string // "approve" or "reject"
	By            string
	IsDecision    bool
	IsError       bool
	IsPlainString bool // written as a bare string (a decision word is then a decision)
}

// Timeout reports whether the reply scripts a call that times out.
func (r Reply) Timeout() bool {
	return r.IsError && strings.HasPrefix(strings.ToLower(strings.TrimSpace(r.Error)), "timeout")
}

// Script is a scenario's scripted replies, by step key ("triage",
// "triage:verifier", "check/0"), consumed in order. Safe for concurrent
// use.
type Script struct {
	mu      sync.Mutex
	replies map[string][]Reply
	used    map[string]int
	calls   []Call
}

// Call is one request the fake served for a script.
type Call struct {
	Key    string
	Kind   string // gateway, anthropic, bedrock, webhook, notify (failure webhooks and notifications)
	Path   string
	Header http.Header
	Body   string
	Status int
}

// ParseScript reads a responses file's replies.
func ParseScript(data []byte) (*Script, error) {
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("responses: %w", err)
	}
	s := &Script{replies: map[string][]Reply{}, used: map[string]int{}}
	for key, node := range doc {
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

// Unused lists the replies nobody asked for, as "key: n left".
func (s *Script) Unused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, k := range s.Keys() {
		if left := len(s.replies[k]) - s.used[k]; left > 0 {
			out = append(out, fmt.Sprintf("%s: %d left", k, left))
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

// Fake is an HTTP server that answers as the model providers and
// webhooks of the box's pipelines, from per-scenario scripts:
//
//	/s/<scenario>/m/<key>/v1/chat/completions   OpenAI-compatible (gateway steps)
//	/s/<scenario>/m/<key>/v1/messages           Anthropic Messages (anthropic steps)
//	/bedrock/model/<model>~<scenario>~<key>/converse   Bedrock Converse (bedrock steps)
//	/s/<scenario>/h/<key>                       webhook and notify steps: the reply is the body of a 200
//	/s/<scenario>/n/<what>                      failure webhooks and notifications: 200, recorded
//
// As a proxy (HTTPS_PROXY, HTTP_PROXY) it refuses every request with 403
// and notes the host (Egress). A reply scripted as an error answers 503; one scripted as a timeout
// holds the call until the caller gives up. A key with no reply left
// answers 400 naming it.
type Fake struct {
	URL string

	srv     *http.Server
	mu      sync.Mutex
	scripts map[string]*Script
	egress  []string // hosts asked for through the proxy
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
	f := &Fake{URL: "http://" + l.Addr().String(), scripts: map[string]*Script{}}
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
	f.mu.Unlock()
}

func (f *Fake) script(id string) *Script {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scripts[id]
}

// Base is the URL prefix of scenario id's routes.
func (f *Fake) Base(id string) string { return f.URL + "/s/" + id }

// BedrockEndpoint is the AWS_ENDPOINT_URL_BEDROCK_RUNTIME of the step
// function.
func (f *Fake) BedrockEndpoint() string { return f.URL + "/bedrock" }

// BedrockModel is the model ID a rewritten bedrock step asks for, which
// tells the fake its scenario and step.
func BedrockModel(model, scenario, key string) string { return model + "~" + scenario + "~" + key }

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
	switch {
	case strings.HasPrefix(path, "/bedrock/model/") && strings.HasSuffix(path, "/converse"):
		model := strings.TrimSuffix(strings.TrimPrefix(path, "/bedrock/model/"), "/converse")
		if m, err := url.PathUnescape(model); err == nil {
			model = m
		}
		parts := strings.Split(model, "~")
		if len(parts) < 3 {
			http.Error(w, `{"message": "model `+model+` names no scenario"}`, http.StatusBadRequest)
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
		case strings.HasPrefix(route, "h/"):
			key, kind = strings.TrimPrefix(route, "h/"), "webhook"
		case strings.HasPrefix(route, "n/"):
			key, kind = strings.TrimPrefix(route, "n/"), "notify"
		}
	}
	s := f.script(id)
	if s == nil || kind == "" {
		http.Error(w, `{"error": {"message": "the fake has no route `+path+`"}}`, http.StatusNotFound)
		return
	}
	call := Call{Key: key, Kind: kind, Path: path, Header: r.Header.Clone(), Body: string(body)}
	defer func() { s.record(call) }()
	if kind == "notify" {
		call.Status = http.StatusOK
		io.WriteString(w, "ok")
		return
	}
	rep, ok := s.next(key)
	if !ok {
		call.Status = http.StatusBadRequest
		http.Error(w, `{"error": {"message": "no scripted reply left for `+key+`"}}`, http.StatusBadRequest)
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
	w.Header().Set("Content-Type", "application/json")
	var model struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &model)
	var out any
	switch kind {
	case "webhook":
		io.WriteString(w, rep.Text)
		return
	case "gateway":
		out = map[string]any{
			"id": "chatcmpl-box", "object": "chat.completion", "model": model.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": rep.Text}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": rep.InputTokens, "completion_tokens": rep.OutputTokens, "total_tokens": rep.InputTokens + rep.OutputTokens},
		}
	case "anthropic":
		out = map[string]any{
			"id": "msg_box", "type": "message", "role": "assistant", "model": model.Model,
			"content":     []any{map[string]any{"type": "text", "text": rep.Text}},
			"stop_reason": "end_turn",
			"usage":       map[string]any{"input_tokens": rep.InputTokens, "output_tokens": rep.OutputTokens},
		}
	case "bedrock":
		out = map[string]any{
			"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"text": rep.Text}}}},
			"stopReason": "end_turn",
			"usage":      map[string]any{"inputTokens": rep.InputTokens, "outputTokens": rep.OutputTokens, "totalTokens": rep.InputTokens + rep.OutputTokens},
			"metrics":    map[string]any{"latencyMs": 1},
		}
	}
	json.NewEncoder(w).Encode(out)
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
