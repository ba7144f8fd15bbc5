package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
)

// cmdFeedback records feedback on a local run, or on one of its steps:
// the labels calibration learns from.
func cmdFeedback(c *cobra.Command) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	outcome := fs.String("outcome", "", "the verdict: correct, partial or incorrect (without it: print the feedback given)")
	notes := fs.String("notes", "", "why (at most 4096 bytes)")
	asJSON := fs.Bool("json", false, "print the feedback as JSON")
	_ = c.RegisterFlagCompletionFunc("outcome", cobra.FixedCompletions([]string{string(store.OutcomeCorrect), string(store.OutcomePartial), string(store.OutcomeIncorrect)}, cobra.ShellCompDirectiveNoFileComp))
	return func(ctx context.Context, e env, args []string) int {
		return feedback(ctx, e, sf, args, *outcome, *notes, *asJSON)
	}
}

func feedback(ctx context.Context, e env, sf stateFlags, pos []string, outcome, notes string, asJSON bool) int {
	if outcome == "" && notes != "" {
		return e.usageError("--notes goes with --outcome")
	}
	if outcome != "" && !store.Outcome(outcome).Valid() {
		return e.usageError("--outcome %q: want correct, partial or incorrect", outcome)
	}
	r, err := openRunner(ctx, e, sf, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer r.Close()
	runID, step := pos[0], ""
	if len(pos) == 2 {
		step = pos[1]
	}
	what := "run " + runID
	if step != "" {
		what = fmt.Sprintf("step %q of run %s", step, runID)
	}
	if outcome != "" {
		f := store.Feedback{Outcome: store.Outcome(outcome), Notes: notes, SubmittedAt: time.Now()}
		if step == "" {
			err = r.Store.PutRunFeedback(ctx, runID, f)
		} else {
			err = r.Store.PutStepFeedback(ctx, runID, step, f)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: feedback on %s: %v\n", what, feedbackError(err))
			return exitFailed
		}
	}
	var got *store.Feedback
	if step == "" {
		got, err = r.Store.GetRunFeedback(ctx, runID)
	} else {
		got, err = r.Store.GetStepFeedback(ctx, runID, step)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: feedback on %s: %v\n", what, feedbackError(err))
		return exitFailed
	}
	if asJSON {
		b, _ := json.Marshal(map[string]any{"feedback": got})
		fmt.Fprintf(e.stdout, "%s\n", b)
		return exitOK
	}
	if got == nil {
		fmt.Fprintf(e.stdout, "%s: no feedback\n", what)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "%s: %s\n", what, feedbackText(got))
	return exitOK
}

// feedbackError says what an unknown run or step means here.
func feedbackError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no such run or step (%w)", err)
	}
	return err
}

// feedbackText is one line of feedback: the outcome, when, the notes.
func feedbackText(f *store.Feedback) string {
	s := fmt.Sprintf("%s (%s)", f.Outcome, f.SubmittedAt.Local().Format("2006-01-02 15:04:05"))
	if f.Notes != "" {
		s += ": " + oneLine(printable(f.Notes), 100)
	}
	return s
}

// printable drops control characters (a terminal's escape sequences
// among them) from text people gave, keeping line breaks and tabs as
// spaces.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}

// bucketBins is one bucket of a step with its bins, as calibration
// prints them.
type bucketBins struct {
	Bucket    store.Bucket `json:"bucket"`
	BucketKey string       `json:"bucket_key"`
	Samples   int          `json:"samples"`
	BinWidth  float64      `json:"bin_width"`
	NMin      int          `json:"n_min"`
	Bins      []store.Bin  `json:"bins"`
}

// binning is how a step's executions are binned: its calibration
// block's bin_width and n_min.
type binning struct {
	width float64
	nMin  int
}

// cmdCalibration prints the calibration bins of a pipeline's steps: per
// bucket (a step's configuration), each bin's range, labelled executions,
// mean label and whether it is validated. PIPELINE is a pipeline's name,
// or its file: then each step with a calibration block is binned with its
// bin_width and n_min (the flags, when given, override them).
func cmdCalibration(c *cobra.Command) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	binWidth := fs.Float64("bin-width", store.DefaultBinWidth, "width of the bins (must divide 1; default: the step's calibration.bin_width when PIPELINE is a file, else 0.1)")
	nMin := fs.Int("n-min", store.DefaultNMin, "labelled executions that validate a bin (default: the step's calibration.n_min when PIPELINE is a file, else 20)")
	asJSON := fs.Bool("json", false, "print the buckets and bins as JSON")
	return func(ctx context.Context, e env, args []string) int {
		set := map[string]bool{"bin-width": fs.Changed("bin-width"), "n-min": fs.Changed("n-min")}
		return calibration(ctx, e, sf, args, binning{*binWidth, *nMin}, set, *asJSON)
	}
}

