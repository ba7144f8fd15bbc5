// Package boot is the start-up Stepline's Lambda functions share: the JSON
// logger at LOG_LEVEL, the AWS configuration read from the variables the
// Lambda runtime sets (package shared/awsenv, no SDK config chain),
// tracing from the OTEL_* variables (package shared/telemetry; off when
// none are set), the run store on the table TABLE_NAME names, the
// secrets SECRET_REFS maps, and the handing of the handler, wrapped in
// the function's tracing, to the Lambda runtime. A function's main reads
// its own settings and builds its own handler between Start and Serve.
// Read fetches what a function must have before it answers anything (a
// signing key) while the rest of the start goes on, and Await makes the
// first invocation wait for it, so that the read also overlaps the Lambda
// runtime's start and its first request for work; Prepare builds the JSON
// codecs of the handler's types while the start waits, not in the first
// invocation.
//
// A function whose configuration is unusable logs why and exits, so the
// Lambda service reports a failed init rather than a function that half
// works; a value Await waits for that could not be read (twice: the
// second time in the first invocation) exits the same way, before
// anything is answered.
package boot

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/telemetry"
)

// SecretTimeout bounds each read of a secret a function needs to start
// (a signing key, the webhook tokens).
const SecretTimeout = 10 * time.Second

// Function is a function starting up.
type Function struct {
	Name    string // the function's name: its server spans' name
	Log     *slog.Logger
	AWS     aws.Config
	Tracing *telemetry.Provider // nil: tracing is off

	getenv func(string) string
	exit   func(int)
}

// Start returns the function name's logger (JSON on stdout at LOG_LEVEL:
// debug, info (the default), warn or error), its AWS configuration and
// its tracing (telemetry.SetupFunction: a tracing configuration it
// refuses is logged and tracing stays off). It exits when the AWS
// configuration does not load.
func Start(name string) *Function {
	f := start(name, os.Stdout, os.Getenv, os.Exit)
	f.Tracing = telemetry.SetupFunction(context.Background(), f.getenv, name, f.Log)
	return f
}

func start(name string, w io.Writer, getenv func(string) string, exit func(int)) *Function {
	level := logLevel(getenv("LOG_LEVEL"))
	f := &Function{Name: name, Log: slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), getenv: getenv, exit: exit}
	cfg, err := awsenv.Load(os.Environ())
	f.Check(err, "load AWS configuration")
	f.AWS = cfg
	return f
}

// logLevel reads LOG_LEVEL: unset, or a level slog does not know, is
// info. Unset is decided before slog parses anything: its refusal of ""
// is an error built with fmt, which every start would otherwise build.
func logLevel(s string) slog.Level {
	var level slog.Level
	if s != "" && level.UnmarshalText([]byte(s)) != nil {
		return slog.LevelInfo
	}
	return level
}

// Fail logs msg with args as an error and exits with status 1.
func (f *Function) Fail(msg string, args ...any) {
	f.Log.Error(msg, args...)
	f.exit(1)
}

// Check fails with msg and the error when err is not nil.
func (f *Function) Check(err error, msg string) {
	if err != nil {
		f.Fail(msg, "err", err)
	}
}

// Store returns the run store on the DynamoDB table TABLE_NAME names
// (through the store's own client, see package shared/store/dynamo); it
// exits when TABLE_NAME is unset.
func (f *Function) Store() *dynamo.Store {
	table := f.getenv("TABLE_NAME")
	if table == "" {
		f.Fail("TABLE_NAME is not set")
	}
	db, err := dynamo.NewClient(f.AWS)
	f.Check(err, "dynamodb")
	return dynamo.New(db, table)
}

// Secrets returns the ${NAME} secrets of the function (secret.ForFunction:
// the names SECRET_REFS maps are read from Secrets Manager and Parameter
// Store when first used, any other from the environment) and its Secrets
// Manager client, for the secrets it reads itself at start; it exits
// when SECRET_REFS is malformed.
func (f *Function) Secrets() (*secret.AWS, *secret.SecretsManager) {
	secrets, sm, err := secret.ForFunction(f.AWS, f.getenv)
	f.Check(err, "secrets")
	return secrets, sm
}

// Serve wraps h in the function's tracing (telemetry.Lambda: a server
// span per invocation, exported before it returns) and hands it to the
// Lambda runtime with opts. It does not return.
func Serve[In, Out any](f *Function, h func(context.Context, In) (Out, error), opts ...lambda.Option) {
	lambda.StartWithOptions(telemetry.Lambda(f.Tracing, f.Name, h), opts...)
}
