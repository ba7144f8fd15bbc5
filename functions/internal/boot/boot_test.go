package boot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type exited int

// run calls fn with a Function whose exit panics, and reports the status
// it exited with (-1 when it did not) and what it logged.
func run(t *testing.T, fn func(exit func(int), w *bytes.Buffer)) (status int, log string) {
	t.Helper()
	var buf bytes.Buffer
	status = -1
	func() {
		defer func() {
			if r := recover(); r != nil {
				e, ok := r.(exited)
				if !ok {
					panic(r)
				}
				status = int(e)
			}
		}()
		fn(func(code int) { panic(exited(code)) }, &buf)
	}()
	return status, buf.String()
}

func TestStart(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("LOG_LEVEL", "warn")
	var f *Function
	status, log := run(t, func(exit func(int), w *bytes.Buffer) {
		f = start("test", w, os.Getenv, exit)
		f.Log.Info("hidden")
		f.Log.Warn("shown")
	})
	if status != -1 || f.AWS.Region != "eu-west-1" {
		t.Fatalf("exit %d, region %q", status, f.AWS.Region)
	}
	if strings.Contains(log, "hidden") || !strings.Contains(log, `"msg":"shown"`) {
		t.Errorf("LOG_LEVEL=warn not honoured: %s", log)
	}
}

func TestStartFails(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("LOG_LEVEL", "loud") // unknown: info
	status, log := run(t, func(exit func(int), w *bytes.Buffer) { start("test", w, os.Getenv, exit) })
	if status != 1 || !strings.Contains(log, `"level":"ERROR","msg":"load AWS configuration"`) {
		t.Errorf("exit %d, log %s; want 1 and the reason", status, log)
	}
}

func TestStore(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("TABLE_NAME", "")
	status, log := run(t, func(exit func(int), w *bytes.Buffer) { start("test", w, os.Getenv, exit).Store() })
	if status != 1 || !strings.Contains(log, "TABLE_NAME is not set") {
		t.Errorf("exit %d, log %s; want 1 and TABLE_NAME named", status, log)
	}
	t.Setenv("TABLE_NAME", "runs")
	status, log = run(t, func(exit func(int), w *bytes.Buffer) {
		if start("test", w, os.Getenv, exit).Store() == nil {
			t.Error("no store")
		}
	})
	if status != -1 {
		t.Errorf("exit %d: %s", status, log)
	}
}

func TestSecrets(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("SECRET_REFS", "SLACK_URL=ssm:/stepline/slack")
	status, log := run(t, func(exit func(int), w *bytes.Buffer) {
		secrets, sm := start("test", w, os.Getenv, exit).Secrets()
		if secrets == nil || sm == nil {
			t.Error("no secrets")
		}
	})
	if status != -1 {
		t.Errorf("exit %d: %s", status, log)
	}
	t.Setenv("SECRET_REFS", "SLACK_URL=vault:/stepline/slack")
	status, log = run(t, func(exit func(int), w *bytes.Buffer) { start("test", w, os.Getenv, exit).Secrets() })
	if status != 1 || !strings.Contains(log, `"msg":"secrets"`) || !strings.Contains(log, "SECRET_REFS") {
		t.Errorf("exit %d, log %s; want 1 and SECRET_REFS named", status, log)
	}
}

