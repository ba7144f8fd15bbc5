package steprun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/telemetry"
)

// CheckReplies answers deterministic checks in scripted runs (satisfied
// by *executor.Responses): a webhook or shell check takes its next reply
// under "<step>:check:<name>" instead of calling out. A reply is the
// webhook's body (HTTP 200) or the command's output (exit code 0); a
// scripted error ({error: ...}) is a check that could not run.
type CheckReplies interface {
	Next(key string) (string, error)
}

// checkKey is the key of a check's scripted replies and of a human
// check's approval: "<step>:check:<name>".
func checkKey(step, check string) string { return step + ":check:" + check }

// Bounds of deterministic checks.
const (
	// MaxCheckBodyBytes bounds the response body of a webhook check and
	// the output of a shell check; more is an error (the check fails).
	MaxCheckBodyBytes = 1 << 20
	// maxCheckStderr is how much of a shell check's stderr its error
	// keeps.
	maxCheckStderr = 2 << 10
	// checkDetailChars is how much of a body or an output a check's
	// detail keeps in the trust report.
	checkDetailChars = 200
)

// runChecks runs st's checks from index from on, after done (the results
// of the checks before it), in order: a check that fails or cannot run
// fails the rest (they are skipped: the trust is 0 whatever they say),
// and a human check pauses them (its result pending, pendingAt its index;
// -1 when none is pending).
func (t *taskRun) runChecks(ctx context.Context, st *pipeline.Step, from int, done []store.CheckResult, b map[string]any) (results []store.CheckResult, pendingAt int) {
	results = append([]store.CheckResult(nil), done...)
	failed := false
	for _, r := range done {
		failed = failed || r.Outcome == store.CheckFailed || r.Outcome == store.CheckError
	}
	for i := from; i < len(st.Checks); i++ {
		c := st.Checks[i]
		if failed {
			results = append(results, store.CheckResult{Name: c.Name, Type: c.Type, Outcome: store.CheckSkipped, Expect: c.Expect})
			continue
		}
		if c.Type == pipeline.CheckHuman {
			results = append(results, store.CheckResult{Name: c.Name, Type: c.Type, Outcome: store.CheckPending})
			return results, i
		}
		r := t.runCheck(ctx, st, c, b)
		if r.Outcome != store.CheckPassed {
			failed = true
			t.h.log.Warn("deterministic check failed", "run", t.req.Run.ID, "step", st.Name, "check", c.Name, "outcome", r.Outcome, "error", r.Error)
		}
		results = append(results, r)
	}
	return results, -1
}

// checksPassed is the D signal of a step's checks: whether every one
// passed, and the name of the first that did not.
func checksPassed(results []store.CheckResult) (*bool, string) {
	if len(results) == 0 {
		return nil, ""
	}
	ok := true
	for _, r := range results {
		if r.Outcome == store.CheckFailed || r.Outcome == store.CheckError {
			return &[]bool{false}[0], r.Name
		}
		ok = ok && r.Outcome == store.CheckPassed
	}
	if !ok {
		return nil, "" // a human check is pending
	}
	return &ok, ""
}

