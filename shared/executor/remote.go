package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/coder/websocket"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/telemetry"
)

// Bounds and defaults of the remote agent runtimes (openclaw, a remote
// agent gateway).
const (
	// HandshakeTimeout bounds the challenge and the answer to connect.
	HandshakeTimeout = 15 * time.Second
	// DefaultRemotePing is how often an open connection is pinged; a ping
	// unanswered within RemotePingTimeout is a dropped connection.
	DefaultRemotePing = 30 * time.Second
	RemotePingTimeout = 20 * time.Second
	// MaxFrameBytes bounds one frame read from a remote runtime.
	MaxFrameBytes = MaxBodyBytes
	// MaxRemoteTraceEvents bounds the trace events kept of one remote run;
	// later events are left out.
	MaxRemoteTraceEvents = 10000
	// MaxSessionKeyBytes bounds a rendered session key.
	MaxSessionKeyBytes = 512
	// abortTimeout bounds the best-effort abort sent when a run is given up.
	abortTimeout = time.Second
)

// ClientVersion is the client version Stepline announces to an OpenClaw
// gateway.
const ClientVersion = "stepline"

// remoteModel is an agent.Model whose every turn is one run of the agent
// on a remote runtime: connect, authenticate, send the message, read the
// frames until the final result.
type remoteModel struct {
	reg   *Registry
	call  Call
	agent *agent.Resolved
}

var _ agent.Model = (*remoteModel)(nil)

// remoteRequest is what one turn asks of the runtime.
type remoteRequest struct {
	agentID       string
	sessionKey    string
	message       string
	system        string // the answer's instruction, for a runtime that takes one apart
	model         string
	thinkingLevel string
	traceMax      int // characters of a tool result kept in the trace
	traceMaxSent  bool
	traceParent   string
	deadline      time.Time // zero: none
	runID         string    // the request's idempotency key (OpenClaw's run id)
}

// remoteResult is a runtime's final answer.
type remoteResult struct {
	runID        string
	text         string
	model        string
	provider     string
	agentVersion string
	usage        llmoutput.Usage
	trace        []agent.Event // nil: the runtime records none
	raw          json.RawMessage
}

// Turn runs the agent once on its runtime. The first turn sends the
// step's prompt; a later one (the structured-output runner's re-ask)
// sends the feedback as a follow-up message in the same session.
func (m *remoteModel) Turn(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	rt := m.agent.Remote
	name := m.runtimeName()
	if rt.URL == "" {
		return agent.ModelReply{}, fault.Errorf[fault.ConfigError]("step %q: %s", m.call.Step, notConfigured(rt.Runtime))
	}
	// A remote run is bounded by the step's timeout alone (and the loop's
	// deadline in ctx), not a model call's default: an agent run may be
	// long.
	a, err := m.reg.begin(ctx, m.call, 0)
	if err != nil {
		return agent.ModelReply{}, err
	}
	defer a.cancel()
	set, issues := settings.ReadRemote(rt.Runtime, a.cfg.Config, settings.ModeCall)
	if err := settings.IssuesError(name, issues); err != nil {
		return agent.ModelReply{}, a.red.Error(err)
	}
	rq, err := m.request(a.ctx, req, set)
	if err != nil {
		return agent.ModelReply{}, a.red.Error(err)
	}
	u, err := secret.Expand(a.ctx, a.red, rt.URL)
	if err != nil {
		return agent.ModelReply{}, a.red.Error(fmt.Errorf("%s: url: %w", name, err))
	}
	if !wsURL(u) {
		return agent.ModelReply{}, fault.Errorf[fault.ConfigError]("%s: url: want an absolute ws, wss, http or https URL", name)
	}
	var res remoteResult
	switch rt.Runtime {
	case agent.RuntimeOpenClaw:
		id, ierr := m.reg.openClawIdentity(a.ctx, a.red, rt)
		if ierr != nil {
			return agent.ModelReply{}, a.red.Error(ierr)
		}
		res, err = m.reg.runRemote(a.ctx, a.red, name, u, rq, &openClawProto{id: id, now: m.reg.deps.Now})
	case agent.RuntimeGateway:
		token, terr := secret.Expand(a.ctx, a.red, rt.Token)
		if terr != nil {
			return agent.ModelReply{}, a.red.Error(fmt.Errorf("%s: token: %w", name, terr))
		}
		res, err = m.reg.runRemote(a.ctx, a.red, name, u, rq, &gatewayProto{token: token})
	default:
		return agent.ModelReply{}, fault.Errorf[fault.ConfigError]("step %q: unknown remote runtime %q", m.call.Step, rt.Runtime)
	}
	if err == nil {
		err = checkUsage(name, res.usage)
	}
	if err != nil {
		return agent.ModelReply{}, a.red.Error(err)
	}
	rep := agent.ModelReply{
		Text:         a.red.Redact(res.text),
		FinishReason: llmoutput.FinishStop,
		Model:        a.red.Redact(res.model),
		Provider:     a.red.Redact(res.provider),
		Usage:        res.usage,
		Raw:          a.red.RedactJSON(res.raw),
		Trace:        res.trace,
		AgentVersion: a.red.Redact(res.agentVersion),
	}
	if rep.Provider == "" {
		rep.Provider = rt.Runtime
	}
	for i := range rep.Trace {
		ev := &rep.Trace[i]
		ev.Content, ev.Name, ev.Reason = a.red.Redact(ev.Content), a.red.Redact(ev.Name), a.red.Redact(ev.Reason)
		ev.Arguments = a.red.RedactJSON(ev.Arguments)
	}
	return rep, nil
}

