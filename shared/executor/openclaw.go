package executor

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/secret"
)

// The OpenClaw Gateway protocol as Stepline speaks it (OpenClaw's
// docs/gateway/protocol.md and src/gateway/protocol/schema): JSON text
// frames, {type:"req", id, method, params}, {type:"res", id, ok,
// payload|error{code, message, details, retryable, retryAfterMs}},
// {type:"event", event, payload}.
const (
	openClawMinProtocol = 3
	openClawMaxProtocol = 4
	openClawClientID    = "gateway-client" // a backend client of the gateway
	openClawClientMode  = "backend"
	openClawRole        = "operator"
	// MaxIdentityFileBytes bounds device.json and device-auth.json.
	MaxIdentityFileBytes = 64 << 10
)

// Identity files, as OpenClaw writes them in ~/.openclaw/identity.
const (
	DeviceFile     = "device.json"
	DeviceAuthFile = "device-auth.json"
)

// defaultOpenClawScopes are asked for when device-auth.json names none:
// an agent run needs operator.write.
var defaultOpenClawScopes = []string{"operator.read", "operator.write"}

// openClawIdentity is a paired device: the Ed25519 key pair that signs
// the gateway's challenge, and the operator token the gateway issued it.
type openClawIdentity struct {
	deviceID string
	key      ed25519.PrivateKey
	token    string
	scopes   []string
}

// openClawIdentity reads the identity a step connects with: from the
// directory rt.Identity when the registry reads identity files (local
// runs), else from the secrets rt.Device and rt.DeviceAuth (the two
// files' contents). Its private key and token join red, so that no
// answer, log or error carries them. Errors are ConfigErrors that name
// the file or secret, never its content.
func (r *Registry) openClawIdentity(ctx context.Context, red *secret.Redactor, rt *agent.Remote) (*openClawIdentity, error) {
	var device, auth []byte
	if r.deps.OpenClawIdentityFiles {
		dir, err := expandHome(rt.Identity, r.deps.Home)
		if err != nil {
			return nil, err
		}
		if device, err = readIdentityFile(dir, DeviceFile); err != nil {
			return nil, err
		}
		if auth, err = readIdentityFile(dir, DeviceAuthFile); err != nil {
			return nil, err
		}
	} else {
		if rt.Device == "" || rt.DeviceAuth == "" {
			return nil, fault.Errorf[fault.ConfigError]("openclaw: no identity: the step names no identity secrets (recompile it)")
		}
		d, err := secret.Expand(ctx, red, rt.Device)
		if err != nil {
			return nil, fmt.Errorf("openclaw: identity %s: %w", DeviceFile, err)
		}
		a, err := secret.Expand(ctx, red, rt.DeviceAuth)
		if err != nil {
			return nil, fmt.Errorf("openclaw: identity %s: %w", DeviceAuthFile, err)
		}
		device, auth = []byte(d), []byte(a)
	}
	id, err := parseOpenClawIdentity(device, auth)
	if id != nil {
		red.Add(id.token)
	}
	return id, err
}

// expandHome writes a leading ~ of dir out as home.
func expandHome(dir, home string) (string, error) {
	if dir != "~" && !strings.HasPrefix(dir, "~/") {
		return dir, nil
	}
	if home == "" {
		return "", fault.Errorf[fault.ConfigError]("openclaw: identity %s: no home directory is known to expand ~", dir)
	}
	return filepath.Join(home, strings.TrimPrefix(dir, "~")), nil
}

// readIdentityFile reads one identity file within MaxIdentityFileBytes.
func readIdentityFile(dir, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fault.Errorf[fault.ConfigError]("openclaw: identity file %s not found: OpenClaw writes its device identity to ~/.openclaw/identity where it is installed and paired; copy that directory here, or set executors.openclaw.identity in stepline.yaml", path)
		}
		return nil, fault.Errorf[fault.ConfigError]("openclaw: identity file %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxIdentityFileBytes+1))
	if err != nil {
		return nil, fault.Errorf[fault.ConfigError]("openclaw: identity file %s: %v", path, errors.Unwrap(err))
	}
	if len(b) > MaxIdentityFileBytes {
		return nil, fault.Errorf[fault.ConfigError]("openclaw: identity file %s is larger than %d KiB", path, MaxIdentityFileBytes>>10)
	}
	return b, nil
}

