package steprun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telemetry"
)

// failure records a step whose Task failed after its retries, sends its
// on_failure webhook and answers the failed output.
func (t *taskRun) failure(ctx context.Context) (task.Response, error) {
	st, err := decodeStep[pipeline.Step](t.req)
	if err != nil {
		return task.Response{}, err
	}
	if st.Name == "" {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step handler: failure step config has no name")
	}
	summary := "the step failed without an error description"
	if e := t.req.Error; e != nil && (e.Error != "" || e.Cause != "") {
		summary = errorText(e)
	}
	started := t.h.now()
	last := 0
	recs, err := t.h.Store.ListSteps(ctx, t.req.Run.ID)
	if err != nil {
		return task.Response{}, fmt.Errorf("step %q: list steps: %w", st.Name, err)
	}
	for _, r := range recs {
		if r.Name == st.Name {
			last = max(last, r.Attempt)
		}
	}
	flags := []string{FlagFailureOutcome}
	if wh := st.OnFailure.Webhook; wh != nil && wh.URL != "" {
		if t.req.Pipeline.Stage != pipeline.StageProduction {
			flags = append(flags, FlagFailureWebhookMuted)
		} else if err := t.sendFailureWebhook(ctx, st.Name, wh, summary); err != nil {
			t.h.log.Warn("failure webhook failed", "run", t.req.Run.ID, "step", st.Name, "error", err.Error())
			flags = append(flags, FlagFailureWebhookFailed)
		} else {
			flags = append(flags, FlagFailureWebhookSent)
		}
	}
	out := failedOutput(summary)
	reason := fmt.Sprintf("step %q failed: %s", st.Name, summary)
	ending := task.StatusFailed
	if st.OnFailure.Policy == pipeline.FailureContinue {
		ending = task.StatusCompleted // the run goes on
	}
	muted, notified := t.mutedNotices(ctx, ending, reason, nil)
	flags = append(flags, muted...)
	zero := 0.0
	end := t.h.now()
	rec := store.StepRecord{Name: st.Name, Index: t.index(started), Attempt: last + 1, Executor: st.Executor,
		Status: store.StepFailed, Error: summary, EffectiveConfidence: &zero, Output: out, Flags: flags,
		StartedAt: started, FinishedAt: end, DurationMS: max(end.Sub(started).Milliseconds(), 0)}
	if err := t.putStep(ctx, rec); err != nil {
		return task.Response{}, err
	}
	if st.OnFailure.Policy != pipeline.FailureContinue {
		if err := t.endRun(ctx, task.StatusFailed, reason, t.req.Usage, nil, notified); err != nil {
			return task.Response{}, err
		}
	}
	return task.Response{Status: task.StatusFailed, Step: st.Name, Output: out,
		Steps: map[string]json.RawMessage{st.Name: out}, Usage: t.req.Usage, Reason: reason}, nil
}

// sendFailureWebhook renders and sends an on_failure webhook. ${NAME} in
// its URL, headers and payload resolve through Handler.Secrets; every
// error leaves through the redactor that resolved them, so none carries a
// resolved value (a URL in a transport error, a value in a message). The
// target's answer is read only for its status.
func (t *taskRun) sendFailureWebhook(ctx context.Context, step string, wh *pipeline.FailureWebhook, summary string) error {
	resolver := t.h.Secrets
	if resolver == nil {
		resolver = secret.ResolverFunc(func(_ context.Context, name string) (string, error) { return "", secret.Missing(name) })
	}
	red := secret.NewRedactor(resolver)
	return red.Error(t.postFailureWebhook(ctx, red, step, wh, summary))
}

func (t *taskRun) postFailureWebhook(ctx context.Context, red *secret.Redactor, step string, wh *pipeline.FailureWebhook, summary string) error {
	b := t.h.bindings(ctx, t.req, t.trig, scope{current: step,
		failure: map[string]any{"step": step, "summary": summary, "status": task.StatusFailed}})

	url, err := t.h.render.renderURL(ctx, step, "on_failure.webhook.url", wh.URL, b)
	if err != nil {
		return err
	}
	if url, err = secret.Expand(ctx, red, url); err != nil {
		return fmt.Errorf("on_failure.webhook.url: %w", err)
	}
	payload, err := t.h.render.renderValue(ctx, step, "on_failure.webhook.payload", wh.Payload, b)
	if err != nil {
		return err
	}
	if payload, err = secret.ExpandAll(ctx, red, payload); err != nil {
		return fmt.Errorf("on_failure.webhook.payload: %w", err)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("on_failure.webhook.payload: %w", err)
	}
	timeout := DefaultWebhookTimeout
	if wh.TimeoutSeconds > 0 {
		timeout = time.Duration(wh.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	method := wh.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("on_failure.webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	telemetry.Inject(ctx, req.Header)
	for k, v := range wh.Headers {
		hv, err := t.h.render.renderSecretSafe(ctx, step, "on_failure.webhook.headers."+k, v, b)
		if err != nil {
			return err
		}
		if hv, err = secret.Expand(ctx, red, hv); err != nil {
			return fmt.Errorf("on_failure.webhook.headers.%s: %w", k, err)
		}
		req.Header.Set(k, hv)
	}
	resp, err := t.h.client().Do(req)
	if err != nil {
		return requestError("on_failure.webhook", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("on_failure.webhook: HTTP %d", resp.StatusCode)
	}
	return nil
}
