package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/shared/catalog"
	"github.com/stepline/stepline/shared/inbound"
)

// TestPipelineSet pins when a set builds its handler: on the first
// request or trigger event, once; never for an event the function does
// not serve.
func TestPipelineSet(t *testing.T) {
	e := newEnv(t)
	webhook := apiRequest(t, "apigw-webhook-generic.json", nil)
	ctx := context.Background()

	builds := 0
	var logged bytes.Buffer
	set := lazySet(func() (*handler, error) { builds++; return e.h, nil }, slog.New(slog.NewJSONHandler(&logged, nil)))
	for _, ev := range []string{`{"detail-type": "Scheduled Event"}`, `[]`, `not json`} {
		if _, err := handle(ctx, json.RawMessage(ev), fixedSet(set), set.log); err == nil {
			t.Errorf("%s: no error", ev)
		}
	}
	if builds != 0 {
		t.Fatalf("%d builds for events the function does not serve, want 0", builds)
	}
	for range 2 {
		out, err := handle(ctx, webhook, fixedSet(set), set.log)
		if resp, ok := out.(events.APIGatewayV2HTTPResponse); err != nil || !ok || resp.StatusCode != 202 {
			t.Fatalf("webhook answered %+v, %v; want 202", out, err)
		}
	}
	if builds != 1 {
		t.Errorf("%d builds after two webhooks, want 1", builds)
	}
	if logged.Len() != 0 {
		t.Errorf("a set that compiles logged %s", logged.String())
	}

	t.Run("built", func(t *testing.T) {
		set := builtSet(e.h, slog.New(slog.DiscardHandler))
		if h, err := set.handler(); h != e.h || err != nil {
			t.Errorf("handler() = %p, %v; want the one given", h, err)
		}
	})

	// Models that do not load: a request is answered 500 without the
	// problem, a trigger event fails with it, and the problem is logged
	// once, when the build fails.
	t.Run("does not load", func(t *testing.T) {
		builds := 0
		var logged bytes.Buffer
		problem := errors.New("pipeline file 10-orders.yaml: the problem")
		set := lazySet(func() (*handler, error) { builds++; return nil, problem }, slog.New(slog.NewJSONHandler(&logged, nil)))
		for range 2 {
			out, err := handle(ctx, webhook, fixedSet(set), set.log)
			resp, ok := out.(events.APIGatewayV2HTTPResponse)
			if err != nil || !ok || resp.StatusCode != 500 || !strings.Contains(resp.Body, "do not load") || strings.Contains(resp.Body, "the problem") {
				t.Errorf("webhook answered %+v, %v; want 500 without the problem", out, err)
			}
		}
		trig := readEvent(t, "eventbridge-trigger-ingest.json")
		if _, err := handle(ctx, trig, fixedSet(set), set.log); !errors.Is(err, problem) {
			t.Errorf("trigger event: %v, want the models' error", err)
		}
		if builds != 1 {
			t.Errorf("%d builds, want 1 (the failure is kept)", builds)
		}
		if n := strings.Count(logged.String(), "pipeline models do not load"); n != 1 || !strings.Contains(logged.String(), "the problem") {
			t.Errorf("the failure is logged %d times, want once with the problem:\n%s", n, logged.String())
		}
		if n := strings.Count(logged.String(), "pipelines do not load"); n != 2 {
			t.Errorf("%d requests logged as failed, want 2:\n%s", n, logged.String())
		}
	})
}

// fixedSet returns a current that always returns set.
func fixedSet(set *pipelineSet) func(context.Context) (*pipelineSet, error) {
	return func(context.Context) (*pipelineSet, error) { return set, nil }
}

// TestHandleWaits pins which events wait for the pipelines (current: on a
// cold start, the start's read of the bundles): requests and trigger
// events do, and when the bundles do not load a request is answered 500
// without the cause and a trigger event fails with it; an event of no kind
// the function serves never waits.
func TestHandleWaits(t *testing.T) {
	ctx := context.Background()
	calls := 0
	problem := errors.New("bundle 00: NoSuchKey")
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	current := func(context.Context) (*pipelineSet, error) { calls++; return nil, problem }
	for _, ev := range []string{`{}`, `{"detail-type": "Scheduled Event"}`, `[]`, `not json`} {
		if _, err := handle(ctx, json.RawMessage(ev), current, log); err == nil {
			t.Errorf("%s: no error", ev)
		}
	}
	if calls != 0 {
		t.Fatalf("events the function does not serve waited for the pipelines %d times, want 0", calls)
	}
	out, err := handle(ctx, apiRequest(t, "apigw-webhook-generic.json", nil), current, log)
	resp, ok := out.(events.APIGatewayV2HTTPResponse)
	if err != nil || !ok || resp.StatusCode != 500 || !strings.Contains(resp.Body, "do not load") || strings.Contains(resp.Body, "NoSuchKey") {
		t.Errorf("webhook answered %+v, %v; want 500 without the cause", out, err)
	}
	if !strings.Contains(logged.String(), "NoSuchKey") {
		t.Errorf("the cause is not logged: %s", logged.String())
	}
	if _, err := handle(ctx, readEvent(t, "eventbridge-trigger-ingest.json"), current, log); !errors.Is(err, problem) {
		t.Errorf("trigger event: %v, want the read's error", err)
	}
	if calls != 2 {
		t.Errorf("a request and a trigger event called current %d times, want 2", calls)
	}
}

// TestFromBundles pins the Watcher's Build: the first set is built (its
// models decoded) on first need, so models that do not load are an error
// then, not at start; a later set is built before it replaces the one in
// use, and one that does not load is refused (the Watcher keeps the set
// in use).
func TestFromBundles(t *testing.T) {
	e := &environment{names: testNames, runs: newEnv(t).store, sfn: &fakeStarts{}, tokens: inbound.Tokens{"": testToken}, log: slog.New(slog.DiscardHandler)}
	bad := append(slices.Clone(bundled(t)), catalog.File{Name: "40-broken.yaml", Model: json.RawMessage(`{"pipeline": {"name": 1}, "step_kinds": []}`)})

	build := e.fromBundles()
	first, err := build(bad)
	if err != nil {
		t.Fatalf("the first set is refused before it is needed: %v", err)
	}
	if first.h != nil || first.err != nil {
		t.Fatalf("the first set is built before it is needed: %+v", first)
	}
	if _, err := first.handler(); err == nil || !strings.Contains(err.Error(), "40-broken.yaml") {
		t.Fatalf("the first set's handler: %v, want the broken file's error", err)
	}
	if _, err := build(bad); err == nil || !strings.Contains(err.Error(), "40-broken.yaml") {
		t.Errorf("a later set that does not load: %v, want the broken file's error", err)
	}
	second, err := build(bundled(t))
	if err != nil {
		t.Fatalf("a later set that loads: %v", err)
	}
	if second.h == nil {
		t.Fatal("a later set is not built before it is returned")
	}
	h, err := second.handler()
	if err != nil || len(h.deployed.pipelines) != 3 || h.deployed.sources["rie-orders"] == "" {
		t.Fatalf("the later set's handler: %+v, %v", h, err)
	}
}
