// Command stepline compiles, checks and runs Stepline pipelines.
//
// The main function only wires: each subcommand lives in its own file as a
// function over an env (arguments and standard streams), so tests call it
// directly and the logic stays in the importable packages under shared/ and
// compiler/.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	_ "time/tzdata" // schedule time zones, also where the system has no zone database

	"github.com/stepline/stepline/shared/telemetry"
)

// env is what a subcommand may touch of the process.
type env struct {
	args   []string // arguments after the subcommand name
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// transport carries the HTTP requests of live runs (executors,
	// notifications, failure webhooks); nil: http.DefaultTransport.
	transport http.RoundTripper
	// terminal reports whether stdin is a terminal to ask approvals on;
	// nil: whether it is one.
	terminal func(io.Reader) bool
}

// interactive reports whether approvals can be asked for on stdin.
func (e env) interactive() bool {
	if e.terminal != nil {
		return e.terminal(e.stdin)
	}
	return isTerminal(e.stdin)
}

// command is one subcommand. run returns the process exit code.
type command struct {
	summary string
	run     func(ctx context.Context, e env) int
}

// Exit codes shared by the subcommands.
const (
	exitOK     = 0
	exitFailed = 1 // the input was checked and found wanting
	exitUsage  = 2 // bad flags or arguments
)

func commands() map[string]command {
	return map[string]command{
		"compile":     {"compile a pipeline to a Step Functions state machine (ASL)", cmdCompile},
		"run":         {"compile and run a pipeline locally (SQLite, offline with --responses)", cmdRun},
		"runs":        {"list local runs", cmdRuns},
		"show":        {"show a local run: steps, their trust reports and feedback, and execution history", cmdShow},
		"feedback":    {"mark a local run or one of its steps correct, partial or incorrect (calibration labels)", cmdFeedback},
		"calibration": {"print a pipeline's calibration bins per step configuration (bucket)", cmdCalibration},
		"readiness":   {"judge a pipeline's readiness: criteria against its local runs (advisory)", cmdReadiness},
		"resume":      {"continue an interrupted local run from its last checkpoint", cmdResume},
		"rerun":       {"run a local run's pipeline again from a step, reusing the earlier steps' outputs", cmdRerun},
		"approve":     {"approve a waiting human step of a local run", cmdApprove},
		"reject":      {"reject a waiting human step of a local run", cmdReject},
		"validate":    {"check pipeline files and report every problem with its position", cmdValidate},
		"graph":       {"draw a pipeline's state machine (Mermaid or Graphviz)", cmdGraph},
		"serve":       {"serve webhooks, manual runs, run queries and approval links over HTTP (local)", cmdServe},
		"schema":      {"print the JSON Schema of the pipeline format, or of an agent profile (schema agent)", cmdSchema},
		"agents":      {"list the project's agent profiles: version, model and tools", cmdAgents},
		"steps":       {"list the project's step library: the steps pipelines name with use:, and where", cmdSteps},
		"output":      {"check a raw model reply against the LLMOutput contract", cmdOutput},
		"import":      {"convert a VectorStep project (config.yaml, pipelines, steps) into a Stepline project", cmdImport},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stop = telemetry.SetupCLI(ctx, os.Getenv, os.Stderr, stop) // traces over OTLP when OTEL_* ask for them; stop() then exports the last
	code := dispatch(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, e env) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(e.stdout, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "stepline: unknown command %q\n", args[0])
		usage(e.stderr, cmds)
		return exitUsage
	}
	e.args = args[1:]
	return c.run(ctx, e)
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	width := 0
	for n := range cmds {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: stepline <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %s%s  %s\n", n, strings.Repeat(" ", width-len(n)), cmds[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "run 'stepline <command> -h' for a command's flags")
}
