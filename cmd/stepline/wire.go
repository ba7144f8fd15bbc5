package main

import (
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/pricing"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// stepHandler builds the step function the local engine invokes: the same
// shared/steprun code the step Lambda runs, over the SQLite store, with
// secrets from the environment and, with --responses, scripted replies
// standing in for every executor.
func stepHandler(e env, responses *executor.Responses, dir string, approvals steprun.Notifier) func(*sqlite.Store) local.StepHandler {
	return func(st *sqlite.Store) local.StepHandler {
		client := &http.Client{}
		secrets := secret.Env(e.getenv)
		logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		prices, err := pricing.Default()
		if err != nil {
			logger.Warn("price table does not load; costs stay unknown", "err", err)
		}
		return &steprun.Handler{
			Notifier:      approvals,
			Notifications: &notify.Dispatcher{HTTP: client, Secrets: secrets, Logger: logger},
			Store:         st,
			Executors:     executor.NewRegistry(executor.Deps{HTTP: client, Secrets: secrets, Responses: responses, Logger: logger, Defaults: executor.DefaultsFromEnv(e.getenv)}),
			Artifacts:     steprun.Dir{Root: filepath.Join(dir, "artifacts")},
			Pricing:       prices,
			HTTP:          client,
			Secrets:       secrets,
			Logger:        logger,
		}
	}
}