// runtimeName names the runtime in messages: the step's executor.
func (m *remoteModel) runtimeName() string {
	if m.agent.Remote.Runtime == agent.RuntimeGateway {
		return "gateway (remote agent gateway)"
	}
	return OpenClaw
}

// notConfigured says which setting a remote runtime lacks.
func notConfigured(runtime string) string {
	if runtime == agent.RuntimeGateway {
		return "the remote agent gateway is not configured: set executors.gateway.url in stepline.yaml"
	}
	return "executor openclaw is not configured: set executors.openclaw.url in stepline.yaml"
}

// request builds the turn's request: the session key the step rendered
// (checked: it must start with "agent:<agent>:"), the message, the
// overrides.
func (m *remoteModel) request(ctx context.Context, req agent.ModelRequest, set settings.RemoteConfig) (remoteRequest, error) {
	name := m.agent.Profile.Name
	rq := remoteRequest{agentID: name, model: set.Model, thinkingLevel: req.ThinkingLevel, traceMax: agent.DefaultTraceToolResultMaxChars, runID: newUUID()}
	if set.TraceMax > 0 {
		rq.traceMax, rq.traceMaxSent = set.TraceMax, true
	}
	key := strings.TrimSpace(set.SessionKey)
	prefix := "agent:" + name + ":"
	switch {
	case key == "":
		return rq, fault.Errorf[fault.ConfigError]("step %q: executor_config.session_key rendered empty", m.call.Step)
	case len(key) > MaxSessionKeyBytes:
		return rq, fault.Errorf[fault.ConfigError]("step %q: executor_config.session_key: %d bytes rendered, more than %d", m.call.Step, len(key), MaxSessionKeyBytes)
	case strings.IndexFunc(key, unicode.IsControl) >= 0:
		return rq, fault.Errorf[fault.ConfigError]("step %q: executor_config.session_key holds a control character", m.call.Step)
	case !strings.HasPrefix(key, prefix):
		return rq, fault.Errorf[fault.ConfigError]("step %q: executor_config.session_key must start with %q", m.call.Step, prefix)
	}
	rq.sessionKey = key
	if m.agent.Remote.Runtime == agent.RuntimeOpenClaw {
		// OpenClaw keeps the session's conversation: a re-ask is the
		// feedback alone, and the instruction travels apart.
		rq.message, rq.system = lastUserText(req.Messages), req.System
	} else {
		// The remote gateway's sessions keep no conversation: each message
		// carries the task, the instruction and what came back so far.
		rq.message = flatten(req)
	}
	if strings.TrimSpace(rq.message) == "" {
		return rq, fault.Errorf[fault.ConfigError]("step %q: the prompt rendered empty: an agent needs a message", m.call.Step)
	}
	// The model call's span when tracing is on, else the caller's trace
	// (the step Lambda's X-Ray trace), else a new one.
	rq.traceParent = telemetry.TraceParent(ctx)
	if f := m.reg.deps.TraceParent; f != nil && rq.traceParent == "" {
		rq.traceParent = f(ctx)
	}
	if rq.traceParent == "" {
		rq.traceParent = newTraceParent()
	}
	if dl, ok := ctx.Deadline(); ok {
		rq.deadline = dl
	}
	return rq, nil
}