// runCheck runs one webhook or shell check and judges its result against
// its expect: expression.
func (t *taskRun) runCheck(ctx context.Context, st *pipeline.Step, c *pipeline.Check, b map[string]any) store.CheckResult {
	r := store.CheckResult{Name: c.Name, Type: c.Type, Expect: c.Expect}
	start := t.h.now()
	defer func() { r.DurationMS = max(t.h.now().Sub(start).Milliseconds(), 0) }()
	timeout := c.TimeoutSeconds
	if timeout <= 0 {
		timeout = pipeline.DefaultCheckTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, time.Duration(timeout)*time.Second)
	defer cancel()
	x, err := parseExpect(c.Expect)
	if err != nil {
		r.Outcome, r.Error = store.CheckError, err.Error()
		return r
	}
	var env map[string]any
	switch c.Type {
	case pipeline.CheckWebhook:
		env, r.Detail, err = t.webhookCheck(cctx, st.Name, c, b)
	case pipeline.CheckShell:
		env, r.Detail, err = t.shellCheck(cctx, st.Name, c, b)
		if err == nil && env["exit_code"] != float64(0) {
			// A command that fails fails its check, whatever expect says.
			r.Outcome = store.CheckFailed
			return r
		}
	default:
		err = fault.Errorf[fault.ConfigError]("step %q: check %q: unknown type %q", st.Name, c.Name, c.Type)
	}
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %d s: %w", timeout, err)
		}
		r.Outcome, r.Error = store.CheckError, err.Error()
		return r
	}
	r.Outcome = store.CheckFailed
	if x.holds(env) {
		r.Outcome = store.CheckPassed
	}
	return r
}

// cutChars is s cut to n characters, marked when cut.
func cutDetail(s string) string {
	r := []rune(s)
	if len(r) <= checkDetailChars {
		return s
	}
	return string(r[:checkDetailChars]) + "…"
}

// webhookCheck sends a webhook check's request and answers what its
// expect: sees: response.status_code, response.body (the body decoded
// when it is JSON, else its text) and response.headers (names in lower
// case, first values). ${NAME} in its URL, headers and payload resolve
// through Handler.Secrets; every value resolved is scrubbed from the
// response and from errors before anything reads them. Any status is an
// answer (expect decides); a transport error, a timeout or a body over
// MaxCheckBodyBytes is an error.
func (t *taskRun) webhookCheck(ctx context.Context, step string, c *pipeline.Check, b map[string]any) (map[string]any, string, error) {
	if r := t.h.CheckReplies; r != nil {
		body, err := r.Next(checkKey(step, c.Name))
		if err != nil {
			return nil, "", err
		}
		return webhookEnv(http.StatusOK, http.Header{}, []byte(body)), detail(http.StatusOK, body), nil
	}
	resolver := t.h.Secrets
	if resolver == nil {
		resolver = secret.ResolverFunc(func(_ context.Context, name string) (string, error) { return "", secret.Missing(name) })
	}
	red := secret.NewRedactor(resolver)
	env, d, err := t.sendCheck(ctx, red, step, c, b)
	return env, d, red.Error(err)
}

