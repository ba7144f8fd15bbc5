package steprun

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

var testStart = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// recordingProviders wraps a registry: it records every call and adds a
// fixed usage, model and provider to every completion, so that tokens and
// prices can be tested with scripted replies.
type recordingProviders struct {
	inner Providers
	usage llmoutput.Usage

	mu    sync.Mutex
	calls []executor.Call
	reqs  []llmoutput.Request
}

func (r *recordingProviders) Provider(call executor.Call) (llmoutput.Provider, error) {
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
	p, err := r.inner.Provider(call)
	if err != nil {
		return nil, err
	}
	return &recordingProvider{r: r, p: p}, nil
}

func (r *recordingProviders) Calls() []executor.Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]executor.Call(nil), r.calls...)
}

type recordingProvider struct {
	r *recordingProviders
	p llmoutput.Provider
}

func (p *recordingProvider) Complete(ctx context.Context, req llmoutput.Request) (llmoutput.Completion, error) {
	p.r.mu.Lock()
	p.r.reqs = append(p.r.reqs, req)
	p.r.mu.Unlock()
	c, err := p.p.Complete(ctx, req)
	if err != nil {
		return c, err
	}
	c.Usage = p.r.usage
	if p.r.usage.InputTokens > 0 {
		c.Model, c.Provider = "test-model", "test"
	}
	return c, nil
}

type env struct {
	h     *Handler
	st    *sqlite.Store
	prov  *recordingProviders
	clock time.Time
}

// newEnv builds a handler over a SQLite store in a temporary directory and
// scripted replies.
func newEnv(t testing.TB, responses string) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	rs, err := executor.ParseResponses("responses.yaml", []byte(responses))
	if err != nil {
		t.Fatalf("parse responses: %v", err)
	}
	reg := executor.NewRegistry(executor.Deps{Responses: rs})
	e := &env{st: st, prov: &recordingProviders{inner: reg}, clock: testStart.Add(time.Second)}
	e.h = &Handler{
		Store:     st,
		Executors: e.prov,
		Now:       func() time.Time { return e.clock },
	}
	return e
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

// newRequest builds a Request of the given mode for run "run-1".
func newRequest(t testing.TB, mode string, step any) task.Request {
	t.Helper()
	return task.Request{
		Mode:     mode,
		Step:     mustJSON(t, step),
		Pipeline: task.Pipeline{Name: "demo", Stage: pipeline.StageTesting},
		Run:      task.Run{ID: "run-1", StartedAt: testStart.Format(time.RFC3339Nano)},
		Trigger:  json.RawMessage(`{"source":"manual","severity":"critical","labels":{"service":"api"}}`),
		Attempt:  1,
	}
}

// seqStep is a sequential step with the compiler's defaults.
func seqStep(name, prompt string) pipeline.Step {
	return pipeline.Step{
		Name: name, Executor: "scripted", PromptTemplate: prompt,
		Gate:      pipeline.Gate{ConfidenceThreshold: 0.75, OnLowConfidence: pipeline.LowEscalate, OnAbort: "notify"},
		OnFailure: pipeline.OnFailure{Policy: pipeline.FailureAbort},
	}
}

func decodeMap(t testing.TB, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return m
}

// stepRecords returns the stored records of run-1 named name.
func stepRecords(t testing.TB, st *sqlite.Store, name string) []store.StepRecord {
	t.Helper()
	recs, err := st.ListSteps(context.Background(), "run-1")
	if err != nil {
		t.Fatalf("list steps: %v", err)
	}
	var out []store.StepRecord
	for _, r := range recs {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

func getRun(t testing.TB, st *sqlite.Store) store.Run {
	t.Helper()
	r, err := st.GetRun(context.Background(), "run-1")
	if err != nil {
		t.Fatalf("get run: %v", err)
	}
	return r
}

func ptr[T any](v T) *T { return &v }
