package remotetest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// OpenClawProtocol is the protocol version the fake OpenClaw gateway
// speaks.
const OpenClawProtocol = 3

// maxSkew is how old (or early) a device signature may be.
const maxSkew = 2 * time.Minute

// OpenClaw is a fake OpenClaw gateway: the connect.challenge, connect with
// a signed device identity (one paired device), and the agent, chat.abort
// methods. Its sessions keep the messages they were sent.
type OpenClaw struct {
	record
	URL    string // ws://127.0.0.1:port
	device Identity
	agents []string
	answer func(Run) Answer
	// unavailable answers connect with a retryable UNAVAILABLE, as a
	// gateway still starting does.
	unavailable atomic.Bool
}

// NewOpenClaw starts a fake OpenClaw gateway that knows one paired
// device and the agents named; answer decides each run. It stops when
// the test ends.
func NewOpenClaw(t testing.TB, device Identity, agents []string, answer func(Run) Answer) *OpenClaw {
	t.Helper()
	o := &OpenClaw{device: device, agents: agents, answer: answer}
	o.sessions = map[string][]string{}
	srv := httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(srv.Close)
	o.URL = "ws" + strings.TrimPrefix(srv.URL, "http")
	return o
}

// SetUnavailable makes connect answer with a retryable UNAVAILABLE error.
func (o *OpenClaw) SetUnavailable(v bool) { o.unavailable.Store(v) }

// Session is what the session with key was sent, in order.
func (o *OpenClaw) Session(key string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.sessions[key]...)
}

// wire frames.
type inFrame struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type errorShape struct {
	Code         string         `json:"code"`
	Message      string         `json:"message"`
	Details      map[string]any `json:"details,omitempty"`
	Retryable    bool           `json:"retryable,omitempty"`
	RetryAfterMS int64          `json:"retryAfterMs,omitempty"`
}

// peer is one client connection: frames are read by one goroutine.
type peer struct {
	c      *websocket.Conn
	frames chan inFrame
	gone   chan struct{} // closed when the client disconnects or sends garbage
}

func newPeer(c *websocket.Conn) *peer {
	p := &peer{c: c, frames: make(chan inFrame, 8), gone: make(chan struct{})}
	go func() {
		defer close(p.gone)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var f inFrame
			if json.Unmarshal(b, &f) != nil {
				_ = c.Close(websocket.StatusUnsupportedData, "not JSON")
				return
			}
			p.frames <- f
		}
	}()
	return p
}

func (p *peer) send(v any) {
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.c.Write(ctx, websocket.MessageText, b)
}

func (p *peer) event(name string, payload any) {
	p.send(map[string]any{"type": "event", "event": name, "payload": payload})
}

func (p *peer) ok(id string, payload any) {
	p.send(map[string]any{"type": "res", "id": id, "ok": true, "payload": payload})
}

func (p *peer) fail(id string, payload any, e errorShape) {
	f := map[string]any{"type": "res", "id": id, "ok": false, "error": e}
	if payload != nil {
		f["payload"] = payload
	}
	p.send(f)
}

// next waits for the client's next frame; false when it is gone.
func (p *peer) next(timeout time.Duration) (inFrame, bool) {
	select {
	case f := <-p.frames:
		return f, true
	case <-p.gone:
		return inFrame{}, false
	case <-time.After(timeout):
		return inFrame{}, false
	}
}

func (o *OpenClaw) serve(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(25 << 20)
	p := newPeer(c)
	nonce := newNonce()
	p.event("connect.challenge", map[string]any{"nonce": nonce, "ts": time.Now().UnixMilli()})
	f, ok := p.next(15 * time.Second)
	if !ok {
		return
	}
	if f.Type != "req" || f.Method != "connect" {
		o.refuse("first request is not connect")
		p.fail(f.ID, nil, errorShape{Code: "INVALID_REQUEST", Message: "invalid handshake: first request must be connect"})
		_ = c.Close(websocket.StatusPolicyViolation, "invalid handshake")
		return
	}
	if e := o.verify(f.Params, nonce); e != nil {
		o.refuse(e.Message)
		p.fail(f.ID, nil, *e)
		_ = c.Close(websocket.StatusPolicyViolation, e.Message)
		return
	}
	if o.unavailable.Load() {
		o.refuse("unavailable")
		p.fail(f.ID, nil, errorShape{Code: "UNAVAILABLE", Message: "gateway is starting", Retryable: true, RetryAfterMS: 500,
			Details: map[string]any{"reason": "startup-sidecars"}})
		return
	}
	o.mu.Lock()
	o.connects++
	o.mu.Unlock()
	p.ok(f.ID, map[string]any{
		"type": "hello-ok", "protocol": OpenClawProtocol,
		"server":   map[string]any{"version": "fake", "connId": newNonce()},
		"features": map[string]any{"methods": []string{"agent", "chat.abort"}, "events": []string{"agent", "tick"}},
		"snapshot": map[string]any{},
		"auth":     map[string]any{"role": "operator", "scopes": o.device.Scopes},
		"policy":   map[string]any{"maxPayload": 25 << 20, "maxBufferedBytes": 50 << 20, "tickIntervalMs": 15000},
	})
	for {
		f, ok := p.next(time.Minute)
		if !ok {
			return
		}
		switch f.Method {
		case "agent":
			if !o.agent(p, f) {
				return
			}
		case "chat.abort":
			o.abort(p, f)
		default:
			p.fail(f.ID, nil, errorShape{Code: "INVALID_REQUEST", Message: "unknown method: " + f.Method})
		}
	}
}

