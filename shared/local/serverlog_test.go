package local

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// syncBuffer is a log sink that goroutines write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServerLogsContinuedRun: a run that a decision continues is logged
// when it settles, as a run serve starts is.
func TestServerLogsContinuedRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gate.yaml"), []byte(gatePipeline(600)), 0o644); err != nil {
		t.Fatal(err)
	}
	responses, err := executor.ParseResponses("r.yaml", []byte("after: ["+reply(0.9, "after done", "")+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), Config{
		Dir: filepath.Join(dir, "state"),
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses})}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	logs := &syncBuffer{}
	signer := &approval.Signer{Key: []byte("0123456789abcdef0123456789abcdef")}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := NewServer(ctx, ServerConfig{
		Runner: r, PipelinesDir: dir, MaxRuns: 10, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Signer: signer,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close(); cancel(); srv.Wait() })
	base := "http://" + ln.Addr().String()

	a := do(t, "POST", base+"/pipelines/gate/runs", "", "application/json", `{"summary": "s"}`)
	if a.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	decode(t, a, &started)
	// The link serve sends (routes, or the console) for its approval.
	var link string
	for deadline := time.Now().Add(10 * time.Second); link == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if approvals, _ := r.Store.RunApprovals(ctx, started.RunID); len(approvals) == 1 {
			link = base + "/approvals/" + signer.Sign(approvals[0].ID, approvals[0].ExpiresAt)
		}
	}
	if link == "" {
		t.Fatal("no approval")
	}
	if a := do(t, "POST", link, "", "application/x-www-form-urlencoded", "decision=approve&by=alice"); a.status != http.StatusOK {
		t.Fatalf("decide: %d %s", a.status, a.body)
	}
	waitRun(t, base, "", started.RunID)
	settled := regexp.MustCompile(`msg="run settled" run=` + started.RunID + ` pipeline=gate status=completed`)
	for deadline := time.Now().Add(10 * time.Second); !settled.MatchString(logs.String()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the continued run's end is not logged:\n%s", logs)
		}
	}
}
