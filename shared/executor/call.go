package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/secret"
)

// attempt is one Complete in progress: its bounded context, its resolved
// configuration and the redactor that knows the secrets it resolved.
type attempt struct {
	ctx    context.Context
	cancel context.CancelFunc
	limit  time.Duration
	cfg    *settings.Reader
	red    *secret.Redactor
}

// begin bounds ctx by the step's timeout and the executor's
// timeout_seconds (def when unset), then resolves the call's secrets
// within that bound.
func (r *Registry) begin(ctx context.Context, call Call, def time.Duration) (*attempt, error) {
	own := settings.NewReader(call.Config, settings.ModeBuild).Seconds("timeout_seconds")
	if own <= 0 {
		own = def
	}
	a := &attempt{red: secret.NewRedactor(r.deps.Secrets)}
	a.ctx, a.cancel, a.limit = callContext(ctx, call.Timeout, own)
	resolved, err := secret.ExpandAll(a.ctx, a.red, call.Config)
	if err != nil {
		a.cancel()
		return nil, fmt.Errorf("%s: executor_config.%w", call.Executor, err)
	}
	cfg, _ := resolved.(map[string]any)
	a.cfg = settings.NewReader(cfg, settings.ModeCall)
	return a, nil
}

// completeModel makes one model call: the attempt's deadline and
// redactor from begin, the provider's send, errors and the raw answer
// redacted by finish.
func (r *Registry) completeModel(ctx context.Context, call Call, req llmoutput.Request, send func(*attempt, llmoutput.Request) (llmoutput.Completion, error)) (llmoutput.Completion, error) {
	a, err := r.begin(ctx, call, DefaultModelTimeout)
	if err != nil {
		return finish(nil, llmoutput.Completion{}, err)
	}
	defer a.cancel()
	c, err := send(a, req)
	if err == nil {
		err = checkUsage(call.Executor, c.Usage)
	}
	return finish(a.red, c, err)
}

// finish is the one way out of a Complete: it scrubs the call's resolved
// secrets from the error, or from every text of the Completion (the reply,
// which becomes the parsed answer and the recorded raw_response; the
// refusal; the model, provider and finish reason the reply reported; the
// body kept for audit, which stays JSON). The reply was already scrubbed
// as it arrived (exchange.red), so nothing that cuts or quotes it saw a
// secret; this pass catches what the executor composed itself (a URL in
// an error) and secrets one more level of escaping deep in the reply.
func finish(red *secret.Redactor, c llmoutput.Completion, err error) (llmoutput.Completion, error) {
	if err != nil {
		return llmoutput.Completion{}, red.Error(err)
	}
	c.Content = red.Redact(c.Content)
	c.Refusal = red.Redact(c.Refusal)
	c.Model = red.Redact(c.Model)
	c.Provider = red.Redact(c.Provider)
	c.FinishReason = red.Redact(c.FinishReason)
	c.Raw = red.RedactJSON(c.Raw)
	return c, nil
}

// messagesOf splits a request into its system text and its conversation,
// merging consecutive turns of one role (Anthropic and Bedrock require
// alternating roles).
func messagesOf(req llmoutput.Request, extraSystem string) (system string, turns []llmoutput.Message) {
	sys := []string{}
	if extraSystem != "" {
		sys = append(sys, extraSystem)
	}
	for _, m := range req.Messages {
		if m.Role == llmoutput.RoleSystem {
			if m.Content != "" {
				sys = append(sys, m.Content)
			}
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].Role == m.Role {
			turns[n-1].Content += "\n\n" + m.Content
			continue
		}
		turns = append(turns, m)
	}
	for i, s := range sys {
		if i > 0 {
			system += "\n\n"
		}
		system += s
	}
	return system, turns
}

// MaxReportedTokens bounds each token count a reply reports (a trillion:
// no call spends that many). Counts beyond it, or negative, are a
// malformed reply: summed over a run's calls they must stay exact in the
// JSON numbers (float64) the state machine carries them in.
const MaxReportedTokens = 1_000_000_000_000

// checkUsage is an ExecutorUnavailable for a reply to executor whose
// reported usage is out of range (0..MaxReportedTokens), else nil.
func checkUsage(executor string, u llmoutput.Usage) error {
	for _, c := range []struct {
		what string
		n    int64
	}{{"input", u.InputTokens}, {"output", u.OutputTokens}} {
		if c.n < 0 || c.n > MaxReportedTokens {
			return fault.Errorf[fault.ExecutorUnavailable]("%s: malformed reply: it reports %d %s tokens (want 0 to %d)", executor, c.n, c.what, int64(MaxReportedTokens))
		}
	}
	return nil
}
