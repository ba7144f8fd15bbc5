// Command stepline compiles, checks and runs Stepline pipelines.
//
// The main function only wires: each subcommand lives in its own file as a
// setup that registers its flags and returns the function that runs it
// over an env (arguments and standard streams), so tests call dispatch
// directly and the logic stays in the importable packages under shared/
// and compiler/. The command line is parsed by cobra and pflag (see
// dispatch for the conventions it follows).
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	_ "time/tzdata" // schedule time zones, also where the system has no zone database

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stepline/stepline/internal/heap"
	"github.com/stepline/stepline/shared/telemetry"
)

// env is what a subcommand may touch of the process.
type env struct {
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
	// outTerminal reports whether stdout is a terminal (colour, live
	// progress); nil: whether it is one.
	outTerminal func(io.Writer) bool
	// usage writes the running command's usage; set by dispatch.
	usage func(io.Writer)
	// startHeap is called once a command that drives a run has parsed its
	// flags (main: heap.Starting); nil: the collector is left as it is.
	startHeap func()
	// oneProcessor is called before a command drives a run whose machine
	// executes one state at a time (main: heap.OneProcessor); nil: the
	// scheduler is left as it is.
	oneProcessor func()
	// serveHeap is called once stepline serve has parsed its flags
	// (main: heap.Server); nil: the collector is left as it is.
	serveHeap func()
}

// interactive reports whether approvals can be asked for on stdin.
func (e env) interactive() bool {
	if e.terminal != nil {
		return e.terminal(e.stdin)
	}
	return isTerminal(e.stdin)
}

// onTerminal reports whether stdout is a terminal.
func (e env) onTerminal() bool {
	if e.outTerminal != nil {
		return e.outTerminal(e.stdout)
	}
	f, ok := e.stdout.(*os.File)
	return ok && isTerminal(f)
}

// usageError writes msg and the command's usage to stderr and returns
// exitUsage.
func (e env) usageError(format string, args ...any) int {
	fmt.Fprintf(e.stderr, "stepline: "+format+"\n", args...)
	if e.usage != nil {
		e.usage(e.stderr)
	}
	return exitUsage
}

// action runs a command over its positional arguments and returns the
// process exit code.
type action func(ctx context.Context, e env, args []string) int

// command is one subcommand: its usage line (its name first), summary and
// positional arguments; setup registers its flags on c and returns what
// runs it. A command with subcommands has no setup of its own.
type command struct {
	use     string
	summary string
	long    string // more help, after the summary (optional)
	args    cobra.PositionalArgs
	setup   func(c *cobra.Command) action
	subs    []command
}

// Exit codes shared by the subcommands.
const (
	exitOK     = 0
	exitFailed = 1 // the input was checked and found wanting
	exitUsage  = 2 // bad flags or arguments
	// exitRunNotOK is the code of run and rerun --exit-code when the run
	// ended failed, escalated or aborted.
	exitRunNotOK = 3
)

