package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/stepline/stepline/shared/llmoutput"
)

// cmdOutput runs the LLMOutput tools. Only "check" exists: it judges a raw
// model reply as a step would, and prints the verdict as one JSON object.
// Exit 0 when the reply is accepted, 1 when it is rejected, 2 on bad usage.
func cmdOutput(_ context.Context, e env) int {
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: stepline output check [--finish-reason R] [FILE]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Reads a raw model reply from FILE (standard input when FILE is absent or -)")
		fmt.Fprintln(w, "and prints the verdict on it as JSON:")
		fmt.Fprintln(w, `  {"ok": true, "outcome": "accepted", "output": {...}, "flags": [...]}`)
		fmt.Fprintln(w, `  {"ok": false, "outcome": "rejected|truncated|refused", "errors": [{"path", "code", "message"}], "feedback": "..."}`)
		fmt.Fprintln(w, "Exit status: 0 accepted, 1 rejected, 2 usage error.")
	}
	if len(e.args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch e.args[0] {
	case "check":
	case "-h", "--help", "help":
		usage(e.stdout)
		return exitOK
	default:
		fmt.Fprintf(e.stderr, "stepline output: unknown subcommand %q\n", e.args[0])
		usage(e.stderr)
		return exitUsage
	}

	fs := flag.NewFlagSet("output check", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	finish := fs.String("finish-reason", "", "the provider's finish reason: length (max_tokens) makes the reply truncated, content_filter refused")
	fs.Usage = func() {
		usage(fs.Output())
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}
	if err := fs.Parse(e.args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(e.stderr, "stepline output check: give at most one FILE")
		return exitUsage
	}

	in := e.stdin
	name := "standard input"
	if fs.NArg() == 1 && fs.Arg(0) != "-" {
		name = fs.Arg(0)
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline output check: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		in = f
	}
	if in == nil {
		fmt.Fprintln(e.stderr, "stepline output check: no input")
		return exitUsage
	}
	// Read one byte past the limit: Parse then rejects the reply as too
	// large without the whole input in memory.
	raw, err := io.ReadAll(io.LimitReader(in, llmoutput.DefaultMaxBytes+1))
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline output check: read %s: %v\n", name, err)
		return exitUsage
	}

	res := llmoutput.Parse(string(raw), llmoutput.ParseOptions{FinishReason: *finish})
	var report any
	if res.OK {
		report = struct {
			OK      bool              `json:"ok"`
			Outcome string            `json:"outcome"`
			Output  *llmoutput.Output `json:"output"`
			Flags   []string          `json:"flags"`
		}{true, string(res.Outcome), res.Output, res.Flags}
	} else {
		report = struct {
			OK       bool                   `json:"ok"`
			Outcome  string                 `json:"outcome"`
			Errors   []llmoutput.FieldError `json:"errors"`
			Feedback string                 `json:"feedback"`
		}{false, string(res.Outcome), res.Errors, res.Feedback()}
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(report); err != nil {
		fmt.Fprintf(e.stderr, "stepline output check: write the verdict: %v\n", err)
		return exitFailed
	}
	if !res.OK {
		return exitFailed
	}
	return exitOK
}
