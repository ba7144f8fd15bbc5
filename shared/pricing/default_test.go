package pricing

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDefaultEntries: Default's table is the one Load reads from
// default.yaml, entry for entry and in order (Match's ties depend on
// neither, but the file is the table's documentation). On a difference it
// prints the entries to paste into default.go.
func TestDefaultEntries(t *testing.T) {
	f, err := os.Open("default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := Load("default.yaml", f)
	if err != nil {
		t.Fatalf("default.yaml: %v", err)
	}
	got, err := Default()
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	if !slices.Equal(got.Entries(), want.Entries()) {
		var b strings.Builder
		for _, e := range want.Entries() {
			fmt.Fprintf(&b, "\t{Provider: %q, ModelPrefix: %q, InputPerMTok: %v, OutputPerMTok: %v},\n", e.Provider, e.ModelPrefix, e.InputPerMTok, e.OutputPerMTok)
		}
		t.Errorf("defaultEntries differ from default.yaml; its entries:\n%s", b.String())
	}
	if len(want.Entries()) < 30 {
		t.Errorf("default.yaml has %d entries, want the shipped table's 31", len(want.Entries()))
	}
}

// TestDefaultIsACopy: a table Default returns shares nothing with the
// next one, nor with defaultEntries.
func TestDefaultIsACopy(t *testing.T) {
	a, _ := Default()
	a.entries[0].Provider = "changed"
	b, _ := Default()
	if b.entries[0].Provider == "changed" || defaultEntries[0].Provider == "changed" {
		t.Error("Default's tables share their entries")
	}
}