func (t *taskRun) sendCheck(ctx context.Context, red *secret.Redactor, step string, c *pipeline.Check, b map[string]any) (map[string]any, string, error) {
	field := "deterministic_checks." + c.Name
	url, err := t.h.render.renderURL(ctx, step, field+".url", c.URL, b)
	if err != nil {
		return nil, "", err
	}
	if url, err = secret.Expand(ctx, red, url); err != nil {
		return nil, "", fmt.Errorf("%s.url: %w", field, err)
	}
	method := c.Method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if c.Payload != nil {
		payload, err := t.h.render.renderValue(ctx, step, field+".payload", c.Payload, b)
		if err != nil {
			return nil, "", err
		}
		if payload, err = secret.ExpandAll(ctx, red, payload); err != nil {
			return nil, "", fmt.Errorf("%s.payload: %w", field, err)
		}
		enc, err := json.Marshal(payload)
		if err != nil {
			return nil, "", fmt.Errorf("%s.payload: %w", field, err)
		}
		body = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", field, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	telemetry.Inject(ctx, req.Header)
	for k, v := range c.Headers {
		hv, err := t.h.render.renderSecretSafe(ctx, step, field+".headers."+k, v, b)
		if err != nil {
			return nil, "", err
		}
		if hv, err = secret.Expand(ctx, red, hv); err != nil {
			return nil, "", fmt.Errorf("%s.headers.%s: %w", field, k, err)
		}
		req.Header.Set(k, hv)
	}
	resp, err := t.h.client().Do(req)
	if err != nil {
		return nil, "", requestError(field, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxCheckBodyBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("%s: read the response: %w", field, err)
	}
	if len(raw) > MaxCheckBodyBytes {
		return nil, "", fmt.Errorf("%s: the response body is over %d bytes", field, MaxCheckBodyBytes)
	}
	text := red.Redact(string(raw))
	h := http.Header{}
	for k, vs := range resp.Header {
		for _, v := range vs {
			h.Add(k, red.Redact(v))
		}
	}
	return webhookEnv(resp.StatusCode, h, []byte(text)), detail(resp.StatusCode, text), nil
}

// webhookEnv is what a webhook check's expect: sees.
func webhookEnv(status int, h http.Header, body []byte) map[string]any {
	headers := make(map[string]any, len(h))
	for k, vs := range h {
		if len(vs) > 0 {
			headers[strings.ToLower(k)] = vs[0]
		}
	}
	var decoded any = string(body)
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && json.Valid(trimmed) {
		_ = json.Unmarshal(trimmed, &decoded)
	}
	return map[string]any{"response": map[string]any{"status_code": float64(status), "body": decoded, "headers": headers}}
}

func detail(status int, body string) string {
	if strings.TrimSpace(body) == "" {
		return "HTTP " + strconv.Itoa(status)
	}
	return "HTTP " + strconv.Itoa(status) + ": " + cutDetail(strings.TrimSpace(body))
}

// ErrShellNotHere is the error of a shell check in a step function that
// does not run commands (the Lambda; see Handler.ShellChecks).
var ErrShellNotHere = errors.New("shell checks run only in local runs (stepline run, serve): this step function runs no commands")

// shellCheck runs a shell check's command with /bin/sh -c and answers
// what its expect: sees: result (its standard output, trimmed) and
// exit_code. Every {{ }} output in run is one shell word: quoted (see
// renderShell), so a value from a model or an event is data, never
// syntax. The command runs with this process's environment and working
// directory, unsandboxed, as the pipeline's author wrote it; it is
// killed at the check's timeout.
func (t *taskRun) shellCheck(ctx context.Context, step string, c *pipeline.Check, b map[string]any) (map[string]any, string, error) {
	if r := t.h.CheckReplies; r != nil {
		out, err := r.Next(checkKey(step, c.Name))
		if err != nil {
			return nil, "", err
		}
		out = strings.TrimSpace(out)
		return map[string]any{"result": out, "exit_code": float64(0)}, "exit 0: " + cutDetail(out), nil
	}
	if !t.h.ShellChecks {
		return nil, "", ErrShellNotHere
	}
	cmdline, err := t.h.render.renderShell(ctx, step, "deterministic_checks."+c.Name+".run", c.Run, b)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
	cmd.WaitDelay = time.Second // a child that keeps the pipes open does not hold the check
	var stdout, stderr capped
	stdout.limit, stderr.limit = MaxCheckBodyBytes, maxCheckStderr
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, "", fmt.Errorf("command killed: %w", ctx.Err())
	case stdout.over:
		return nil, "", fmt.Errorf("the command wrote more than %d bytes", MaxCheckBodyBytes)
	case errors.As(err, &exit):
	case err != nil:
		return nil, "", fmt.Errorf("run the command: %w", err)
	}
	code := cmd.ProcessState.ExitCode()
	out := strings.TrimSpace(stdout.b.String())
	d := "exit " + strconv.Itoa(code) + ": " + cutDetail(out)
	if code != 0 && stderr.b.Len() > 0 {
		d += " (stderr: " + cutDetail(strings.TrimSpace(stderr.b.String())) + ")"
	}
	return map[string]any{"result": out, "exit_code": float64(code)}, d, nil
}

// capped keeps the first limit bytes written to it and notes more.
type capped struct {
	b     bytes.Buffer
	limit int
	over  bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - c.b.Len(); room < len(p) {
		c.over = true
		if room > 0 {
			c.b.Write(p[:room])
		}
		return len(p), nil
	}
	return c.b.Write(p)
}