// parseOpenClawIdentity reads device.json ({deviceId, privateKeyPem:
// PKCS#8 Ed25519}) and device-auth.json ({tokens: {operator: {token,
// scopes}}}). The device id must be the SHA-256 of the public key, as the
// gateway checks. The identity is returned with an error when its token
// is known, so that the caller can scrub it.
func parseOpenClawIdentity(device, auth []byte) (*openClawIdentity, error) {
	var d struct {
		DeviceID      string `json:"deviceId"`
		PrivateKeyPEM string `json:"privateKeyPem"`
	}
	if len(device) > MaxIdentityFileBytes || json.Unmarshal(device, &d) != nil {
		return nil, fault.Errorf[fault.ConfigError]("openclaw: identity %s is not a JSON object of at most %d KiB", DeviceFile, MaxIdentityFileBytes>>10)
	}
	var a struct {
		Tokens map[string]struct {
			Token  string   `json:"token"`
			Scopes []string `json:"scopes"`
		} `json:"tokens"`
	}
	if len(auth) > MaxIdentityFileBytes || json.Unmarshal(auth, &a) != nil {
		return nil, fault.Errorf[fault.ConfigError]("openclaw: identity %s is not a JSON object of at most %d KiB", DeviceAuthFile, MaxIdentityFileBytes>>10)
	}
	op := a.Tokens[openClawRole]
	if strings.TrimSpace(op.Token) == "" {
		return nil, fault.Errorf[fault.ConfigError]("openclaw: identity %s holds no operator token (tokens.operator.token): pair the device with the gateway as an operator", DeviceAuthFile)
	}
	id := &openClawIdentity{token: op.Token, scopes: op.Scopes}
	if len(id.scopes) == 0 {
		id.scopes = defaultOpenClawScopes
	}
	block, _ := pem.Decode([]byte(d.PrivateKeyPEM))
	if block == nil {
		return id, fault.Errorf[fault.ConfigError]("openclaw: identity %s: privateKeyPem is not a PEM block", DeviceFile)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	key, isEd := k.(ed25519.PrivateKey)
	if err != nil || !isEd {
		return id, fault.Errorf[fault.ConfigError]("openclaw: identity %s: privateKeyPem is not a PKCS#8 Ed25519 private key", DeviceFile)
	}
	id.key = key
	sum := sha256.Sum256(key.Public().(ed25519.PublicKey))
	fingerprint := hex.EncodeToString(sum[:])
	switch {
	case d.DeviceID == "":
		id.deviceID = fingerprint
	case !strings.EqualFold(d.DeviceID, fingerprint):
		return id, fault.Errorf[fault.ConfigError]("openclaw: identity %s: deviceId is not the fingerprint of its key (the gateway would refuse it)", DeviceFile)
	default:
		id.deviceID = strings.ToLower(d.DeviceID)
	}
	return id, nil
}

// OpenClawSignaturePayload is the text a device signs to answer an
// OpenClaw gateway's challenge (version 3 of the device auth payload):
// v3|deviceId|clientId|clientMode|role|scopes|signedAtMs|token|nonce|platform|deviceFamily,
// scopes joined with commas, platform and device family lowercased.
func OpenClawSignaturePayload(deviceID, clientID, clientMode, role string, scopes []string, signedAtMS int64, token, nonce, platform, deviceFamily string) string {
	return strings.Join([]string{"v3", deviceID, clientID, clientMode, role, strings.Join(scopes, ","),
		strconv.FormatInt(signedAtMS, 10), token, nonce, lowerASCII(platform), lowerASCII(deviceFamily)}, "|")
}

func lowerASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, strings.TrimSpace(s))
}

// openClawProto speaks the OpenClaw Gateway protocol: the challenge, a
// signed connect as an operator backend, one agent request.
type openClawProto struct {
	id  *openClawIdentity
	now func() time.Time
}

// connectParams are OpenClaw's ConnectParams, as much as a backend sends.
type connectParams struct {
	MinProtocol int            `json:"minProtocol"`
	MaxProtocol int            `json:"maxProtocol"`
	Client      connectClient  `json:"client"`
	Role        string         `json:"role"`
	Scopes      []string       `json:"scopes"`
	Device      *connectDevice `json:"device,omitempty"`
	Auth        *connectAuth   `json:"auth,omitempty"`
}

