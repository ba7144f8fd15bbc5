package rietest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stepline/stepline/internal/testenv"
)

// MaxColdStartRatio is the cold start a function may have, as a multiple
// of the hello-world bootstrap's (issue #22).
const MaxColdStartRatio = 1.3

// ColdStart benchmarks the cold start of bootstrap, the function's first
// invocation with event through a fresh emulator, against the hello-world
// bootstrap in testdata/hello built the same way. Every iteration starts
// one emulator for each bootstrap, alternating which goes first, so that
// both see the same machine; env is given to both.
//
// The event should be one the function answers at once without calling
// anything (an invalid or ignored event), so that the figure is the
// start-up and not the work: the function's package initialisers, its
// main up to lambda.Start and the first request's decoding.
//
// It reports the medians in µs of the whole invocation (fn-µs, hello-µs)
// and of the init phase the emulator reports (fn-init-µs, hello-init-µs:
// from the process's start to its first request for work), the median of
// the ratios of the whole invocations taken pair by pair (ratio; the
// target is at most MaxColdStartRatio), and the bootstraps' sizes; ns/op
// is the function's median.
//
// With $STEPLINE_COLDSTART_BASELINE (BaselineEnv) naming another build of
// the same function (built as Build builds it, from another commit), every
// iteration starts that bootstrap too, next to the two others, with the
// same event, and the benchmark also reports its median (base-µs) and the
// median of the function's pair-by-pair ratios to it (vs-base): a change's
// effect measured in one run, each start against the baseline's next to
// it.
func ColdStart(b *testing.B, bootstrap string, event []byte, env ...string) {
	b.Helper()
	hello := Build(b, helloPackage(b))
	base := os.Getenv(BaselineEnv)
	cold := func(bin string, event []byte) sample {
		e := Start(b, bin, env...)
		total := e.Invoke(b, event).Duration
		e.Stop() // all its output read
		return sample{total: total, init: initDuration(e.Output())}
	}
	var fns, hellos, bases []sample
	for i := range b.N {
		// Which bootstrap goes first alternates; the baseline, if any,
		// starts next to the function.
		if i%2 == 0 {
			fns = append(fns, cold(bootstrap, event))
			if base != "" {
				bases = append(bases, cold(base, event))
			}
			hellos = append(hellos, cold(hello, []byte(`{}`)))
		} else {
			hellos = append(hellos, cold(hello, []byte(`{}`)))
			if base != "" {
				bases = append(bases, cold(base, event))
			}
			fns = append(fns, cold(bootstrap, event))
		}
	}
	total := func(s sample) time.Duration { return s.total }
	init := func(s sample) time.Duration { return s.init }
	f, h := median(fns, total), median(hellos, total)
	// The ratio is taken pair by pair, each function start against the
	// hello-world start next to it, and the median of those reported: on
	// a shared machine whose speed drifts during the benchmark, the ratio
	// of the two medians can pair a slow minute with a fast one.
	b.ReportMetric(float64(f.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(f.Microseconds()), "fn-µs")
	b.ReportMetric(float64(h.Microseconds()), "hello-µs")
	b.ReportMetric(pairRatio(fns, hellos), "ratio")
	if base != "" {
		b.ReportMetric(float64(median(bases, total).Microseconds()), "base-µs")
		b.ReportMetric(pairRatio(fns, bases), "vs-base")
	}
	b.ReportMetric(float64(median(fns, init).Microseconds()), "fn-init-µs")
	b.ReportMetric(float64(median(hellos, init).Microseconds()), "hello-init-µs")
	b.ReportMetric(float64(fileSize(b, bootstrap))/(1<<20), "fn-MiB")
	b.ReportMetric(float64(fileSize(b, hello))/(1<<20), "hello-MiB")
}

// BaselineEnv names the variable that gives ColdStart a baseline build
// of the function to compare it with.
const BaselineEnv = "STEPLINE_COLDSTART_BASELINE"

// sample is one cold start: its whole first invocation and its init
// phase.
type sample struct{ total, init time.Duration }

// pairRatio is the median of the ratios of the whole invocations of a and
// b taken pair by pair (a[i] against b[i]).
func pairRatio(a, b []sample) float64 {
	ratios := make([]float64, len(a))
	for i := range a {
		ratios[i] = float64(a[i].total) / float64(b[i].total)
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2]
}

// helloPackage is the directory of the hello-world bootstrap, found from
// the repository's root so that every function's package can build it.
func helloPackage(t testing.TB) string {
	t.Helper()
	root := testenv.RepoRoot()
	if root == "" {
		t.Fatal("the repository's root (go.mod) is not above the working directory")
	}
	return filepath.Join(root, "functions", "rietest", "testdata", "hello")
}

// initReport is the emulator's line at the end of a function's init phase.
var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// initDuration reads the init phase's duration from the emulator's
// output; 0 when it is not there.
func initDuration(out string) time.Duration {
	m := initReport.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	ms, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

func median[S any](s []S, by func(S) time.Duration) time.Duration {
	ds := make([]time.Duration, len(s))
	for i, x := range s {
		ds[i] = by(x)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
