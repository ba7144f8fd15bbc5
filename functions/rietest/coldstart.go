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
func ColdStart(b *testing.B, bootstrap string, event []byte, env ...string) {
	b.Helper()
	hello := Build(b, helloPackage(b))
	type sample struct{ total, init time.Duration }
	cold := func(bin string, event []byte) sample {
		e := Start(b, bin, env...)
		total := e.Invoke(b, event).Duration
		e.Stop() // all its output read
		return sample{total: total, init: initDuration(e.Output())}
	}
	var fns, hellos []sample
	for i := range b.N {
		if i%2 == 0 {
			fns = append(fns, cold(bootstrap, event))
			hellos = append(hellos, cold(hello, []byte(`{}`)))
		} else {
			hellos = append(hellos, cold(hello, []byte(`{}`)))
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
	ratios := make([]float64, len(fns))
	for i := range fns {
		ratios[i] = float64(fns[i].total) / float64(hellos[i].total)
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(f.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(f.Microseconds()), "fn-µs")
	b.ReportMetric(float64(h.Microseconds()), "hello-µs")
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
	b.ReportMetric(float64(median(fns, init).Microseconds()), "fn-init-µs")
	b.ReportMetric(float64(median(hellos, init).Microseconds()), "hello-init-µs")
	b.ReportMetric(float64(fileSize(b, bootstrap))/(1<<20), "fn-MiB")
	b.ReportMetric(float64(fileSize(b, hello))/(1<<20), "hello-MiB")
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