// lastUserText is the text of the last user message.
func lastUserText(msgs []agent.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == agent.RoleUser {
			return msgs[i].Text
		}
	}
	return ""
}

// flatten writes a conversation as one message: the prompt, the
// instruction, then each earlier answer with the feedback on it.
func flatten(req agent.ModelRequest) string {
	var b strings.Builder
	for i, msg := range req.Messages {
		switch {
		case i == 0:
			b.WriteString(msg.Text)
			if req.System != "" {
				b.WriteString("\n\n")
				b.WriteString(req.System)
			}
		case msg.Role == agent.RoleAssistant:
			b.WriteString("\n\nYour previous answer was:\n\n")
			b.WriteString(msg.Text)
		default:
			b.WriteString("\n\n")
			b.WriteString(msg.Text)
		}
	}
	return b.String()
}

// wsURL reports whether s is an absolute URL a WebSocket client dials.
func wsURL(s string) bool {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || rest == "" || strings.HasPrefix(rest, "/") {
		return false
	}
	switch strings.ToLower(scheme) {
	case "ws", "wss", "http", "https":
		return true
	}
	return false
}

// newTraceParent is a W3C traceparent of a fresh sampled trace.
func newTraceParent() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// remoteProto is one runtime's protocol over an open connection.
type remoteProto interface {
	// handshake answers the challenge and authenticates.
	handshake(ctx context.Context, s *session) error
	// run sends the agent request and reads its frames to the result.
	run(ctx context.Context, s *session, rq remoteRequest) (remoteResult, error)
	// abort asks the runtime to stop the run, best effort, when the
	// client gives it up; the connection closing ends it too.
	abort(s *session, rq remoteRequest)
}

// runRemote dials u and runs rq through proto: the handshake within
// HandshakeTimeout, then the run until ctx ends. Leaving, it closes the
// connection, which ends the run on the remote side.
func (r *Registry) runRemote(ctx context.Context, red *secret.Redactor, name, u string, rq remoteRequest, proto remoteProto) (remoteResult, error) {
	dctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: r.deps.HTTP})
	if err != nil {
		return remoteResult{}, dialError(ctx, dctx, name, u, resp, err)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	conn.SetReadLimit(MaxFrameBytes)
	s := newSession(conn, red, name, u, r.deps.RemotePing)
	defer s.close()
	start := time.Now()
	if err := proto.handshake(dctx, s); err != nil {
		if dctx.Err() != nil && ctx.Err() == nil {
			return remoteResult{}, fault.Errorf[fault.ExecutorTimeout]("%s: %s did not finish the handshake within %s", name, displayURL(u), HandshakeTimeout)
		}
		return remoteResult{}, err
	}
	res, err := proto.run(ctx, s, rq)
	if err != nil && ctx.Err() != nil {
		proto.abort(s, rq)
	}
	r.log.DebugContext(ctx, "remote agent run", "runtime", name, "host", red.Redact(hostOf(u)), "agent", rq.agentID, "duration", time.Since(start), "error", err != nil)
	return res, err
}

