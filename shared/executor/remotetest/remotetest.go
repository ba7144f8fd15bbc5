// Package remotetest runs fake remote agent runtimes on loopback for
// tests: an OpenClaw gateway and a remote agent gateway, each speaking
// its WebSocket protocol as the sources that define it do (OpenClaw's
// docs/gateway/protocol.md and protocol schema; the reference gateway's
// /rpc handler), with the checks those servers make: the OpenClaw
// gateway verifies the Ed25519 device signature over the v3 payload, the
// device id's fingerprint, the nonce, the signature's age and the
// operator token, and refuses agent params outside its schema; the
// remote gateway checks the token and the session key's agent.
//
// What a run answers is the test's (an Answer per Run): its text, model,
// usage and trace, or an error, a delay, a dropped connection. The fakes
// record what they were sent, which aborts and disconnects they saw.
package remotetest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Identity is a paired OpenClaw device: its key pair and operator token,
// and the two files OpenClaw writes for it.
type Identity struct {
	DeviceID       string
	Public         ed25519.PublicKey
	Private        ed25519.PrivateKey
	Token          string
	Scopes         []string
	DeviceJSON     []byte // device.json
	DeviceAuthJSON []byte // device-auth.json
}

// NewIdentity makes a device with a fresh Ed25519 key pair and an
// operator token, as OpenClaw's pairing leaves it.
func NewIdentity(token string) Identity {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(pub)
	id := Identity{DeviceID: hex.EncodeToString(sum[:]), Public: pub, Private: priv, Token: token,
		Scopes: []string{"operator.read", "operator.write"}}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		panic(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err)
	}
	id.DeviceJSON, _ = json.MarshalIndent(map[string]any{
		"version":       1,
		"deviceId":      id.DeviceID,
		"publicKeyPem":  string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})),
		"privateKeyPem": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"createdAtMs":   time.Now().UnixMilli(),
	}, "", "  ")
	id.DeviceAuthJSON, _ = json.MarshalIndent(map[string]any{
		"version":  1,
		"deviceId": id.DeviceID,
		"tokens": map[string]any{"operator": map[string]any{
			"token": token, "role": "operator", "scopes": id.Scopes, "updatedAtMs": time.Now().UnixMilli(),
		}},
	}, "", "  ")
	return id
}

// WriteDir writes device.json and device-auth.json into dir (created),
// readable by the owner only, as OpenClaw does.
func (id Identity) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "device.json"), id.DeviceJSON, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "device-auth.json"), id.DeviceAuthJSON, 0o600)
}

// Run is one agent request a fake received.
type Run struct {
	AgentID    string
	SessionKey string
	Message    string
	// Params are the request's params as sent.
	Params map[string]any
	// History is what the session was sent before this request (the
	// OpenClaw gateway keeps a session's conversation).
	History []string
}

// Answer is how a fake answers a Run.
type Answer struct {
	// Texts are the result's payloads, in order (one for the remote
	// gateway).
	Texts                  []string
	Model, Provider        string
	AgentVersion           string // the remote gateway only
	InputTokens, OutTokens int
	// Trace is the remote gateway's trace events, streamed as trace_event
	// frames and repeated in the result.
	Trace []map[string]any
	// Delay holds the final frame back; a client that gives up first
	// disconnects.
	Delay time.Duration
	// Drop closes the connection after accepting, without a final frame.
	Drop bool
	// Error fails the run after accepting, with this message (and Code,
	// on OpenClaw: UNAVAILABLE when empty).
	Error, Code string
	// Events are event frames sent between accepted and the result (on
	// OpenClaw: ticks and agent stream events the client must skip).
	Events int
}

// record keeps what a fake saw, for the test to read.
type record struct {
	mu        sync.Mutex
	runs      []Run
	refusals  []string
	aborts    []string
	cancelled int
	connects  int
	sessions  map[string][]string
}

func (r *record) addRun(run Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, run)
}

func (r *record) refuse(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refusals = append(r.refusals, why)
}

// Runs are the agent requests received, in order.
func (r *record) Runs() []Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Run(nil), r.runs...)
}

// Refusals are the reasons connects or requests were refused, in order.
func (r *record) Refusals() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refusals...)
}

// Aborts are the run ids a client asked to abort (OpenClaw's chat.abort).
func (r *record) Aborts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.aborts...)
}

// Cancelled counts the runs a client's disconnect ended before their
// result.
func (r *record) Cancelled() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelled
}

// Connects counts the connections that authenticated.
func (r *record) Connects() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.connects
}

func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
