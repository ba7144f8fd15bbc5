// Command ingest is the ingest function's Lambda. It turns inbound events
// into runs with package shared/inbound (authenticate, normalize, route,
// stage gate, deduplicate, record, start) and starts each run with Step
// Functions StartExecution: execution name = run ID, input =
// {"trigger": <normalized event>}. It answers
//
//   - API Gateway HTTP API requests (payload format 2.0):
//     POST /webhook (source from ?source= or X-Pipeline-Source; the bearer
//     token of the Authorization header must be one of the webhook tokens)
//     and POST /pipelines/{name}/runs or /run (a manual run; the route is
//     IAM-authorized). 202 with {status, run_id, pipeline, source, severity,
//     summary, reason} when accepted, deduplicated or skipped; 400, 401,
//     404, 413 or 422 with {"error"} otherwise;
//   - the IAM-authorized run routes (package shared/runview answers them as
//     stepline serve does): GET /runs (pipeline, status, team, stage, limit
//     1..200, offset), GET /runs/{id} (the run with its steps) and POST
//     /runs/{id}/rerun ({"from_step"}: the new run and the step records it
//     reuses are written, then the state machine is started with the rerun
//     block in its input; 202 {status, run_id, original_run_id, from_step,
//     prior_steps_loaded}; 404 unknown run, 422 unknown step, 409 a run
//     still active). A failed execution can also be redriven in place
//     (Step Functions RedriveExecution, from the console or
//     "aws stepfunctions redrive-execution"): it goes on from the state that
//     failed, with the same run ID; a rerun is a new run;
//   - GET /pipelines, GET /pipelines/{name} (the resolved pipeline and its
//     bundled file) and GET /schedules (each schedule's next fire, computed
//     from its cron and time zone; EventBridge Scheduler fires them),
//     IAM-authorized, answered as stepline serve answers them;
//   - trigger events from EventBridge rules, {"pipeline", "trigger",
//     "event"}: the rule's pipeline is started when its whole
//     trigger.match holds (an event naming its pipeline starts that one),
//     deduplicated like a webhook.
//
// # Pipelines
//
// Routing needs each pipeline's trigger.match, stage and dedup, which the
// state machines do not carry. Each stack that holds pipelines publishes
// them as a bundle (package shared/catalog): an object in the CDK asset
// bucket named by a parameter under /stepline/<STATE_MACHINE_PREFIX>/pipelines,
// holding each pipeline file's source and its compiled model (the pipeline
// as the CDK app compiled it at synth, through the compile stepline
// validate runs, agents resolved from the project). The function never
// compiles: it decodes the models with encoding/json, and links no
// compiler, schema validator, Liquid or YAML parser. The function lists
// those parameters and reads every bundle when its container starts, while
// the rest of the start goes on (the webhook tokens' read, the runtime's
// first poll for work): the first request or trigger event waits for that
// read if it is still under way, and an event of no kind the function
// serves does not. A read that fails is logged; every request is then
// answered 500 (a trigger event fails), each reading the bundles again,
// until one read succeeds. The models are decoded, in file-name order (the
// routing order), when the first request or trigger event arrives. Models
// that do not decode are logged then, and every request is answered 500 (a
// trigger event fails) until a deployment changes them. A bundle written
// before the models were bundled (format 1) does not load: the log says to
// deploy the stacks again. It lists the parameters again at most once a
// minute, on an invocation: when a parameter changed (a stack deployed new
// files), it reads and decodes the bundles again and routes with them from
// then on; when that fails, it logs the error and keeps the pipelines it
// had. So adding a pipeline changes its own stack only, and reaches a warm
// function within a minute of its stack's deployment.
//
// With PIPELINE_DIR set, the bundle documents in that directory (*.json,
// as the CDK app writes them: a stack's bundle asset in cdk.out) are read
// instead of the deployment's parameters, once, at start. Each
// pipeline's state machine is found by the naming rule of package
// shared/awsenv, <STATE_MACHINE_PREFIX>-<pipeline> in
// STATE_MACHINE_ACCOUNT and the function's region: the environment does
// not grow with the pipelines.
//
// Environment:
//
//	TABLE_NAME                DynamoDB table of runs and dedup claims (required)
//	STATE_MACHINE_PREFIX      the deployment's name prefix: state machines are <prefix>-<pipeline> (required)
//	STATE_MACHINE_ACCOUNT     the account of the state machines (required)
//	WEBHOOK_TOKEN_SECRET_ARN  Secrets Manager secret holding the webhook bearer tokens, in
//	                          inbound.ParseTokenList form: a token, team=token pairs or a JSON
//	                          object team → token (required; read once, from when the container
//	                          starts, and waited for by the first event that needs the pipelines:
//	                          a secret that cannot be read or holds no usable list stops the
//	                          function then)
//	PIPELINE_DIR              directory of bundle documents (*.json), read instead of the deployment's bundles
//	LOG_LEVEL                 debug, info (default), warn or error
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv; AWS_ENDPOINT_URL_SFN, AWS_ENDPOINT_URL_SSM,
// AWS_ENDPOINT_URL_S3 and the like are honoured).
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/functions/internal/boot"
	"github.com/stepline/stepline/functions/internal/states"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/awsrest"
	"github.com/stepline/stepline/shared/catalog"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/secret"
)

