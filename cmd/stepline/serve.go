package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/store"
)

// linkNotifier tells approvers of a local run where to decide: it logs
// the signed approval link.
type linkNotifier struct {
	base   string
	signer *approval.Signer
	log    *slog.Logger
	out    func(string)
}

func (n *linkNotifier) NotifyApproval(_ context.Context, a store.Approval, stage string) error {
	link := (&approval.Service{Signer: n.signer}).Link(n.base, a)
	n.log.Info("approval requested", "run", a.RunID, "step", a.Step, "stage", stage, "link", link)
	if n.out != nil {
		n.out(fmt.Sprintf("approval needed: run %s step %q: %s", a.RunID, a.Step, link))
	}
	return nil
}

// cmdServe runs the local HTTP front door.
func cmdServe(ctx context.Context, e env) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var sf stateFlags
	sf.register(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	dir := fs.String("pipelines", "pipelines", "directory of pipeline files, routed in file-name order")
	maxRuns := fs.Int("max-runs", intake.DefaultMaxRuns, "runs driven at once; more answer 429")
	tokensFile := fs.String("tokens", "", "YAML file of per-team webhook tokens (default: $STEPLINE_TOKENS, team=token,...)")
	publicURL := fs.String("url", "", "public base URL of approval links (default http://ADDR)")
	if err := fs.Parse(e.args); err != nil || fs.NArg() != 0 {
		fmt.Fprintln(e.stderr, "usage: stepline serve [flags]")
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	tokens, err := loadTokens(*tokensFile, e.getenv("STEPLINE_TOKENS"))
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitUsage
	}
	stateDir := sf.dir
	if stateDir == "" {
		stateDir = local.DefaultDir
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	key, err := local.LoadOrCreateKey(stateDir)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	base := *publicURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	signer := &approval.Signer{Key: key}
	notifier := &linkNotifier{base: base, signer: signer, log: logger, out: func(s string) { fmt.Fprintln(e.stdout, s) }}
	r, err := local.Open(ctx, local.Config{Dir: stateDir, DBPath: sf.db, Handler: stepHandler(e, nil, stateDir, notifier)})
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer r.Close()
	runCtx, stopRuns := context.WithCancel(context.Background())
	defer stopRuns()
	srv, err := local.NewServer(runCtx, local.ServerConfig{Runner: r, PipelinesDir: *dir, Tokens: tokens, MaxRuns: *maxRuns, Signer: signer, Logger: logger})
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	sweep(ctx, e, r)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stdout, "serving on %s (pipelines from %s, state in %s)\n", base, *dir, stateDir)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
	case <-ctx.Done():
	}
	// Stop taking requests, then stop the runs at their next checkpoint:
	// they stay resumable and the next serve or run resumes durable ones.
	fmt.Fprintln(e.stdout, "shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	stopRuns()
	srv.Wait()
	return exitOK
}

func loadTokens(file, env string) (intake.Tokens, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read tokens: %w", err)
		}
		return intake.ParseTokens(b)
	}
	if strings.TrimSpace(env) != "" {
		return intake.ParseTokenList(env)
	}
	return nil, nil
}
