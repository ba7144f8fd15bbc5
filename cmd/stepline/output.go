package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/stepline/stepline/shared/llmoutput"
)

// outputCheckHelp is the help of stepline output check.
const outputCheckHelp = `Reads a raw model reply from FILE (standard input when FILE is absent or -)
and prints the verdict on it as JSON:
  {"ok": true, "outcome": "accepted", "output": {...}, "flags": [...]}
  {"ok": false, "outcome": "rejected|truncated|refused", "errors": [{"path", "code", "message"}], "feedback": "..."}
Exit status: 0 accepted, 1 rejected, 2 usage error.`

// cmdOutputCheck judges a raw model reply as a step would, and prints the
// verdict as one JSON object. Exit 0 when the reply is accepted, 1 when it
// is rejected, 2 on bad usage.
func cmdOutputCheck(c *cobra.Command) action {
	finish := c.Flags().String("finish-reason", "", "the provider's finish reason: length (max_tokens) makes the reply truncated, content_filter refused")
	_ = c.RegisterFlagCompletionFunc("finish-reason", cobra.FixedCompletions([]string{"stop", "length", "content_filter"}, cobra.ShellCompDirectiveNoFileComp))
	return func(_ context.Context, e env, args []string) int { return outputCheck(e, args, *finish) }
}

func outputCheck(e env, args []string, finish string) int {
	in := e.stdin
	name := "standard input"
	if len(args) == 1 && args[0] != "-" {
		name = args[0]
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

	res := llmoutput.Parse(string(raw), llmoutput.ParseOptions{FinishReason: finish})
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