type connectClient struct {
	ID       string `json:"id"`
	Version  string `json:"version"`
	Platform string `json:"platform"`
	Mode     string `json:"mode"`
}

type connectDevice struct {
	ID        string `json:"id"`
	PublicKey string `json:"publicKey"` // the raw 32-byte key, base64url
	Signature string `json:"signature"` // base64url
	SignedAt  int64  `json:"signedAt"`  // ms since the epoch
	Nonce     string `json:"nonce"`
}

type connectAuth struct {
	Token string `json:"token,omitempty"`
}

func (p *openClawProto) handshake(ctx context.Context, s *session) error {
	var nonce string
	for nonce == "" {
		f, err := s.next(ctx, "waiting for the gateway's challenge")
		if err != nil {
			return err
		}
		if f.Type != "event" {
			return fault.Errorf[fault.ExecutorUnavailable]("%s: %s sent a %q frame before its challenge: is it an OpenClaw gateway?", s.name, displayURL(s.url), clip(f.Type, 40))
		}
		if f.Event != "connect.challenge" {
			continue
		}
		var c struct {
			Nonce string `json:"nonce"`
		}
		if json.Unmarshal(f.Payload, &c) != nil || strings.TrimSpace(c.Nonce) == "" {
			return fault.Errorf[fault.ExecutorUnavailable]("%s: the gateway's challenge holds no nonce", s.name)
		}
		nonce = c.Nonce
	}
	now := time.Now
	if p.now != nil {
		now = p.now
	}
	signedAt := now().UnixMilli()
	platform := runtime.GOOS
	msg := OpenClawSignaturePayload(p.id.deviceID, openClawClientID, openClawClientMode, openClawRole, p.id.scopes, signedAt, p.id.token, nonce, platform, "")
	params := connectParams{
		MinProtocol: openClawMinProtocol, MaxProtocol: openClawMaxProtocol,
		Client: connectClient{ID: openClawClientID, Version: ClientVersion, Platform: platform, Mode: openClawClientMode},
		Role:   openClawRole, Scopes: p.id.scopes,
		Device: &connectDevice{
			ID:        p.id.deviceID,
			PublicKey: base64.RawURLEncoding.EncodeToString(p.id.key.Public().(ed25519.PublicKey)),
			Signature: base64.RawURLEncoding.EncodeToString(ed25519.Sign(p.id.key, []byte(msg))),
			SignedAt:  signedAt, Nonce: nonce,
		},
		Auth: &connectAuth{Token: p.id.token},
	}
	id, err := s.send(ctx, "connect", params)
	if err != nil {
		return err
	}
	f, err := s.response(ctx, id, "connecting", nil)
	if err != nil {
		return err
	}
	if f.OK {
		return nil
	}
	msgText := f.Error.text()
	if f.Error != nil && (f.Error.Retryable || f.Error.Code == "UNAVAILABLE") {
		return fault.Errorf[fault.ExecutorUnavailable]("%s: the gateway cannot take the connection now: %s", s.name, msgText)
	}
	return fault.Errorf[fault.ConfigError]("%s: the gateway refused the device identity: %s", s.name, msgText)
}

// openClawAgentParams are OpenClaw's AgentParams, as a pipeline step
// sends them.
type openClawAgentParams struct {
	Message           string `json:"message"`
	AgentID           string `json:"agentId"`
	SessionKey        string `json:"sessionKey"`
	IdempotencyKey    string `json:"idempotencyKey"`
	Model             string `json:"model,omitempty"`
	Thinking          string `json:"thinking,omitempty"`
	ExtraSystemPrompt string `json:"extraSystemPrompt,omitempty"`
	Timeout           int64  `json:"timeout,omitempty"` // seconds the gateway gives the run
}

// openClawRunPayload is the payload of an agent response: accepted, then
// ok with the result, or error.
type openClawRunPayload struct {
	RunID   string `json:"runId"`
	Status  string `json:"status"`
	Summary string `json:"summary"`
	Result  *struct {
		Payloads []payload `json:"payloads"`
		Meta     struct {
			Aborted   bool `json:"aborted"`
			AgentMeta struct {
				Provider string          `json:"provider"`
				Model    string          `json:"model"`
				Usage    json.RawMessage `json:"usage"`
			} `json:"agentMeta"`
		} `json:"meta"`
	} `json:"result"`
}

