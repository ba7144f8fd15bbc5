package llmoutput

import (
	"strings"
	"testing"
)

// TestMaxAnswerBytes: an answer as long as MaxAnswerBytes is accepted and
// one byte longer rejected (too_large); an artifact counts its name and
// ArtifactRefBytes, never its content; 0 bounds nothing.
func TestMaxAnswerBytes(t *testing.T) {
	s := ContractSchema()
	reply := `{"confidence": 0.5, "summary": "s", "next_step_context": "` + strings.Repeat("x", 1000) + `", "artifacts": {"r.md": "` + strings.Repeat("z", 100000) + `"}}`
	data, res := s.Check(reply, ParseOptions{})
	if !res.OK {
		t.Fatalf("unbounded: %v", res.Errors)
	}
	n := answerBytes(data)
	if n < 1000+ArtifactRefBytes || n > 1000+ArtifactRefBytes+200 {
		t.Fatalf("answerBytes = %d: the artifact's content must not count", n)
	}
	for _, tc := range []struct {
		limit int
		ok    bool
	}{{n + 1, true}, {n, true}, {n - 1, false}, {0, true}} {
		_, res := s.Check(reply, ParseOptions{MaxAnswerBytes: tc.limit})
		if res.OK != tc.ok {
			t.Errorf("limit %d (answer %d bytes): ok %v, want %v (%v)", tc.limit, n, res.OK, tc.ok, res.Errors)
		}
		if !tc.ok && (len(res.Errors) != 1 || res.Errors[0].Code != CodeTooLarge || !strings.Contains(res.Errors[0].Message, "put long text in artifacts")) {
			t.Errorf("limit %d: errors %v", tc.limit, res.Errors)
		}
	}
}
