package pricing

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/yamldoc/yamldoctest"
)

// TestLoadBounds: a price table is read within yamldoc's bounds.
func TestLoadBounds(t *testing.T) {
	// The entry list is at depth 1, the entry at 2, deep's list at 3: its
	// 99th bracket is at depth 101.
	const entry = "- {provider: x, input_per_mtok: 1, output_per_mtok: 1, deep: "
	tests := []struct {
		name string
		src  []byte
		want string
	}{
		{"billion laughs", yamldoctest.Laughs(9, 9), `prices.yaml:7:8: alias "*f" expands the document past 1000000 nodes`},
		{"nested too deep", []byte(entry + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "}\n"),
			fmt.Sprintf("prices.yaml:1:%d: the document nests deeper than 100 levels", len(entry)+99)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			yamldoctest.Cheap(t, func() { _, err = Load("prices.yaml", bytes.NewReader(tt.src)) })
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant prefix %q", err, tt.want)
			}
		})
	}
}

// TestLoadReadsAtMostTheBound: Load stops reading a source past yamldoc's
// size bound instead of reading it all.
func TestLoadReadsAtMostTheBound(t *testing.T) {
	src := &countingReader{}
	if _, err := Load("prices.yaml", src); err == nil || !strings.Contains(err.Error(), "larger than 8 MiB") {
		t.Errorf("err = %v, want larger than 8 MiB", err)
	}
	if src.n > 8<<20+1 {
		t.Errorf("read %d bytes, want at most %d", src.n, 8<<20+1)
	}
}

// countingReader is a 64 MiB source of spaces that counts what is read.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n >= 64<<20 {
		return 0, io.EOF
	}
	for i := range p {
		p[i] = ' '
	}
	r.n += len(p)
	return len(p), nil
}