// dialError maps a failed dial: no answer in time is ExecutorTimeout, a
// refused or reset connection and a 5xx answer ExecutorUnavailable, an
// answer refusing the client (401, 403, another 4xx: a wrong URL or
// credentials) ConfigError.
func dialError(ctx, dctx context.Context, name, u string, resp *http.Response, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: connect to %s: %w", name, displayURL(u), ctx.Err())
	}
	if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		msg := fmt.Sprintf("%s: %s answered the WebSocket upgrade with HTTP %d", name, displayURL(u), resp.StatusCode)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			return &fault.RateLimited{Msg: msg, RetryAfter: retryAfter(resp.Header, time.Now())}
		case resp.StatusCode >= 500, resp.StatusCode == http.StatusRequestTimeout:
			return &fault.ExecutorUnavailable{Msg: msg}
		case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
			return &fault.ConfigError{Msg: msg + ": check the credentials"}
		case resp.StatusCode >= 400:
			return &fault.ConfigError{Msg: msg + ": check the URL"}
		}
		return &fault.ExecutorUnavailable{Msg: msg}
	}
	if dctx.Err() != nil {
		return fault.Errorf[fault.ExecutorTimeout]("%s: no connection to %s within %s", name, displayURL(u), HandshakeTimeout)
	}
	return fault.Errorf[fault.ExecutorUnavailable]("%s: cannot connect to %s: %v", name, displayURL(u), causeOf(err))
}

// causeOf is the innermost error of a dial's chain, without the library's
// and net/url's wrappings that repeat the URL.
func causeOf(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// session is an open connection: one goroutine reads frames (answering
// pings), another pings; next hands frames out in order.
type session struct {
	conn   *websocket.Conn
	red    *secret.Redactor
	name   string // the runtime, for messages
	url    string
	frames chan readResult
	lost   chan error // a ping that got no pong
	done   chan struct{}
	seq    int
}

type readResult struct {
	data []byte
	err  error
}

func newSession(conn *websocket.Conn, red *secret.Redactor, name, u string, ping time.Duration) *session {
	// A few frames are buffered so that reading (which answers pings)
	// goes on while the last frame is handled.
	s := &session{conn: conn, red: red, name: name, url: u, frames: make(chan readResult, 16), lost: make(chan error, 1), done: make(chan struct{})}
	go s.read()
	if ping == 0 {
		ping = DefaultRemotePing
	}
	if ping > 0 {
		go s.ping(ping)
	}
	return s
}

func (s *session) read() {
	for {
		_, data, err := s.conn.Read(context.Background())
		select {
		case s.frames <- readResult{data, err}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *session) ping(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(RemotePingTimeout, 2*every))
		err := s.conn.Ping(ctx)
		cancel()
		if err != nil {
			select {
			case s.lost <- err:
			default:
			}
			return
		}
	}
}

// close ends the session and the connection; the remote side sees the
// client go, which ends a run still going.
func (s *session) close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	_ = s.conn.CloseNow()
}

// frame is what a runtime sends: a response to a request, or an event.
type frame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	OK      bool            `json:"ok"`
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
	Error   *frameError     `json:"error"`
}

// frameError is a response's error (OpenClaw's ErrorShape; the remote
// gateway sends message alone).
type frameError struct {
	Code         string          `json:"code"`
	Message      string          `json:"message"`
	Details      json.RawMessage `json:"details"`
	Retryable    bool            `json:"retryable"`
	RetryAfterMS int64           `json:"retryAfterMs"`
}

func (e *frameError) text() string {
	if e == nil {
		return "no reason given"
	}
	msg := clip(strings.TrimSpace(e.Message), 300)
	if msg == "" {
		msg = "no reason given"
	}
	var d struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(e.Details, &d) == nil && d.Code != "" {
		msg += " (" + clip(d.Code, 60) + ")"
	} else if e.Code != "" {
		msg += " (" + clip(e.Code, 60) + ")"
	}
	return msg
}

// reqFrame is a frame Stepline sends.
type reqFrame struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params"`
}

// send writes a request and returns its id.
func (s *session) send(ctx context.Context, method string, params any) (string, error) {
	s.seq++
	id := fmt.Sprintf("stepline-%d-%s", s.seq, newUUID()[:8])
	b, err := json.Marshal(reqFrame{Type: "req", ID: id, Method: method, Params: params})
	if err != nil {
		return "", fmt.Errorf("%s: encode %s: %w", s.name, method, err)
	}
	if err := s.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return "", s.lostErr(ctx, "sending "+method, err)
	}
	return id, nil
}

