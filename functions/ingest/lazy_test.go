package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/shared/catalog"
	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/project"
)

// TestPipelineSet pins when a set compiles its pipelines: on the first
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

	// Files that do not compile: a request is answered 500 without the
	// problem, a trigger event fails with it, and the problem is logged
	// once, when the build fails.
	t.Run("does not compile", func(t *testing.T) {
		builds := 0
		var logged bytes.Buffer
		problem := errors.New("10-orders.yaml:3:1: the problem")
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
			t.Errorf("trigger event: %v, want the compile error", err)
		}
		if builds != 1 {
			t.Errorf("%d builds, want 1 (the failure is kept)", builds)
		}
		if n := strings.Count(logged.String(), "pipelines do not compile"); n != 1 || !strings.Contains(logged.String(), "the problem") {
			t.Errorf("the failure is logged %d times, want once with the problem:\n%s", n, logged.String())
		}
		if n := strings.Count(logged.String(), "pipelines do not load"); n != 2 {
			t.Errorf("%d requests logged as failed, want 2:\n%s", n, logged.String())
		}
	})
}

// noProject is a project reader that finds none.
func noProject() (*project.Project, error) { return nil, nil }

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

// TestFromBundles pins the Watcher's Build: the first set is written and
// compiles on first need (files that do not compile are an error then,
// not at start); a later set compiles before it replaces the one in use, and
// one that does not compile is refused, the files in use kept.
func TestFromBundles(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	bundle := func(t *testing.T) []catalog.File {
		t.Helper()
		files, err := filepath.Glob(filepath.Join("testdata", "pipelines", "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("test pipelines: %v %v", files, err)
		}
		var out []catalog.File
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, catalog.File{Name: filepath.Base(f), Source: string(b)})
		}
		return out
	}
	bad := append(bundle(t), catalog.File{Name: "40-broken.yaml", Source: "name: broken\nsteps: []\n"})
	dirs := func() []string {
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "pipelines-") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	e := &environment{names: testNames, runs: newEnv(t).store, sfn: &fakeStarts{}, tokens: intake.Tokens{"": testToken}, log: slog.New(slog.DiscardHandler)}

	// A first set that a later one replaced before it was needed is
	// never written, nor compiled.
	t.Run("replaced before it was needed", func(t *testing.T) {
		build := e.fromBundles(noProject)
		first, err := build(bundle(t))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(dirs()); n != 0 {
			t.Fatalf("%d directories before the first set is needed, want 0", n)
		}
		if _, err := build(bundle(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := first.handler(); err == nil || !strings.Contains(err.Error(), "replaced") {
			t.Errorf("the replaced first set's handler: %v, want it refused as replaced", err)
		}
		if n := len(dirs()); n != 1 {
			t.Errorf("%d directories, want 1 (the later set's)", n)
		}
		for _, d := range dirs() {
			os.RemoveAll(filepath.Join(tmp, d))
		}
	})

	// The project is read when a set compiles, not before: a project that
	// does not load fails the set then, before any file is written.
	t.Run("project does not load", func(t *testing.T) {
		reads := 0
		unreadable := errors.New("read project: stepline.yaml: permission denied")
		build := e.fromBundles(func() (*project.Project, error) { reads++; return nil, unreadable })
		first, err := build(bundle(t))
		if err != nil || reads != 0 {
			t.Fatalf("the first set: %v, %d project reads; want it made without reading the project", err, reads)
		}
		if _, err := first.handler(); !errors.Is(err, unreadable) || reads != 1 {
			t.Errorf("the first set's handler: %v after %d project reads, want the project's error after 1", err, reads)
		}
		if _, err := build(bundle(t)); !errors.Is(err, unreadable) {
			t.Errorf("a later set: %v, want the project's error", err)
		}
		if n := len(dirs()); n != 0 {
			t.Errorf("%d directories, want 0: no file is written without the project", n)
		}
	})

	build := e.fromBundles(noProject)
	first, err := build(bad)
	if err != nil {
		t.Fatalf("the first set is refused before it is needed: %v", err)
	}
	if n := len(dirs()); n != 0 {
		t.Fatalf("%d directories before the first set is needed, want 0: its files are written on first need", n)
	}
	if _, err := first.handler(); err == nil || !strings.Contains(err.Error(), "40-broken.yaml") {
		t.Fatalf("the first set's handler: %v, want the broken file's error", err)
	}
	if n := len(dirs()); n != 1 {
		t.Fatalf("%d directories, want 1", n)
	}

	if _, err := build(bad); err == nil || !strings.Contains(err.Error(), "40-broken.yaml") {
		t.Errorf("a later set that does not compile: %v, want the broken file's error", err)
	}
	if n := len(dirs()); n != 1 {
		t.Errorf("%d directories after a refused set, want 1 (the set in use)", n)
	}

	second, err := build(bundle(t))
	if err != nil {
		t.Fatalf("a later set that compiles: %v", err)
	}
	h, err := second.handler()
	if err != nil || len(h.deployed.pipelines) != 3 {
		t.Fatalf("the later set's handler: %v", err)
	}
	if d := dirs(); len(d) != 1 || filepath.Dir(h.deployed.files["rie-orders"]) != filepath.Join(tmp, d[0]) {
		t.Errorf("directories %v, want only the new set's (%s)", d, h.deployed.files["rie-orders"])
	}
}