func commands() []command {
	return []command{
		{use: "compile [flags] FILE", summary: "compile a pipeline to a Step Functions state machine (ASL)", args: cobra.ExactArgs(1), setup: cmdCompile},
		{use: "run [flags] FILE", summary: "compile and run a pipeline locally (SQLite, offline with --responses)", args: cobra.ExactArgs(1), setup: cmdRun,
			long: "Progress goes to stdout as it happens: a line when a step starts, a live elapsed time while it runs (on a terminal), then its outcome.\n" +
				"Exit status: 0 when the run was driven, whatever its outcome; with --exit-code, 3 when it ended failed, escalated or aborted;\n" +
				"1 when it could not run; 2 on bad usage."},
		{use: "runs [flags]", summary: "list local runs", args: cobra.NoArgs, setup: cmdRuns},
		{use: "show [flags] RUN", summary: "show a local run: steps, their trust reports and feedback, and execution history", args: cobra.ExactArgs(1), setup: cmdShow},
		{use: "feedback [flags] RUN [STEP]", summary: "mark a local run or one of its steps correct, partial or incorrect (calibration labels)", args: cobra.RangeArgs(1, 2), setup: cmdFeedback},
		{use: "calibration [flags] PIPELINE|FILE [STEP]", summary: "print a pipeline's calibration bins per step configuration (bucket)", args: cobra.RangeArgs(1, 2), setup: cmdCalibration},
		{use: "readiness [flags] PIPELINE", summary: "judge a pipeline's readiness: criteria against its local runs (advisory)", args: cobra.ExactArgs(1), setup: cmdReadiness,
			long: "PIPELINE: a pipeline file, or the name of one in the project's pipelines directory."},
		{use: "resume [flags] RUN", summary: "continue an interrupted local run from its last checkpoint", args: cobra.ExactArgs(1), setup: cmdResume},
		{use: "rerun [flags] RUN", summary: "run a local run's pipeline again from a step, reusing the earlier steps' outputs", args: cobra.ExactArgs(1), setup: cmdRerun},
		{use: "approve [flags] RUN STEP", summary: "approve a waiting human step of a local run", args: cobra.ExactArgs(2), setup: cmdApprove},
		{use: "reject [flags] RUN STEP", summary: "reject a waiting human step of a local run", args: cobra.ExactArgs(2), setup: cmdReject},
		{use: "validate [flags] FILE...", summary: "check pipeline files and report every problem with its position", setup: cmdValidate,
			long: "With --config and no FILE: every pipeline and library step of the project."},
		{use: "graph [flags] FILE", summary: "draw a pipeline's state machine (Mermaid or Graphviz)", args: cobra.ExactArgs(1), setup: cmdGraph},
		{use: "serve [flags]", summary: "serve webhooks, manual runs, run queries and approval links over HTTP (local); --aws: the web UI over a deployed stack", args: cobra.NoArgs, setup: cmdServe},
		{use: "schema [pipeline|agent]", summary: "print the JSON Schema of the pipeline format, or of an agent profile (schema agent)", args: schemaArgs, setup: cmdSchema},
		{use: "agents [flags]", summary: "list the project's agent profiles: version, model and tools", args: cobra.NoArgs, setup: cmdAgents},
		{use: "steps [flags]", summary: "list the project's step library: the steps pipelines name with use:, and where", args: cobra.NoArgs, setup: cmdSteps},
		{use: "output", summary: "check a raw model reply against the LLMOutput contract", subs: []command{
			{use: "check [flags] [FILE]", summary: "judge a raw model reply as a step would and print the verdict as JSON", args: cobra.MaximumNArgs(1), setup: cmdOutputCheck,
				long: outputCheckHelp},
		}},
		{use: "import", summary: "convert a VectorStep project (config.yaml, pipelines, steps) into a Stepline project", subs: []command{
			{use: "vectorstep [flags] SRC DEST", summary: "convert a VectorStep directory holding config.yaml into the Stepline project DEST", args: cobra.ExactArgs(2), setup: cmdImportVectorStep},
		}},
		{use: "version", summary: "print the version of stepline: module version, commit and build time", args: cobra.NoArgs, setup: cmdVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stop = telemetry.SetupCLI(ctx, os.Getenv, os.Stderr, stop) // traces over OTLP when OTEL_* ask for them; stop() then exports the last
	code := dispatch(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		startHeap:    func() { heap.Starting(heap.RunGoal, os.Getenv) },
		oneProcessor: func() { heap.OneProcessor(os.Getenv) },
		serveHeap:    func() { heap.Server(heap.ServeGCPercent, heap.ServeMemoryLimit, os.Getenv) }})
	stop()
	os.Exit(code)
}

// dispatch parses args, runs the command they name and returns the exit
// code. Flags go before, between or after the positional arguments ("--"
// ends them); every command and subcommand takes -h/--help; long flags are
// --name, and the single-dash spellings stepline always took (-responses,
// -by) are read as --name (singleDash).
func dispatch(ctx context.Context, args []string, e env) int {
	code := exitOK
	root := newRoot(e, &code)
	if target, _, err := root.Find(args); err == nil {
		args = singleDash(target, args)
	}
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		if c != nil {
			fmt.Fprint(e.stderr, c.UsageString())
		}
		return exitUsage
	}
	return code
}

