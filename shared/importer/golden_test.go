package importer

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGolden pins every file the import of testdata/vectorstep writes,
// and its notes: go test -run TestGolden -update rewrites them.
func TestGolden(t *testing.T) {
	dest := t.TempDir()
	res, err := Import("testdata/vectorstep", dest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dest)
	var notes strings.Builder
	for _, n := range res.Notes {
		notes.WriteString(n.String() + "\n")
	}
	got["notes.txt"] = notes.String()
	golden := filepath.Join("testdata", "golden")
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		for p, b := range got {
			writeTree(t, golden, map[string]string{p: b})
		}
		return
	}
	want := readTree(t, golden)
	for p, b := range got {
		if want[p] != b {
			t.Errorf("%s differs from %s (go test -run TestGolden -update rewrites it):\n%s", p, filepath.Join(golden, p), b)
		}
	}
	for p := range want {
		if _, ok := got[p]; !ok {
			t.Errorf("%s is no longer written", p)
		}
	}
}
