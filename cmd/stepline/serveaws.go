package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/spf13/pflag"

	"github.com/stepline/stepline/shared/awsui"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/webui"
)

// DefaultStack is the stack serve --aws browses without --stack: the
// app's default name (infra/app's stepline:stackName).
const DefaultStack = "Stepline"

// awsFlags are serve's flags of --aws.
type awsFlags struct {
	on                           *bool
	stack, table, region, prefix *string
}

func (a *awsFlags) register(fs *pflag.FlagSet) {
	a.on = fs.Bool("aws", false, "browse a deployed stack in the web UI instead of running pipelines here: its table with your AWS credentials, approvals through its task tokens")
	a.stack = fs.String("stack", DefaultStack, "with --aws: the stack (its core stack) whose outputs name the table and the state machines' prefix")
	a.table = fs.String("table", "", "with --aws: the DynamoDB table (default: the stack's TableName output)")
	a.region = fs.String("region", "", "with --aws: the AWS region (default: the AWS configuration's, AWS_REGION)")
	a.prefix = fs.String("prefix", "", "with --aws: the state machines' name prefix, <prefix>-<pipeline> (default: the stack's StateMachinePrefix output, else the stack's name)")
}

// localOnly are serve's flags that --aws has no use for.
var localOnly = []string{"pipelines", "config", "max-runs", "schedule-grace", "url", "dir", "db"}

// checkAWSFlags refuses --aws with flags of a local server, and the
// flags of --aws without it.
func checkAWSFlags(fs *pflag.FlagSet, a awsFlags) error {
	if *a.on {
		for _, name := range localOnly {
			if fs.Changed(name) {
				return fmt.Errorf("--%s has no use with --aws: the stack runs the pipelines", name)
			}
		}
		return nil
	}
	for _, name := range []string{"stack", "table", "region", "prefix"} {
		if fs.Changed(name) {
			return fmt.Errorf("--%s needs --aws", name)
		}
	}
	return nil
}

// serveAWS serves the web UI over a deployed stack (package awsui).
func serveAWS(ctx context.Context, e env, f serveFlags, a awsFlags) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return code
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	tokens, err := loadTokens(ctx, *f.tokensFile, e.getenv)
	if err != nil {
		return fail(exitUsage, err)
	}
	if *f.insecure && len(tokens) > 0 {
		return fail(exitUsage, errors.New("--insecure-no-auth contradicts the tokens configured: drop one of them"))
	}
	var opts []func(*config.LoadOptions) error
	if *a.region != "" {
		opts = append(opts, config.WithRegion(*a.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fail(exitFailed, fmt.Errorf("load the AWS configuration: %w", err))
	}
	if cfg.Region == "" {
		return fail(exitUsage, errors.New("no AWS region is configured: pass --region, or set AWS_REGION or region in the profile of ~/.aws/config"))
	}
	table, prefix := *a.table, *a.prefix
	if table == "" {
		cf, err := awsui.NewCloudFormation(cfg)
		if err != nil {
			return fail(exitFailed, err)
		}
		st, err := cf.LookupStack(ctx, *a.stack)
		if err != nil {
			return fail(exitFailed, fmt.Errorf("%w (--stack names the stack, --table the table)", err))
		}
		if table = st.Outputs[awsui.OutputTableName]; table == "" {
			return fail(exitFailed, fmt.Errorf("stack %q has no %s output: pass --table", *a.stack, awsui.OutputTableName))
		}
		if prefix == "" {
			prefix = st.Outputs[awsui.OutputStateMachinePrefix]
		}
	}
	if prefix == "" {
		prefix = *a.stack
	}
	db, err := dynamo.NewClient(cfg)
	if err != nil {
		return fail(exitFailed, err)
	}
	browser, err := awsui.New(ctx, awsui.Config{Store: dynamo.New(db, table), SFN: sfn.NewFromConfig(cfg), Region: cfg.Region, Prefix: prefix, Logger: logger})
	if err != nil {
		return fail(exitFailed, err)
	}
	uiCfg, err := browser.WebUI()
	if err != nil {
		return fail(exitFailed, err)
	}
	uiCfg.Tokens, uiCfg.Logger = tokens, logger
	ui, err := webui.New(uiCfg)
	if err != nil {
		return fail(exitFailed, err)
	}
	ln, err := net.Listen("tcp", *f.addr)
	if err != nil {
		return fail(exitFailed, err)
	}
	defer ln.Close()
	if err := checkExposure(ln.Addr(), len(tokens) > 0, *f.insecure); err != nil {
		return fail(exitUsage, err)
	}
	mux := http.NewServeMux()
	mux.Handle(ui.Prefix()+"/", ui)
	mux.Handle(ui.Prefix(), ui)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, ui.Prefix()+"/", http.StatusSeeOther)
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: local.ReadHeaderTimeout, ReadTimeout: local.ReadTimeout,
		WriteTimeout: local.WriteTimeout, IdleTimeout: local.IdleTimeout, MaxHeaderBytes: local.MaxHeaderBytes}
	fmt.Fprintf(e.stdout, "browsing table %s (state machines %s-*, %s)\nweb UI: http://%s%s/\n", table, prefix, cfg.Region, ln.Addr(), ui.Prefix())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fail(exitFailed, err)
		}
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	return exitOK
}