// newRoot builds the command tree over e; the command that runs sets
// *code.
func newRoot(e env, code *int) *cobra.Command {
	root := &cobra.Command{
		Use:     "stepline",
		Short:   "stepline compiles, checks and runs Stepline pipelines",
		Version: versionText(readBuildInfo()),
		Args:    cobra.NoArgs,
		// Without a command: the usage, exit 2.
		Run: func(c *cobra.Command, _ []string) {
			fmt.Fprint(e.stdout, c.UsageString())
			*code = exitUsage
		},
		SilenceErrors:         true,
		SilenceUsage:          true,
		DisableFlagsInUseLine: true,
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetUsageTemplate(usageTemplate)
	root.SetHelpTemplate(helpTemplate)
	root.SetVersionTemplate("stepline {{.Version}}\n")
	root.SetGlobalNormalizationFunc(oneLetterNames)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	for _, cmd := range commands() {
		root.AddCommand(newCommand(e, cmd, code))
	}
	root.Flags().BoolP("version", "v", false, "print the version")
	// cobra's own commands (help, completion and its shells) as ours
	// read: lowercase summaries, and -h/--help said the same everywhere.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var own func(c *cobra.Command)
	own = func(c *cobra.Command) {
		if c.Short != "" {
			c.Short = strings.ToLower(c.Short[:1]) + c.Short[1:]
		}
		if c.Flags().Lookup("help") == nil {
			c.Flags().BoolP("help", "h", false, "print this help")
		}
		for _, sub := range c.Commands() {
			own(sub)
		}
	}
	own(root)
	return root
}

func newCommand(e env, cmd command, code *int) *cobra.Command {
	c := &cobra.Command{
		Use:                   cmd.use,
		Short:                 cmd.summary,
		Long:                  cmd.long,
		Args:                  cmd.args,
		SilenceErrors:         true,
		SilenceUsage:          true,
		DisableFlagsInUseLine: true,
	}
	if cmd.long != "" {
		c.Long = cmd.summary + "\n\n" + cmd.long
	}
	if cmd.args == nil {
		c.Args = cobra.ArbitraryArgs
	}
	if len(cmd.subs) > 0 {
		// A command of subcommands alone: "stepline output" or "stepline
		// output fix" is a usage error, as an unknown command is.
		c.Args = cobra.ArbitraryArgs
		c.Run = func(c *cobra.Command, args []string) {
			if len(args) > 0 {
				fmt.Fprintf(e.stderr, "stepline: unknown command %q for %q\n", args[0], c.CommandPath())
			} else {
				fmt.Fprintf(e.stderr, "stepline: %s: give a command\n", c.Name())
			}
			fmt.Fprint(e.stderr, c.UsageString())
			*code = exitUsage
		}
		for _, sub := range cmd.subs {
			c.AddCommand(newCommand(e, sub, code))
		}
		return c
	}
	run := cmd.setup(c)
	c.Run = func(c *cobra.Command, args []string) {
		ce := e
		ce.usage = func(w io.Writer) { fmt.Fprint(w, c.UsageString()) }
		*code = run(c.Context(), ce, args)
	}
	return c
}

// oneLetterNames maps the one-letter long flags stepline took before it
// gave them shorthands (--q, --v, --o, --n) to their names now.
func oneLetterNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	switch name {
	case "q":
		return "quiet"
	case "v":
		return "verbose"
	case "o":
		return "output"
	case "n":
		return "limit"
	}
	return pflag.NormalizedName(name)
}

// singleDash rewrites the single-dash long flags of c in args ("-by me",
// "-responses=r.yaml") as pflag reads long flags ("--by me"): stepline
// took them before it used pflag, and scripts and documents spell them
// so. Only the names of c's flags longer than one letter are rewritten,
// never a flag's value ("--notes -json" keeps "-json") nor what follows
// "--"; one-letter shorthands and their clusters ("-qv") are left to
// pflag. It adds c's --help (and the root's --version) flags first, as
// executing c would, so that -help and -version are read too.
func singleDash(c *cobra.Command, args []string) []string {
	c.InitDefaultHelpFlag()
	c.InitDefaultVersionFlag()
	lookup := func(name string) *pflag.Flag {
		if f := c.Flags().Lookup(name); f != nil {
			return f
		}
		return c.InheritedFlags().Lookup(name)
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		var f *pflag.Flag
		hasValue := strings.Contains(a, "=")
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a[2:], "=")
			f = lookup(name)
		case len(a) == 2:
			f = c.Flags().ShorthandLookup(a[1:])
			if f == nil {
				f = c.InheritedFlags().ShorthandLookup(a[1:])
			}
		default:
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 {
				if f = lookup(name); f != nil {
					out[len(out)-1] = "-" + a
				}
			}
		}
		// A flag that takes a value, given without "=", takes the next
		// argument whatever it looks like.
		if f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

const usageTemplate = `usage: {{if .HasAvailableSubCommands}}{{.CommandPath}} <command>{{else}}{{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}

commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

global flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

run '{{.CommandPath}} <command> -h' for a command's flags{{end}}
`

const helpTemplate = `{{with (or .Long .Short)}}{{. | trimTrailingWhitespaces}}

{{end}}{{.UsageString}}`
