package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/schedule"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
)

// linkNotifier tells approvers of a local run where to decide: it logs
// the signed approval link.
// With chat routes (stepline.yaml's human_approval), it also sends the
// request to the run's team's chat channel.
type linkNotifier struct {
	base   string
	signer *approval.Signer
	log    *slog.Logger
	out    func(string)
	chat   *approval.Router // nil: no chat channels
}

func (n *linkNotifier) NotifyApproval(ctx context.Context, a store.Approval, stage string) error {
	link := (&approval.Service{Signer: n.signer}).Link(n.base, a)
	n.log.Info("approval requested", "run", a.RunID, "step", a.Step, "stage", stage, "link", link)
	if n.out != nil {
		n.out(fmt.Sprintf("approval needed: run %s step %q: %s", a.RunID, a.Step, link))
	}
	if n.chat == nil {
		return nil
	}
	kind, err := n.chat.Request(ctx, a, stage)
	switch {
	case errors.Is(err, approval.ErrNoRoute):
		return nil
	case err != nil:
		return err
	case kind != "":
		n.log.Info("approval request sent", "run", a.RunID, "step", a.Step, "channel", kind)
	}
	return nil
}

// chatRoutes returns the approval routes of the project: the one given,
// else the stepline.yaml governing the pipelines directory, if any.
func chatRoutes(p *project.Project, dir string) (approval.Routes, error) {
	if p == nil {
		path, err := project.Find(dir)
		if err != nil || path == "" {
			return approval.Routes{}, err
		}
		if p, err = project.Load(path); err != nil {
			return approval.Routes{}, err
		}
	}
	if p.Diagnostics.HasErrors() {
		return approval.Routes{}, fmt.Errorf("%s has errors:\n%s", p.Path, p.Diagnostics)
	}
	return p.ApprovalRoutes(), nil
}

// cmdServe runs the local HTTP front door. With human_approval (or
// notifications.telegram) in the project's stepline.yaml, approval
// requests also go to the run's team's chat channel, and serve takes the
// buttons' decisions: Telegram bots by long polling, or at
// POST /telegram/{bot} when the channel names a webhook_secret; Slack apps
// at POST /slack/{app}. Secrets resolve from the environment.
// STEPLINE_TELEGRAM_API and STEPLINE_SLACK_API replace the Bot API's and
// Slack's base URLs (a self-hosted Bot API server, a test double).
func cmdServe(c *cobra.Command) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	var f serveFlags
	f.addr = fs.String("addr", "127.0.0.1:8080", "listen address; without tokens, loopback only (see --insecure-no-auth)")
	f.dir = fs.String("pipelines", "pipelines", "directory of pipeline files, routed in file-name order")
	f.maxRuns = fs.Int("max-runs", inbound.DefaultMaxRuns, "runs driven at once; more answer 429")
	f.tokensFile = fs.String("tokens", "", "YAML file of per-team bearer tokens; team \"admin\" sees and starts everything (default: $STEPLINE_TOKENS, team=token,...)")
	f.insecure = fs.Bool("insecure-no-auth", false, "serve without tokens on an address other than loopback: anyone who reaches it may start and read every run")
	f.publicURL = fs.String("url", "", "public base URL of approval links (default http://ADDR)")
	f.grace = fs.Duration("schedule-grace", schedule.DefaultGrace, "how old a missed schedule tick may be and still fire once when serve starts")
	f.config = fs.String("config", "", "the project file (stepline.yaml): pipelines compile in it, and --pipelines defaults to its pipelines directory; default: the stepline.yaml above each pipeline file")
	var a awsFlags
	a.register(fs)
	return func(ctx context.Context, e env, _ []string) int {
		if err := checkAWSFlags(fs, a); err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitUsage
		}
		if *a.on {
			return serveAWS(ctx, e, f, a)
		}
		return serve(ctx, e, fs, sf, f)
	}
}

// serveFlags are serve's flags but the state's.
type serveFlags struct {
	addr, dir, tokensFile, publicURL, config *string
	maxRuns                                  *int
	insecure                                 *bool
	grace                                    *time.Duration
}