// calibration prints the bins of pos (PIPELINE|FILE [STEP]): flags are
// --bin-width and --n-min, set says which of them were given.
func calibration(ctx context.Context, e env, sf stateFlags, pos []string, flags binning, set map[string]bool, asJSON bool) int {
	steps := map[string]binning{}
	if ext := filepath.Ext(pos[0]); ext == ".yaml" || ext == ".yml" {
		f, _, ds, err := gate.CompileFile(pos[0], settings.Defaults{})
		if err == nil && (f == nil || f.Pipeline == nil) {
			err = ds.Err()
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		pos[0] = f.Pipeline.Name
		for _, n := range f.Pipeline.Steps {
			if st, ok := n.(*pipeline.Step); ok && st.Calibration != nil {
				steps[st.Name] = binning{st.Calibration.BinWidth, st.Calibration.NMin}
			}
		}
	}
	if w := flags.width; !(w > 0 && w <= 1) || store.BinCount(w) == 0 || !divides(w) {
		fmt.Fprintf(e.stderr, "stepline: --bin-width %v: want a width above 0, up to 1, that divides 1\n", w)
		return exitUsage
	}
	if flags.nMin < 1 {
		fmt.Fprintf(e.stderr, "stepline: --n-min %d: want at least 1\n", flags.nMin)
		return exitUsage
	}
	r, err := openRunner(ctx, e, sf, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer r.Close()
	pipeline, step := pos[0], ""
	if len(pos) == 2 {
		step = pos[1]
	}
	buckets, err := r.Store.ListBuckets(ctx, pipeline, step)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	out := make([]bucketBins, 0, len(buckets))
	for _, b := range buckets {
		samples, err := r.Store.BucketSamples(ctx, b)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		bn := flags
		if own, ok := steps[b.Step]; ok {
			if !set["bin-width"] {
				bn.width = own.width
			}
			if !set["n-min"] {
				bn.nMin = own.nMin
			}
		}
		out = append(out, bucketBins{Bucket: b, BucketKey: b.Key(), Samples: len(samples), BinWidth: bn.width, NMin: bn.nMin,
			Bins: store.Bins(samples, bn.width, bn.nMin)})
	}
	if asJSON {
		b, _ := json.MarshalIndent(map[string]any{"pipeline": pipeline, "buckets": out}, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
		return exitOK
	}
	printCalibration(e.stdout, pipeline, step, out)
	return exitOK
}

func divides(w float64) bool {
	n := 1 / w
	d := n - float64(store.BinCount(w))
	return d < 1e-9*n && d > -1e-9*n
}

func printCalibration(w io.Writer, pipeline, step string, buckets []bucketBins) {
	if len(buckets) == 0 {
		what := "pipeline " + pipeline
		if step != "" {
			what = fmt.Sprintf("step %q of pipeline %s", step, pipeline)
		}
		fmt.Fprintf(w, "%s: no recorded executions\n", what)
		return
	}
	for i, bb := range buckets {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "bucket %s  %s  (%d executions; bins of %s, n_min %d)\n", bb.BucketKey[:12], bb.Bucket, bb.Samples,
			strconv.FormatFloat(bb.BinWidth, 'f', -1, 64), bb.NMin)
		fmt.Fprintf(w, "  %-11s %9s %9s %6s  %s\n", "bin", "labelled", "executions", "mean", "validated")
		for _, b := range bb.Bins {
			mean := "-"
			if b.Mean != nil {
				mean = fmt.Sprintf("%.2f", *b.Mean)
			}
			valid := fmt.Sprintf("no (%d/%d)", b.N, bb.NMin)
			if b.Validated {
				valid = "yes"
			}
			fmt.Fprintf(w, "  %-11s %9d %10d %6s  %s\n", fmt.Sprintf("%.2f-%.2f", b.Lo, b.Hi), b.N, b.Samples, mean, valid)
		}
	}
}
