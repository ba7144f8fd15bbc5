package store

import (
	"encoding/json"
	"testing"
)

func TestBinIndex(t *testing.T) {
	tests := []struct {
		trust, w float64
		want     int
	}{
		{0, 0.1, 0}, {0.0999999, 0.1, 0}, {0.1, 0.1, 1}, {0.3, 0.1, 3}, {0.7, 0.1, 7}, {0.75, 0.1, 7},
		{0.9999, 0.1, 9}, {1, 0.1, 9}, {0.5, 0.5, 1}, {0.4999, 0.5, 0}, {1, 1, 0}, {0.2, 0.25, 0}, {0.25, 0.25, 1},
	}
	for _, tt := range tests {
		if got := BinIndex(tt.trust, tt.w); got != tt.want {
			t.Errorf("BinIndex(%v, %v) = %d, want %d", tt.trust, tt.w, got, tt.want)
		}
	}
	if lo, hi := BinRange(7, 0.1); lo != 0.7 || hi != 0.8 {
		t.Errorf("BinRange(7, 0.1) = %v, %v", lo, hi)
	}
}

// TestBinOfNMin: a bin is validated at n_min labelled samples, not below;
// unlabelled samples count in Samples only.
func TestBinOfNMin(t *testing.T) {
	samples := func(n int) []Sample {
		var out []Sample
		for i := range n {
			o := OutcomeCorrect
			if i%2 == 1 {
				o = OutcomeIncorrect
			}
			out = append(out, Sample{Trust: 0.85, RunFeedback: o})
		}
		out = append(out, Sample{Trust: 0.81}, Sample{Trust: 0.5, RunFeedback: OutcomeCorrect})
		return out
	}
	for _, tt := range []struct {
		n         int
		validated bool
		mean      float64
	}{{3, false, 2.0 / 3}, {4, true, 0.5}, {5, true, 0.6}} {
		b := BinOf(samples(tt.n), 0.8, 0.1, 4)
		if b.N != tt.n || b.Samples != tt.n+1 || b.Validated != tt.validated || b.Mean == nil || *b.Mean != round9(tt.mean) || b.Lo != 0.8 || b.Hi != 0.9 {
			t.Errorf("n %d: bin %+v (mean %v), want N %d validated %v mean %v", tt.n, b, *b.Mean, tt.n, tt.validated, tt.mean)
		}
	}
	empty := BinOf(nil, 0.8, 0.1, 0)
	if empty.Validated || empty.Mean != nil {
		t.Errorf("a bin with no labelled sample is validated or has a mean: %+v", empty)
	}
	bins := Bins(samples(2), 0.1, 1)
	if len(bins) != 2 || bins[0].Index != 5 || bins[1].Index != 8 || bins[1].Samples != 3 || bins[1].N != 2 {
		t.Errorf("Bins: %+v", bins)
	}
}

func TestSampleLabel(t *testing.T) {
	tests := []struct {
		s      Sample
		label  float64
		source string
		ok     bool
	}{
		{Sample{StepFeedback: OutcomePartial, DeterministicFailed: true, RunFeedback: OutcomeIncorrect}, 0.5, LabelStepFeedback, true},
		{Sample{DeterministicFailed: true, RunFeedback: OutcomeCorrect}, 0, LabelDeterministic, true},
		{Sample{RunFeedback: OutcomeCorrect}, 1, LabelRunFeedback, true},
		{Sample{}, 0, "", false},
	}
	for _, tt := range tests {
		l, src, ok := tt.s.Label()
		if l != tt.label || src != tt.source || ok != tt.ok {
			t.Errorf("%+v: label %v %q %v, want %v %q %v", tt.s, l, src, ok, tt.label, tt.source, tt.ok)
		}
	}
}

func TestPromptHash(t *testing.T) {
	a := PromptHash("Diagnose {{ summary }}\r\n")
	if a != PromptHash("  Diagnose {{ summary }}") || len(a) != 12 {
		t.Errorf("hash %q is not the same for line endings and surrounding space", a)
	}
	if a == PromptHash("Diagnose {{ summary }}!") || PromptHash(" ") != "" {
		t.Error("an edit kept the hash, or an empty template has one")
	}
}

// TestTrustReportVersion1 reads a version 1 report: no calibration
// section, C null.
func TestTrustReportVersion1(t *testing.T) {
	v1 := `{"version":1,"mode":"shadow","signals":{"S":0.8,"S_after_V":0.8,"V":null,"G":null,"C":null,"D":null},"combined_trust":0.8,
		"gate":{"policy":"legacy_confidence","confidence_threshold":0.75,"on_low_confidence":"escalate","decision":"completed"}}`
	var r TrustReport
	if err := json.Unmarshal([]byte(v1), &r); err != nil {
		t.Fatal(err)
	}
	if r.Version != 1 || r.Calibration != nil || r.Signals.C != nil || r.CombinedTrust != 0.8 {
		t.Errorf("version 1 report read as %+v", r)
	}
	if err := checkTrust("triage", &r); err != nil {
		t.Errorf("a version 1 report is refused: %v", err)
	}
}