// verify checks connect params as the gateway does; nil when the device
// may connect.
func (o *OpenClaw) verify(raw json.RawMessage, nonce string) *errorShape {
	invalid := func(msg, code, reason string) *errorShape {
		return &errorShape{Code: "INVALID_REQUEST", Message: msg, Details: map[string]any{"code": code, "reason": reason}}
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return &errorShape{Code: "INVALID_REQUEST", Message: "invalid connect params"}
	}
	allowed := []string{"minProtocol", "maxProtocol", "client", "caps", "commands", "permissions", "pathEnv", "role", "scopes", "device", "auth", "locale", "userAgent", "transports"}
	for k := range keys {
		if !slices.Contains(allowed, k) {
			return &errorShape{Code: "INVALID_REQUEST", Message: "invalid connect params: must NOT have additional properties: " + k}
		}
	}
	var p struct {
		MinProtocol int `json:"minProtocol"`
		MaxProtocol int `json:"maxProtocol"`
		Client      struct {
			ID, Version, Platform, Mode, DeviceFamily string
		} `json:"client"`
		Role   string   `json:"role"`
		Scopes []string `json:"scopes"`
		Device *struct {
			ID        string `json:"id"`
			PublicKey string `json:"publicKey"`
			Signature string `json:"signature"`
			SignedAt  int64  `json:"signedAt"`
			Nonce     string `json:"nonce"`
		} `json:"device"`
		Auth struct {
			Token string `json:"token"`
		} `json:"auth"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return &errorShape{Code: "INVALID_REQUEST", Message: "invalid connect params"}
	}
	switch {
	case p.MinProtocol > OpenClawProtocol || p.MaxProtocol < OpenClawProtocol:
		return &errorShape{Code: "INVALID_REQUEST", Message: fmt.Sprintf("protocol mismatch: server speaks %d, client %d..%d", OpenClawProtocol, p.MinProtocol, p.MaxProtocol)}
	case p.Client.ID == "" || p.Client.Version == "" || p.Client.Platform == "" || p.Client.Mode == "":
		return &errorShape{Code: "INVALID_REQUEST", Message: "invalid connect params: client"}
	case p.Device == nil:
		return &errorShape{Code: "NOT_PAIRED", Message: "device identity required"}
	case p.Device.Nonce == "":
		return invalid("device nonce required", "DEVICE_AUTH_NONCE_REQUIRED", "device-nonce-missing")
	case p.Device.Nonce != nonce:
		return invalid("device nonce mismatch", "DEVICE_AUTH_NONCE_MISMATCH", "device-nonce-mismatch")
	}
	pub, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p.Device.PublicKey, "="))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return invalid("device public key invalid", "DEVICE_AUTH_PUBLIC_KEY_INVALID", "device-public-key")
	}
	sum := sha256.Sum256(pub)
	if hex.EncodeToString(sum[:]) != p.Device.ID {
		return invalid("device identity mismatch", "DEVICE_AUTH_DEVICE_ID_MISMATCH", "device-id-mismatch")
	}
	if p.Device.ID != o.device.DeviceID || !ed25519.PublicKey(pub).Equal(o.device.Public) {
		return &errorShape{Code: "NOT_PAIRED", Message: "pairing required", Details: map[string]any{"code": "PAIRING_REQUIRED"}}
	}
	if d := time.Since(time.UnixMilli(p.Device.SignedAt)); d > maxSkew || d < -maxSkew {
		return invalid("device signature expired", "DEVICE_AUTH_SIGNATURE_EXPIRED", "device-signature-stale")
	}
	payload := strings.Join([]string{"v3", p.Device.ID, p.Client.ID, p.Client.Mode, p.Role, strings.Join(p.Scopes, ","),
		strconv.FormatInt(p.Device.SignedAt, 10), p.Auth.Token, p.Device.Nonce, strings.ToLower(p.Client.Platform), strings.ToLower(p.Client.DeviceFamily)}, "|")
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p.Device.Signature, "="))
	if err != nil {
		sig, err = base64.StdEncoding.DecodeString(p.Device.Signature)
	}
	if err != nil || !ed25519.Verify(pub, []byte(payload), sig) {
		return invalid("device signature invalid", "DEVICE_AUTH_SIGNATURE_INVALID", "device-signature")
	}
	if p.Auth.Token != o.device.Token {
		return &errorShape{Code: "INVALID_REQUEST", Message: "unauthorized: gateway token mismatch", Details: map[string]any{"code": "AUTH_TOKEN_MISMATCH"}}
	}
	if p.Role != "operator" || !slices.Contains(p.Scopes, "operator.write") {
		return &errorShape{Code: "FORBIDDEN", Message: "missing scope: operator.write"}
	}
	return nil
}

// agentParams are the keys OpenClaw's AgentParams schema allows.
var agentParams = []string{"message", "agentId", "to", "replyTo", "sessionId", "sessionKey", "model", "thinking", "deliver",
	"attachments", "channel", "replyChannel", "accountId", "replyAccountId", "threadId", "groupId", "groupChannel",
	"groupSpace", "timeout", "lane", "extraSystemPrompt", "idempotencyKey", "label", "spawnedBy"}

// agent serves one agent request; false when the connection is done.
func (o *OpenClaw) agent(p *peer, f inFrame) bool {
	var params map[string]any
	if json.Unmarshal(f.Params, &params) != nil {
		p.fail(f.ID, nil, errorShape{Code: "INVALID_REQUEST", Message: "invalid agent params"})
		return true
	}
	for k := range params {
		if !slices.Contains(agentParams, k) {
			o.refuse("agent param " + k)
			p.fail(f.ID, nil, errorShape{Code: "INVALID_REQUEST", Message: "invalid agent params: must NOT have additional properties: " + k})
			return true
		}
	}
	str := func(k string) string { s, _ := params[k].(string); return s }
	run := Run{AgentID: str("agentId"), SessionKey: str("sessionKey"), Message: str("message"), Params: params}
	idem := str("idempotencyKey")
	switch {
	case strings.TrimSpace(run.Message) == "" || idem == "":
		p.fail(f.ID, nil, errorShape{Code: "INVALID_REQUEST", Message: "invalid agent params: message and idempotencyKey are required"})
		return true
	case !slices.Contains(o.agents, run.AgentID):
		o.refuse("unknown agent " + run.AgentID)
		p.fail(f.ID, nil, errorShape{Code: "INVALID_REQUEST", Message: fmt.Sprintf("invalid agent params: unknown agent id %q", run.AgentID)})
		return true
	}
	if rest, ok := strings.CutPrefix(run.SessionKey, "agent:"); !ok || !strings.HasPrefix(rest, run.AgentID+":") {
		owner, _, _ := strings.Cut(strings.TrimPrefix(run.SessionKey, "agent:"), ":")
		o.refuse("session key of another agent")
		p.fail(f.ID, nil, errorShape{Code: "INVALID_REQUEST", Message: fmt.Sprintf("invalid agent params: agent %q does not match session key agent %q", run.AgentID, owner)})
		return true
	}
	o.mu.Lock()
	run.History = append([]string(nil), o.sessions[run.SessionKey]...)
	o.sessions[run.SessionKey] = append(o.sessions[run.SessionKey], run.Message)
	o.mu.Unlock()
	o.addRun(run)
	p.ok(f.ID, map[string]any{"runId": idem, "status": "accepted", "acceptedAt": time.Now().UnixMilli()})
	a := o.answer(run)
	for i := range a.Events {
		p.event("tick", map[string]any{"ts": time.Now().UnixMilli()})
		p.event("agent", map[string]any{"runId": idem, "seq": i, "stream": "assistant", "ts": time.Now().UnixMilli(), "data": map[string]any{"text": "thinking…"}})
	}
	if a.Drop {
		_ = p.c.CloseNow()
		return false
	}
	if !o.wait(p, a.Delay) {
		o.mu.Lock()
		o.cancelled++
		o.mu.Unlock()
		return false
	}
	if a.Error != "" {
		code := a.Code
		if code == "" {
			code = "UNAVAILABLE"
		}
		p.fail(f.ID, map[string]any{"runId": idem, "status": "error", "summary": a.Error}, errorShape{Code: code, Message: a.Error})
		return true
	}
	payloads := make([]map[string]any, len(a.Texts))
	for i, t := range a.Texts {
		payloads[i] = map[string]any{"text": t}
	}
	p.ok(f.ID, map[string]any{"runId": idem, "status": "ok", "summary": "completed", "result": map[string]any{
		"payloads": payloads,
		"meta": map[string]any{"durationMs": 42, "agentMeta": map[string]any{
			"sessionId": newNonce(), "provider": a.Provider, "model": a.Model,
			"usage": map[string]any{"input": a.InputTokens, "output": a.OutTokens, "cacheRead": 0, "cacheWrite": 0, "total": a.InputTokens + a.OutTokens},
		}},
	}})
	return true
}

// wait holds a run for d, serving chat.abort meanwhile; false when the
// client went away (or aborted) first.
func (o *OpenClaw) wait(p *peer, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-p.gone:
			return false
		case f := <-p.frames:
			if f.Method == "chat.abort" {
				o.abort(p, f)
				return false
			}
			p.fail(f.ID, nil, errorShape{Code: "UNAVAILABLE", Message: "a run is in flight"})
		}
	}
}

func (o *OpenClaw) abort(p *peer, f inFrame) {
	var params struct {
		SessionKey string `json:"sessionKey"`
		RunID      string `json:"runId"`
	}
	_ = json.Unmarshal(f.Params, &params)
	o.mu.Lock()
	o.aborts = append(o.aborts, params.RunID)
	o.mu.Unlock()
	p.ok(f.ID, map[string]any{"ok": true, "aborted": true})
}