func (p *openClawProto) run(ctx context.Context, s *session, rq remoteRequest) (remoteResult, error) {
	params := openClawAgentParams{
		Message: rq.message, AgentID: rq.agentID, SessionKey: rq.sessionKey, IdempotencyKey: rq.runID,
		Model: rq.model, Thinking: rq.thinkingLevel, ExtraSystemPrompt: rq.system,
	}
	if !rq.deadline.IsZero() {
		params.Timeout = max(int64(time.Until(rq.deadline)/time.Second), 1)
	}
	id, err := s.send(ctx, "agent", params)
	if err != nil {
		return remoteResult{}, err
	}
	accepted := false
	for {
		f, err := s.response(ctx, id, "waiting for the agent's result", func(f frame) error {
			if f.Event == "shutdown" {
				return fault.Errorf[fault.ExecutorUnavailable]("%s: the gateway is shutting down", s.name)
			}
			return nil
		})
		if err != nil {
			return remoteResult{}, err
		}
		var pl openClawRunPayload
		_ = json.Unmarshal(f.Payload, &pl)
		if !f.OK {
			return remoteResult{}, openClawRunError(s.name, rq.agentID, f.Error, accepted || pl.Status == "error", pl.Summary)
		}
		switch pl.Status {
		case "accepted":
			accepted = true
			continue
		case "ok":
		default:
			return remoteResult{}, fault.Errorf[fault.ExecutorUnavailable]("%s: agent %q: unexpected result status %q", s.name, rq.agentID, clip(pl.Status, 40))
		}
		if pl.Result == nil {
			return remoteResult{}, fault.Errorf[fault.ExecutorUnavailable]("%s: agent %q: the final frame holds no result", s.name, rq.agentID)
		}
		res := remoteResult{runID: pl.RunID, text: payloadText(pl.Result.Payloads), model: pl.Result.Meta.AgentMeta.Model,
			provider: pl.Result.Meta.AgentMeta.Provider, usage: usageOf(pl.Result.Meta.AgentMeta.Usage)}
		if pl.Result.Meta.Aborted && res.text == "" {
			return remoteResult{}, fault.Errorf[fault.ExecutorTimeout]("%s: agent %q: the gateway aborted the run before it answered", s.name, rq.agentID)
		}
		res.raw = auditRaw(f.Payload, false)
		return res, nil
	}
}

// openClawRunError maps an agent request's error: before the run was
// accepted, a refusal (an unknown agent, a session key of another agent:
// ExecutorRejected; missing scopes or pairing: ConfigError); after it,
// the run's own failure, an executor error with its message. The error
// code decides where OpenClaw gives one: UNAVAILABLE or a retryable
// error is ExecutorUnavailable, AGENT_TIMEOUT ExecutorTimeout.
func openClawRunError(name, agentID string, e *frameError, final bool, summary string) error {
	msg := e.text()
	if e == nil && summary != "" {
		msg = clip(summary, 300)
	}
	what := "refused the request"
	if final {
		what = "failed"
	}
	text := fmt.Sprintf("%s: agent %q %s: %s", name, agentID, what, msg)
	code := ""
	if e != nil {
		code = e.Code
	}
	switch {
	case code == "AGENT_TIMEOUT":
		return &fault.ExecutorTimeout{Msg: text}
	case e != nil && e.Retryable, code == "UNAVAILABLE":
		return &fault.ExecutorUnavailable{Msg: text}
	case code == "FORBIDDEN", code == "NOT_PAIRED", code == "NOT_LINKED":
		return &fault.ConfigError{Msg: text}
	}
	return &fault.ExecutorRejected{Msg: text}
}

// abort asks the gateway to stop the run (chat.abort), best effort: the
// connection closing right after does not end an OpenClaw run by itself.
func (p *openClawProto) abort(s *session, rq remoteRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	_, _ = s.send(ctx, "chat.abort", map[string]string{"sessionKey": rq.sessionKey, "runId": rq.runID})
}
