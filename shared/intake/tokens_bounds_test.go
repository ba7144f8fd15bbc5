package intake

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/yamldoc/yamldoctest"
)

// TestParseTokensBounds: a tokens file is read within yamldoc's bounds, so
// one that would expand past them is refused, cheaply and positioned.
func TestParseTokensBounds(t *testing.T) {
	const self = "teams: &t [{name: a, token: x, more: *t}]\n"
	tests := []struct {
		name string
		src  []byte
		want string
	}{
		{"billion laughs", yamldoctest.Laughs(9, 9), `parse tokens: 7:8: alias "*f" expands the document past 1000000 nodes`},
		{"alias inside its own anchor", []byte(self), fmt.Sprintf(`parse tokens: 1:%d: alias "*t" is inside the value it names`, strings.Index(self, "*t")+1)},
		// The mapping is at depth 1, a's list at 2: its 100th bracket is
		// at depth 101.
		{"nested too deep", []byte("a: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n"),
			fmt.Sprintf("parse tokens: 1:%d: the document nests deeper than 100 levels", len("a: ")+100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			yamldoctest.Cheap(t, func() { _, err = ParseTokens(tt.src) })
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant prefix %q", err, tt.want)
			}
		})
	}
}

func TestParseTokensAnchors(t *testing.T) {
	got, err := ParseTokens([]byte("teams:\n  - &t {name: a, token: tok-a}\n  - {<<: *t, name: b, token: tok-b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (inbound.Tokens{"a": "tok-a", "b": "tok-b"}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
