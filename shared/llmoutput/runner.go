package llmoutput

import (
	"context"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/fault"
)

// Runner asks a model for an LLMOutput answer and re-asks, with precise
// feedback, until the answer is valid or the schema's retries are spent.
// The answer is an Output. The zero Runner is ready to use; a
// Runner holds no state between calls and is safe for concurrent use.
type Runner struct {
	// Limits bounds every reply (MaxBytes, MaxDepth); FinishReason and
	// Refusal are taken from each Completion.
	Limits ParseOptions
	// SkipInstruction leaves the caller's messages unchanged. By default
	// the schema's Instruction is appended to the first system message
	// (or sent as a new one first).
	SkipInstruction bool
}

// RunResult is the outcome of Runner.Complete. On failure it holds the
// last attempt: its reply, its errors and the feedback it earned.
type RunResult struct {
	Success          bool
	Data             Output // the answer, when Success
	RawContent       string
	ValidationErrors []FieldError
	Attempts         int // calls made to the provider
	Outcome          Outcome
	Flags            []string   // repairs applied to the accepted reply
	Feedback         string     // the re-ask message of the last rejected reply
	Completion       Completion // the last completion: model, provider, finish reason, body
	Usage            Usage      // tokens summed over every call
}

// Err returns nil on success, a *fault.ModelRefused when the model
// refused or a content filter stopped it, and a *fault.InvalidOutput when
// no valid answer came within the retries.
func (r RunResult) Err() error {
	if r.Success {
		return nil
	}
	if r.Outcome == "" {
		return &fault.InvalidOutput{Msg: "model output missing: no reply was judged"}
	}
	return verdictErr(r.Outcome, r.ValidationErrors, r.Attempts)
}

// Complete asks p for an answer matching schema. Each request carries the
// schema's SchemaSpec, for providers with native structured output; every
// reply is validated whatever the provider did with it. A rejected reply
// is appended to the conversation as an assistant message, followed by
// the feedback as a user message, and the model is asked again, up to
// schema.MaxRetries times. A refusal or content-filter stop ends the run
// at once.
//
// The error is non-nil only when the run could not finish: a provider
// error (returned as is: it is already a typed fault and is not re-asked),
// a cancelled context, or a schema that was not built by a constructor
// (*fault.ConfigError). An invalid answer is not an error of Complete:
// see RunResult.Success and RunResult.Err.
func (r *Runner) Complete(ctx context.Context, p Provider, msgs []Message, schema *OutputSchema) (RunResult, error) {
	var res RunResult
	conv, err := r.Instruct(msgs, schema)
	if err != nil {
		return res, err
	}
	if p == nil {
		return res, &fault.ConfigError{Msg: "structured output: no provider"}
	}
	conv = slices.Grow(conv, 2*max(schema.MaxRetries, 0))
	spec := schema.requestSpec()
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		c, err := p.Complete(ctx, Request{Messages: conv[:len(conv):len(conv)], Schema: &spec})
		res.Attempts = attempt
		if err != nil {
			return res, err
		}
		res.Usage.InputTokens += c.Usage.InputTokens
		res.Usage.OutputTokens += c.Usage.OutputTokens
		j, _ := r.Judge(schema, c, attempt)
		res.Completion, res.RawContent = c, c.Content
		res.Outcome, res.Flags, res.ValidationErrors = j.Outcome, j.Flags, j.Errors
		res.Success, res.Feedback = j.OK, j.Feedback
		if j.OK {
			res.Data = j.Data
			return res, nil
		}
		if !j.Again {
			return res, nil
		}
		conv = append(conv,
			Message{Role: RoleAssistant, Content: j.Replay},
			Message{Role: RoleUser, Content: j.Feedback})
	}
}

