package remotetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Gateway is a fake remote agent gateway at /rpc: the challenge event,
// connect with the operator token, and agent requests answered by
// accepted, trace_event frames and the final result, one run at a time
// per connection. A client that disconnects mid-run cancels it.
type Gateway struct {
	record
	URL    string // ws://127.0.0.1:port/rpc
	token  string
	agents []string
	answer func(Run) Answer
}

// NewGateway starts a fake remote agent gateway with an operator token
// and the agents named; answer decides each run. It stops when the test
// ends.
func NewGateway(t testing.TB, token string, agents []string, answer func(Run) Answer) *Gateway {
	t.Helper()
	g := &Gateway{token: token, agents: agents, answer: answer}
	g.sessions = map[string][]string{}
	mux := http.NewServeMux()
	mux.HandleFunc("/rpc", g.serve)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	g.URL = "ws" + strings.TrimPrefix(srv.URL, "http") + "/rpc"
	return g
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(25 << 20)
	p := newPeer(c)
	p.event("challenge", map[string]any{"nonce": newNonce()})
	authenticated := false
	for {
		f, ok := p.next(time.Minute)
		if !ok {
			return
		}
		if f.Type != "req" {
			continue
		}
		if !authenticated {
			if f.Method != "connect" {
				p.fail(f.ID, nil, errorShape{Message: "not authenticated"})
				continue
			}
			var params struct {
				Auth struct {
					Token string `json:"token"`
				} `json:"auth"`
			}
			_ = json.Unmarshal(f.Params, &params)
			if params.Auth.Token != g.token {
				g.refuse("invalid operator token")
				p.fail(f.ID, nil, errorShape{Message: "invalid operator token"})
				continue
			}
			authenticated = true
			g.mu.Lock()
			g.connects++
			g.mu.Unlock()
			p.ok(f.ID, map[string]any{"protocol": 3})
			continue
		}
		if f.Method != "agent" {
			p.fail(f.ID, nil, errorShape{Message: "unknown method: " + f.Method})
			continue
		}
		if !g.agent(p, f) {
			return
		}
	}
}

// agent serves one agent request; false when the connection is done.
func (g *Gateway) agent(p *peer, f inFrame) bool {
	var params map[string]any
	_ = json.Unmarshal(f.Params, &params)
	str := func(k string) string { s, _ := params[k].(string); return s }
	run := Run{AgentID: str("agentId"), SessionKey: str("sessionKey"), Message: str("message"), Params: params}
	if !slices.Contains(g.agents, run.AgentID) {
		g.refuse("agent not found: " + run.AgentID)
		p.fail(f.ID, nil, errorShape{Message: "agent not found: " + run.AgentID})
		return true
	}
	if prefix := "agent:" + run.AgentID + ":"; !strings.HasPrefix(run.SessionKey, prefix) {
		g.refuse("session key")
		p.fail(f.ID, nil, errorShape{Message: fmt.Sprintf("sessionKey must start with '%s', got: %s", prefix, run.SessionKey)})
		return true
	}
	g.addRun(run)
	runID := newNonce()
	p.ok(f.ID, map[string]any{"status": "accepted", "runId": runID})
	a := g.answer(run)
	for _, ev := range a.Trace {
		p.ok(f.ID, map[string]any{"status": "trace_event", "event": ev})
	}
	if a.Drop {
		_ = p.c.CloseNow()
		return false
	}
	select {
	case <-time.After(a.Delay):
	case <-p.gone:
		// The client disconnected mid-run: the gateway cancels the run.
		g.mu.Lock()
		g.cancelled++
		g.mu.Unlock()
		return false
	}
	if a.Error != "" {
		p.fail(f.ID, nil, errorShape{Message: a.Error})
		return true
	}
	text := ""
	if len(a.Texts) > 0 {
		text = a.Texts[0]
	}
	trace := a.Trace
	if trace == nil {
		trace = []map[string]any{}
	}
	p.ok(f.ID, map[string]any{"status": "ok", "result": map[string]any{
		"payloads": []map[string]any{{"text": text, "mediaUrl": nil}},
		"meta": map[string]any{
			"durationMs": 42,
			"agentMeta": map[string]any{"provider": a.Provider, "model": a.Model, "agentVersion": a.AgentVersion,
				"usage": map[string]any{"input_tokens": a.InputTokens, "output_tokens": a.OutTokens}},
			"aborted": false,
		},
		"trace": trace,
	}})
	return true
}