// next returns the next frame, its text scrubbed of the call's secrets
// before it is parsed. Errors: ctx's, a lost connection
// (ExecutorUnavailable), a frame that is not JSON (ExecutorUnavailable).
func (s *session) next(ctx context.Context, doing string) (frame, error) {
	select {
	case <-ctx.Done():
		return frame{}, fmt.Errorf("%s: %s: %w", s.name, doing, ctx.Err())
	case err := <-s.lost:
		return frame{}, fault.Errorf[fault.ExecutorUnavailable]("%s: the connection to %s was lost while %s: no answer to a ping (%v)", s.name, displayURL(s.url), doing, err)
	case rr := <-s.frames:
		if rr.err != nil {
			return frame{}, s.lostErr(ctx, doing, rr.err)
		}
		data := []byte(s.red.Redact(string(rr.data)))
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			return frame{}, fault.Errorf[fault.ExecutorUnavailable]("%s: a frame that is not JSON while %s: %s", s.name, doing, clip(strings.ToValidUTF8(string(data), "\uFFFD"), 120))
		}
		return f, nil
	}
}

// lostErr maps a read or write failure: ctx's end stays ctx's error; a
// frame over the limit, the remote side closing or the connection
// breaking is ExecutorUnavailable, except a policy-violation close
// (1008), which is how a gateway refuses credentials: ConfigError.
func (s *session) lostErr(ctx context.Context, doing string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %s: %w", s.name, doing, ctx.Err())
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		msg := fmt.Sprintf("%s: %s closed the connection while %s: %d %s", s.name, displayURL(s.url), doing, int(ce.Code), clip(s.red.Redact(ce.Reason), 200))
		switch ce.Code {
		case websocket.StatusPolicyViolation:
			return &fault.ConfigError{Msg: msg}
		case websocket.StatusMessageTooBig:
			return &fault.ExecutorUnavailable{Msg: fmt.Sprintf("%s: a frame larger than %d bytes while %s", s.name, MaxFrameBytes, doing)}
		}
		return &fault.ExecutorUnavailable{Msg: msg}
	}
	if strings.Contains(err.Error(), "read limited") {
		return fault.Errorf[fault.ExecutorUnavailable]("%s: a frame larger than %d bytes while %s", s.name, MaxFrameBytes, doing)
	}
	return fault.Errorf[fault.ExecutorUnavailable]("%s: the connection to %s broke while %s: %v", s.name, displayURL(s.url), doing, causeOf(err))
}

// response waits for the response to request id, skipping events and
// other responses; each event is handed to onEvent (nil: skipped).
func (s *session) response(ctx context.Context, id, doing string, onEvent func(frame) error) (frame, error) {
	for {
		f, err := s.next(ctx, doing)
		if err != nil {
			return f, err
		}
		switch {
		case f.Type == "res" && f.ID == id:
			return f, nil
		case f.Type == "event" && onEvent != nil:
			if err := onEvent(f); err != nil {
				return f, err
			}
		}
	}
}

// payload is one part of a runtime's answer.
type payload struct {
	Text string `json:"text"`
}

// payloadText joins the text of a result's payloads, in order: an answer
// some runtimes split (narration, then the JSON) reaches the parser
// whole, which refuses rather than picks between two answers.
func payloadText(payloads []payload) string {
	var parts []string
	for _, p := range payloads {
		if t := strings.TrimSpace(p.Text); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// usageOf reads token usage in either runtime's words: input/output
// (OpenClaw) or input_tokens/output_tokens (the remote gateway).
func usageOf(raw json.RawMessage) llmoutput.Usage {
	var u struct {
		Input        *int64 `json:"input"`
		Output       *int64 `json:"output"`
		InputTokens  *int64 `json:"input_tokens"`
		OutputTokens *int64 `json:"output_tokens"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return llmoutput.Usage{}
	}
	pick := func(a, b *int64) int64 {
		switch {
		case a != nil && *a > 0:
			return *a
		case b != nil && *b > 0:
			return *b
		}
		return 0
	}
	return llmoutput.Usage{InputTokens: pick(u.InputTokens, u.Input), OutputTokens: pick(u.OutputTokens, u.Output)}
}