func main() {
	go boot.Prepare[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse]()
	f := boot.Start("ingest")
	st := f.Store()
	names, err := awsenv.StateMachinesFromEnv(os.Environ())
	f.Check(err, "state machines")
	sm, err := secret.NewSecretsManager(f.AWS)
	f.Check(err, "secrets")
	tokenARN := os.Getenv("WEBHOOK_TOKEN_SECRET_ARN")
	if tokenARN == "" {
		f.Fail("WEBHOOK_TOKEN_SECRET_ARN is not set: webhooks would be unauthenticated")
	}
	// The webhook tokens are read while the pipeline bundles are: two
	// independent round trips of the start, one after the other before.
	secretRead := make(chan error, 1)
	var tokenList secret.SecretValue
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), boot.SecretTimeout)
		defer cancel()
		var err error
		tokenList, err = sm.GetSecretValue(ctx, tokenARN)
		secretRead <- err
	}()
	executions, err := states.New(f.AWS)
	f.Check(err, "step functions")
	env := &environment{names: names, runs: st, sfn: executions, log: f.Log}
	// The tokens are waited for when the first handler is built, on the
	// first event that needs the pipelines: the start does not wait for
	// the secret's round trip, and an event of no kind the function serves
	// never does. Tokens that cannot be read stop the function then, as
	// they would have stopped its start.
	readTokens := sync.OnceFunc(func() {
		f.Check(<-secretRead, "WEBHOOK_TOKEN_SECRET_ARN")
		tokens, err := inbound.ParseTokenList(tokenList.String)
		if err != nil || len(tokens) == 0 {
			// The parse error may quote the secret: say where, not what.
			f.Fail("WEBHOOK_TOKEN_SECRET_ARN: the secret holds no usable token list (want a token, team=token pairs or a JSON object)", "secret", tokenARN)
		}
		env.tokens = tokens
	})
	env.waitTokens = readTokens

	var current func(context.Context) (*pipelineSet, error)
	if dir := os.Getenv("PIPELINE_DIR"); dir != "" {
		readTokens()
		files, err := catalog.ReadDir(dir)
		f.Check(err, "PIPELINE_DIR")
		h, err := env.handler(files)
		f.Check(err, "pipelines")
		set := builtSet(h, f.Log)
		current = func(context.Context) (*pipelineSet, error) { return set, nil }
	} else {
		ps, err := secret.NewParameterStore(f.AWS)
		f.Check(err, "parameter store")
		s3, err := awsrest.NewS3(f.AWS)
		f.Check(err, "s3")
		w := &catalog.Watcher[*pipelineSet]{
			Loader: catalog.Loader{Params: ps, Objects: s3, Prefix: names.Prefix},
			Every:  reloadEvery,
			Build:  env.fromBundles(),
			Log:    f.Log,
		}
		// The bundles are read while the rest of the start goes on and
		// the function takes its first event: an event that needs the
		// pipelines waits for the read (the Watcher's lock), one that does
		// not waits for nothing. A read that fails is logged, and the next
		// event that needs the pipelines reads them again.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), bundleTimeout)
			defer cancel()
			if _, err := w.Current(ctx); err != nil {
				f.Log.Error("pipelines: the deployment's bundles do not load; the next event that needs them reads them again", "err", err.Error())
			}
		}()
		current = w.Current
	}
	boot.Serve(f, func(ctx context.Context, raw json.RawMessage) (any, error) {
		return handle(ctx, raw, current, f.Log)
	})
}

// bundleTimeout bounds the start's read of the pipeline bundles (one
// listing and the bundles' objects).
const bundleTimeout = 20 * time.Second

// reloadEvery is how often, at most, the function checks whether the
// deployment's pipeline bundles changed (one GetParametersByPath call).
const reloadEvery = time.Minute

// environment is what every handler of the container shares; the
// pipelines are what a reload changes. Its tokens are set before a
// handler is built (waitTokens).
type environment struct {
	names awsenv.StateMachines
	runs  interface {
		runStore
		inbound.Store
	}
	sfn    ExecutionStarter
	tokens inbound.Tokens
	// waitTokens, when set, sets tokens, waiting for their read; the
	// first handler calls it.
	waitTokens func()
	log        *slog.Logger
}

// handler builds the handler of the bundled pipeline files, in their
// order (file-name order: the routing order).
func (e *environment) handler(files []catalog.File) (*handler, error) {
	if e.waitTokens != nil {
		e.waitTokens()
	}
	ps, err := catalog.Pipelines(files)
	if err != nil {
		return nil, err
	}
	router, err := inbound.NewRouter(ps)
	if err != nil {
		return nil, err
	}
	start := starter{sfn: e.sfn, machines: machinesOf(ps, e.names)}
	webhooks, err := inbound.New(inbound.Config{Router: router, Store: e.runs, Starter: start, Tokens: e.tokens, Logger: e.log})
	if err != nil {
		return nil, err
	}
	trigger, err := inbound.New(inbound.Config{Router: router, Store: e.runs, Starter: start, Logger: e.log})
	if err != nil {
		return nil, err
	}
	dep, err := newDeployed(files, ps)
	if err != nil {
		return nil, err
	}
	e.log.Debug("pipelines loaded", "pipelines", sortedNames(router))
	return &handler{webhooks: webhooks, events: trigger, runs: e.runs, start: start, deployed: dep, log: e.log}, nil
}

// fromBundles returns the Build of the function's catalog.Watcher. The
// first set, read when the container starts, is built (its models decoded)
// when the first event that needs it arrives (see pipelineSet): an event
// the function does not serve needs none of it. Every later set, read on
// an invocation when a deployment changed the bundles, is built before it
// replaces the one in use, so that models which do not load leave the
// pipelines the function had in place.
func (e *environment) fromBundles() func([]catalog.File) (*pipelineSet, error) {
	first := true // the Watcher calls Build under its lock
	return func(files []catalog.File) (*pipelineSet, error) {
		if first {
			first = false
			return lazySet(func() (*handler, error) { return e.handler(files) }, e.log), nil
		}
		h, err := e.handler(files)
		if err != nil {
			return nil, err
		}
		return builtSet(h, e.log), nil
	}
}