func serve(ctx context.Context, e env, fs *pflag.FlagSet, sf stateFlags, f serveFlags) int {
	addr, dir, maxRuns, tokensFile, insecure, publicURL, grace, config := f.addr, f.dir, f.maxRuns, f.tokensFile, f.insecure, f.publicURL, f.grace, f.config
	if !useProject(e, fs, *config, &sf, dir) {
		return exitFailed
	}
	if e.serveHeap != nil {
		e.serveHeap()
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	tokens, err := loadTokens(ctx, *tokensFile, e.getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitUsage
	}
	if *insecure && len(tokens) > 0 {
		fmt.Fprintln(e.stderr, "stepline: --insecure-no-auth contradicts the tokens configured: drop one of them")
		return exitUsage
	}
	// The address bound decides, not the one asked for: "localhost" or a
	// host name may resolve anywhere, ":8080" is every interface.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer ln.Close()
	if err := checkExposure(ln.Addr(), len(tokens) > 0, *insecure); err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitUsage
	}
	if *insecure && !isLoopback(ln.Addr()) {
		fmt.Fprintf(e.stderr, "stepline: warning: serving %s without authentication (--insecure-no-auth)\n", ln.Addr())
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
	base := *publicURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	signer := &approval.Signer{Key: key}
	routes, err := chatRoutes(sf.project, *dir)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	secrets := secret.Env(e.getenv)
	chatHTTP := &http.Client{Transport: e.transport, Timeout: approval.PollWait + 30*time.Second}
	notifier := &linkNotifier{base: base, signer: signer, log: logger, out: func(s string) { fmt.Fprintln(e.stdout, s) }}
	if !routes.Empty() {
		notifier.chat = &approval.Router{Routes: routes, Service: &approval.Service{Signer: signer}, BaseURL: base,
			Secrets: secrets, HTTP: chatHTTP, TelegramAPI: e.getenv("STEPLINE_TELEGRAM_API"), SlackAPI: e.getenv("STEPLINE_SLACK_API"), Logger: logger}
	}
	regs := &registries{}
	defer regs.Close()
	r, err := local.Open(ctx, local.Config{Dir: stateDir, DBPath: sf.db, Logger: logger, Project: sf.project,
		Handler: stepHandler(e, stateDir, notifier, regs), Scripted: scriptedHandler(e, stateDir, notifier), Notifications: stepNotifications})
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer r.Close()
	runCtx, stopRuns := context.WithCancel(context.Background())
	defer stopRuns()
	srv, err := local.NewServer(runCtx, local.ServerConfig{
		Runner: r, PipelinesDir: *dir, Tokens: tokens, MaxRuns: *maxRuns, Signer: signer, Logger: logger,
		Version: version(), ScheduleGrace: *grace,
		Chat: local.ChatConfig{Routes: routes, Secrets: secrets, HTTP: chatHTTP, TelegramAPI: e.getenv("STEPLINE_TELEGRAM_API"), BaseURL: base},
		HTTP: local.HTTPLimits{
			ReadHeaderTimeout: local.ReadHeaderTimeout,
			ReadTimeout:       local.ReadTimeout,
			WriteTimeout:      local.WriteTimeout,
			IdleTimeout:       local.IdleTimeout,
			MaxHeaderBytes:    local.MaxHeaderBytes,
		},
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	sweep(ctx, e, r)
	srv.StartSchedules() // after the sweep, which would take the runs it starts for a dead process's
	hs := srv.HTTPServer()
	fmt.Fprintf(e.stdout, "serving on %s (pipelines from %s, state in %s)\nweb UI: %s/ui/\n", base, *dir, stateDir, base)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
serving:
	for {
		select {
		case err := <-errc:
			if !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(e.stderr, "stepline: %v\n", err)
				return exitFailed
			}
			break serving
		case <-hup: // as POST /reload
			if n, err := srv.Reload(); err != nil {
				fmt.Fprintf(e.stderr, "stepline: reload: %v (the pipelines loaded before stay)\n", err)
			} else {
				fmt.Fprintf(e.stdout, "reloaded %d pipelines\n", n)
			}
		case <-ctx.Done():
			break serving
		}
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

// loadTokens reads the teams' tokens from file, else from
// $STEPLINE_TOKENS, and resolves the ${NAME} references in them from the
// environment. A source that is named but holds no token is an error, not
// a server open to everyone; every token must name a team.
func loadTokens(ctx context.Context, file string, getenv func(string) string) (inbound.Tokens, error) {
	var tokens inbound.Tokens
	var err error
	var from string
	switch env := getenv("STEPLINE_TOKENS"); {
	case file != "":
		from = file
		b, rerr := os.ReadFile(file)
		if rerr != nil {
			return nil, fmt.Errorf("read tokens: %w", rerr)
		}
		tokens, err = intake.ParseTokens(b)
	case strings.TrimSpace(env) != "":
		from = "$STEPLINE_TOKENS"
		tokens, err = intake.ParseTokenList(env)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s: no tokens: list team=token pairs, or name no tokens to serve loopback only", from)
	}
	if tokens, err = tokens.Expand(ctx, secret.Env(getenv)); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if err := tokens.CheckTeams(); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return tokens, nil
}

// checkExposure refuses to serve a non-loopback address without tokens,
// unless insecure says so.
func checkExposure(addr net.Addr, haveTokens, insecure bool) error {
	if haveTokens || insecure || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("refusing to serve %s without tokens: anyone who reaches it could start and read every run; "+
		"configure tokens (--tokens FILE or $STEPLINE_TOKENS), listen on loopback (--addr 127.0.0.1:PORT), "+
		"or pass --insecure-no-auth", addr)
}

// isLoopback reports whether addr is a loopback IP address (127.0.0.0/8,
// ::1); the unspecified address (all interfaces) is not.
func isLoopback(addr net.Addr) bool {
	a, ok := addr.(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}