// TestTracing pins that Start sets tracing up from the OTEL_* variables:
// off without them, on with an endpoint.
func TestTracing(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	if f := Start("test"); f.Tracing != nil || f.Name != "test" {
		t.Errorf("tracing %v, name %q; want off and test", f.Tracing, f.Name)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
	f := Start("test")
	if f.Tracing == nil {
		t.Fatal("tracing off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	_ = f.Tracing.Shutdown(context.Background())
}

// TestRead pins that Read hands back what the read returned, value or
// error, to every Wait, and that the read's context is bounded.
func TestRead(t *testing.T) {
	p := Read(func(ctx context.Context) (string, error) {
		deadline, ok := ctx.Deadline()
		if !ok || time.Until(deadline) > SecretTimeout {
			return "", errors.New("the read's context is not bounded by SecretTimeout")
		}
		return "key", nil
	})
	for range 2 {
		if v, err := p.Wait(); v != "key" || err != nil {
			t.Fatalf("Wait() = %q, %v; want key, nil", v, err)
		}
	}
	failed := errors.New("no such secret")
	if v, err := Read(func(context.Context) ([]byte, error) { return nil, failed }).Wait(); v != nil || !errors.Is(err, failed) {
		t.Errorf("Wait() = %q, %v; want nil, %v", v, err, failed)
	}
	// A read that outlives its bound sees its context end.
	slow := readWithin(time.Millisecond, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if _, err := slow.Wait(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow read: %v; want the deadline exceeded", err)
	}
}

// TestAwait: the first invocation waits for the read and hands its value
// to use before the handler runs; use runs once, later invocations do
// not wait, and a read that succeeded is not made again; a read that
// failed once is made again and its value used; one that failed twice
// exits with the message and its error and the handler never runs.
func TestAwait(t *testing.T) {
	release := make(chan struct{})
	var firstReads atomic.Int32
	p := Read(func(context.Context) (string, error) {
		firstReads.Add(1)
		<-release
		return "key", nil
	})
	var key string
	uses, calls := 0, 0
	f := &Function{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), exit: func(code int) { t.Fatalf("exit %d", code) }}
	h := Await(f, p, "KEY", func(v string) { key = v; uses++ }, func(_ context.Context, in int) (string, error) {
		calls++
		return key + strconv.Itoa(in), nil
	})
	answered := make(chan string)
	go func() {
		out, _ := h(context.Background(), 1)
		answered <- out
	}()
	select {
	case out := <-answered:
		t.Fatalf("the first invocation answered %q before the read returned", out)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if out := <-answered; out != "key1" {
		t.Fatalf("first invocation: %q, want key1", out)
	}
	for i := 2; i <= 3; i++ {
		if out, err := h(context.Background(), i); out != "key"+strconv.Itoa(i) || err != nil {
			t.Fatalf("invocation %d: %q, %v", i, out, err)
		}
	}
	if uses != 1 || calls != 3 {
		t.Errorf("use ran %d times, the handler %d; want 1 and 3", uses, calls)
	}

	if n := firstReads.Load(); n != 1 {
		t.Errorf("a read that succeeded was made %d times, want once", n)
	}

	// A read that fails once is made again in line, and the handler runs
	// with what the second read returned.
	var attempts atomic.Int32
	flaky := Read(func(context.Context) ([]byte, error) {
		if attempts.Add(1) == 1 {
			return nil, errors.New("connection reset")
		}
		return []byte("key"), nil
	})
	var got []byte
	status, log := run(t, func(exit func(int), w *bytes.Buffer) {
		f := &Function{Log: slog.New(slog.NewJSONHandler(w, nil)), exit: exit}
		h := Await(f, flaky, "APPROVAL_KEY_SECRET_ARN", func(k []byte) { got = k },
			func(context.Context, int) (int, error) { return len(got), nil })
		if n, _ := h(context.Background(), 1); n != 3 {
			t.Errorf("the handler saw a %d-byte key, want 3", n)
		}
	})
	if status != -1 || attempts.Load() != 2 || string(got) != "key" || !strings.Contains(log, "read again") || !strings.Contains(log, "connection reset") {
		t.Errorf("read failing once: exit %d, %d reads, key %q, log %s", status, attempts.Load(), got, log)
	}

	// A read that fails twice exits with the message and the error; the
	// handler never runs.
	attempts.Store(0)
	failed := Read(func(context.Context) ([]byte, error) {
		attempts.Add(1)
		return nil, errors.New("ResourceNotFoundException: no such secret")
	})
	called := false
	status, log = run(t, func(exit func(int), w *bytes.Buffer) {
		f := &Function{Log: slog.New(slog.NewJSONHandler(w, nil)), exit: exit}
		h := Await(f, failed, "APPROVAL_KEY_SECRET_ARN", func([]byte) { t.Error("use ran after a failed read") },
			func(context.Context, int) (int, error) { called = true; return 0, nil })
		_, _ = h(context.Background(), 1)
	})
	if status != 1 || called || attempts.Load() != 2 || !strings.Contains(log, `"msg":"APPROVAL_KEY_SECRET_ARN"`) || !strings.Contains(log, "ResourceNotFoundException") {
		t.Errorf("failed read: exit %d, handler ran %v, %d reads, log %s", status, called, attempts.Load(), log)
	}
}

// refuses is an event type whose decoding fails, as a strict type may
// refuse an empty object.
type refuses struct{}

func (*refuses) UnmarshalJSON([]byte) error { return errors.New("refused") }

// TestPrepare pins that Prepare takes any event and answer types without
// failing the start: structs, maps, raw JSON, pointers, a type that
// refuses {} and one that cannot be encoded.
func TestPrepare(t *testing.T) {
	Prepare[struct{ A []struct{ B string } }, map[string]any]()
	Prepare[json.RawMessage, *struct{ C int }]()
	Prepare[refuses, chan int]()
	Prepare[any, any]()
}

func TestLogLevel(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want slog.Level
	}{
		{"", slog.LevelInfo},
		{"debug", slog.LevelDebug},
		{"info", slog.LevelInfo},
		{"WARN", slog.LevelWarn},
		{"error", slog.LevelError},
		{"info+1", slog.LevelInfo + 1},
		{"loud", slog.LevelInfo},
		{" ", slog.LevelInfo},
	} {
		if got := logLevel(tc.env); got != tc.want {
			t.Errorf("LOG_LEVEL=%q: %v, want %v", tc.env, got, tc.want)
		}
	}
}