// Judgement is the verdict on one reply within a run of the Runner, as
// Complete makes it: the hook for callers that drive the conversation
// themselves (an agent's tool loop, which makes its own model calls and
// hands the Runner each final answer).
type Judgement struct {
	OK       bool
	Data     Output // the answer, when OK (an Output with the executor's model, provider and raw_response set)
	Outcome  Outcome
	Flags    []string
	Errors   []FieldError
	Feedback string // the re-ask message, when not OK
	// Again reports whether Complete would ask again: the reply was
	// rejected or truncated, not refused, and the schema's retries are
	// not spent.
	Again bool
	// Replay is the rejected reply as it goes back to the model, as the
	// assistant turn before Feedback (an empty reply and one over the
	// size limit are replaced).
	Replay string
}

// Err is RunResult.Err for a judgement made on the attempt-th reply.
func (j Judgement) Err(attempt int) error {
	if j.OK {
		return nil
	}
	return RunResult{Outcome: j.Outcome, ValidationErrors: j.Errors, Attempts: attempt}.Err()
}

// Instruct returns the conversation Complete sends first: msgs with the
// schema's instruction added to the first system message (or sent first
// as a system message of its own), or msgs unchanged with
// SkipInstruction. A schema that was not built by a constructor is a
// *fault.ConfigError.
func (r *Runner) Instruct(msgs []Message, schema *OutputSchema) ([]Message, error) {
	if !schema.built() {
		return nil, &fault.ConfigError{Msg: "structured output: the output schema was not built by a constructor"}
	}
	conv := make([]Message, 0, len(msgs)+1)
	if r.SkipInstruction {
		return append(conv, msgs...), nil
	}
	return withInstruction(conv, msgs, schema.Instruction()), nil
}

// Judge judges the attempt-th reply (1-based) of a run against schema, as
// Complete does: within the Runner's Limits, with the Completion's finish
// reason and refusal. The error is a *fault.ConfigError for a schema that
// was not built by a constructor.
func (r *Runner) Judge(schema *OutputSchema, c Completion, attempt int) (Judgement, error) {
	var j Judgement
	if !schema.built() {
		return j, &fault.ConfigError{Msg: "structured output: the output schema was not built by a constructor"}
	}
	opts := r.Limits
	opts.FinishReason, opts.Refusal = c.FinishReason, c.Refusal
	data, v := schema.Check(c.Content, opts)
	j.Outcome, j.Flags, j.Errors = v.Outcome, v.Flags, v.Errors
	if v.OK {
		o := Output(data)
		o.Model, o.Provider, o.RawResponse = c.Model, c.Provider, c.Content
		j.OK, j.Data = true, Output(o)
		return j, nil
	}
	j.Feedback = v.Feedback()
	j.Again = v.Outcome != Refused && attempt < max(schema.MaxRetries, 0)+1
	j.Replay = replayable(c.Content, r.Limits)
	return j, nil
}

// Complete runs a zero Runner: the common case, with Output inferred.
func Complete(ctx context.Context, p Provider, msgs []Message, schema *OutputSchema) (RunResult, error) {
	var r Runner
	return r.Complete(ctx, p, msgs, schema)
}

// withInstruction appends msgs to dst with the instruction added to the
// first system message, or sent first as a system message of its own.
func withInstruction(dst, msgs []Message, instruction string) []Message {
	for i, m := range msgs {
		if m.Role == RoleSystem {
			dst = append(dst, msgs...)
			sys := strings.TrimRight(dst[i].Content, "\n")
			if sys != "" {
				sys += "\n\n"
			}
			dst[i].Content = sys + instruction
			return dst
		}
	}
	dst = append(dst, Message{Role: RoleSystem, Content: instruction})
	return append(dst, msgs...)
}

// replayable is the rejected reply as it goes back to the model: as it
// was, except an empty reply (some APIs refuse empty turns) and a reply
// over the size limit, which is cut.
func replayable(content string, limits ParseOptions) string {
	if strings.TrimSpace(content) == "" {
		return "(empty reply)"
	}
	maxBytes, _ := limits.limits()
	if len(content) > maxBytes {
		return capText(content, feedbackEchoBytes)
	}
	return content
}
