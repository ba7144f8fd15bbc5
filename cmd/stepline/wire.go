package main

import (
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/pricing"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// stepHandler builds the step function the local engine invokes for live
// runs: the same shared/steprun code the step Lambda runs, over the SQLite
// store, with secrets from the environment, the real executors, Bedrock
// through the AWS configuration chain (bedrockClient), and agent steps'
// MCP servers, stdio ones too (started with this process's environment),
// and openclaw steps' device identity read from the directory their
// project names (~ is $HOME).
// The registry it builds is added to regs, whose Close ends its MCP
// sessions when the command is done.
func stepHandler(e env, dir string, approvals steprun.Notifier, regs *registries) func(*sqlite.Store) local.StepHandler {
	return func(st *sqlite.Store) local.StepHandler {
		client := &http.Client{Transport: e.transport}
		h := handler(e, st, dir, approvals, client, executor.Deps{Bedrock: &bedrockClient{}, MCPStdio: true, Environ: os.Environ(),
			OpenClawIdentityFiles: true, Home: e.getenv("HOME")})
		regs.add(h.Executors.(*executor.Registry))
		return h
	}
}

// registries are the executor registries a command built; Close ends
// their MCP sessions (and stops the stdio servers they started).
type registries struct {
	mu   sync.Mutex
	list []*executor.Registry
}

func (r *registries) add(reg *executor.Registry) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, reg)
}

// Close closes every registry added.
func (r *registries) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, reg := range r.list {
		errs = append(errs, reg.Close())
	}
	r.list = nil
	return errors.Join(errs...)
}

// runner is the local runner of a command with the registries its step
// functions built: Close closes both.
type runner struct {
	*local.Runner
	regs *registries
	dir  string // the state directory (artifacts are under it)
}

// Close closes the runner's store and ends its MCP sessions.
func (r *runner) Close() error {
	return errors.Join(r.regs.Close(), r.Runner.Close())
}

// scriptedHandler builds the step function of scripted runs (--responses):
// every executor, webhook check and shell check answers from the run's
// replies, and the HTTP client of its notifications and failure webhooks
// refuses every request, so that nothing of an offline run leaves the
// machine.
func scriptedHandler(e env, dir string, approvals steprun.Notifier) func(*sqlite.Store, *executor.Responses) local.StepHandler {
	return func(st *sqlite.Store, replies *executor.Responses) local.StepHandler {
		client := &http.Client{Transport: offline{}}
		h := handler(e, st, dir, approvals, client, executor.Deps{Responses: replies})
		h.CheckReplies = replies // webhook and shell checks answer from the file too
		return h
	}
}

func handler(e env, st *sqlite.Store, dir string, approvals steprun.Notifier, client *http.Client, deps executor.Deps) *steprun.Handler {
	secrets := secret.Env(e.getenv)
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The price table is parsed at the first call it prices: a command
	// builds a live and a scripted step function and runs one of them.
	prices := pricing.Lazy(func() (*pricing.Table, error) {
		t, err := pricing.Default()
		if err != nil {
			logger.Warn("price table does not load; costs stay unknown", "err", err)
		}
		return t, err
	})
	deps.HTTP, deps.Secrets, deps.Logger, deps.Defaults = client, secrets, logger, settings.DefaultsFromEnv(e.getenv)
	return &steprun.Handler{
		Notifier:      approvals,
		Notifications: &notify.Dispatcher{HTTP: client, Secrets: secrets, Logger: logger, TelegramAPI: e.getenv("STEPLINE_TELEGRAM_API")},
		Store:         st,
		Executors:     executor.NewRegistry(deps),
		Artifacts:     steprun.Dir{Root: filepath.Join(dir, "artifacts")},
		Pricing:       prices,
		HTTP:          client,
		Secrets:       secrets,
		Logger:        logger,
		// Shell checks run here, on the operator's machine, as the
		// pipeline's author wrote them (never on Lambda).
		ShellChecks: true,
	}
}

// stepNotifications is the local runner's Config.Notifications: the
// dispatcher of the step function handler built (live or scripted),
// through which the runner fires the notifications of a run it closes
// outside a step, so they go where the run's steps' own go (nowhere over
// the network for a scripted run).
func stepNotifications(h local.StepHandler) notify.Notifier {
	sh, ok := h.(*steprun.Handler)
	if !ok || sh.Notifications == nil {
		return nil
	}
	return sh.Notifications
}

// offline is the transport of scripted runs: it refuses every request.
type offline struct{}

var errOffline = errors.New("refused: a scripted run (--responses) sends nothing over the network")

func (offline) RoundTrip(*http.Request) (*http.Response, error) { return nil, errOffline }
