// Package boot is the start-up Stepline's Lambda functions share: the JSON
// logger at LOG_LEVEL, the AWS configuration read from the variables the
// Lambda runtime sets (package shared/awsenv, no SDK config chain), and the
// run store on the table TABLE_NAME names. A function whose configuration
// is unusable logs why and exits, so the Lambda service reports a failed
// init rather than a function that half works.
package boot

import (
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/store/dynamo"
)

// Function is a function starting up.
type Function struct {
	Log *slog.Logger
	AWS aws.Config

	exit func(int)
}

// Start returns the function's logger (JSON on stdout at LOG_LEVEL: debug,
// info (the default), warn or error) and its AWS configuration; it exits
// when the configuration does not load.
func Start() *Function { return start(os.Stdout, os.Exit) }

func start(w io.Writer, exit func(int)) *Function {
	var level slog.Level
	if err := level.UnmarshalText([]byte(os.Getenv("LOG_LEVEL"))); err != nil {
		level = slog.LevelInfo
	}
	f := &Function{Log: slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), exit: exit}
	cfg, err := awsenv.Load(os.Environ())
	f.Check(err, "load AWS configuration")
	f.AWS = cfg
	return f
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
	table := os.Getenv("TABLE_NAME")
	if table == "" {
		f.Fail("TABLE_NAME is not set")
	}
	db, err := dynamo.NewClient(f.AWS)
	f.Check(err, "dynamodb")
	return dynamo.New(db, table)
}
