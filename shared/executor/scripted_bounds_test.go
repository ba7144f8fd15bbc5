package executor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/yamldoc/yamldoctest"
)

// TestParseResponsesBounds: a responses file is read within yamldoc's
// bounds, so a file that would expand past them is refused, cheaply and
// positioned, before any reply is decoded.
func TestParseResponsesBounds(t *testing.T) {
	// The laughs as one reply: a flow mapping on line 2.
	inline := "laughs:\n  - {" + strings.ReplaceAll(strings.TrimSpace(string(yamldoctest.Laughs(9, 9))), "\n", ", ") + "}\n"
	// Replies that each stay within the YAML library's own guard, a ratio
	// of aliased to decoded nodes checked per Decode call (2,700 written
	// scalars for 260,261 aliased nodes), and expand past a million nodes
	// together: the first defines the anchors, the third *big crosses.
	pad := "pad: [" + strings.TrimSuffix(strings.Repeat("y,", 2700), ",") + "]"
	perReply := "triage:\n  - {" + pad + ", a: &a [" + strings.TrimSuffix(strings.Repeat("x,", 1000), ",") + "], big: &big [" +
		strings.TrimSuffix(strings.Repeat("*a,", 260), ",") + "]}\n" + strings.Repeat("  - {"+pad+", x: *big}\n", 3)
	// at is where the first occurrence of mark on line is, as "line:col".
	at := func(src string, line int, mark string) string {
		l := strings.Split(src, "\n")[line-1]
		return fmt.Sprintf("%d:%d", line, strings.Index(l, mark)+1)
	}
	self := "triage:\n  - &r {confidence: 0.9, summary: ok, next_step_context: \"\", again: *r}\n"
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"billion laughs", string(yamldoctest.Laughs(9, 9)),
			`responses.yaml:7:8: alias "*f" expands the document past 1000000 nodes`},
		{"billion laughs in a reply", inline,
			"responses.yaml:" + at(inline, 2, "*f") + `: alias "*f" expands the document past 1000000 nodes`},
		{"each reply within the library's guard", perReply,
			"responses.yaml:" + at(perReply, 5, "*big") + `: alias "*big" expands the document past 1000000 nodes`},
		{"alias inside its own anchor", self,
			"responses.yaml:" + at(self, 2, "*r") + `: alias "*r" is inside the value it names`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			yamldoctest.Cheap(t, func() { _, err = ParseResponses("responses.yaml", []byte(tt.src)) })
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant prefix %q", err, tt.want)
			}
		})
	}
}

func TestParseResponsesAnchors(t *testing.T) {
	r, err := ParseResponses("responses.yaml", []byte(`
ok: &ok {confidence: 0.9, summary: fine, next_step_context: ""}
triage: [*ok, {<<: *ok, summary: merged}]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"confidence":0.9,"next_step_context":"","summary":"fine"}`,
		`{"confidence":0.9,"next_step_context":"","summary":"merged"}`,
	} {
		if got, err := r.Next("triage"); err != nil || got != want {
			t.Errorf("Next = %q, %v; want %q", got, err, want)
		}
	}
}
