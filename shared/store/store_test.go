package store_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/store"
)

func TestRunStatusClasses(t *testing.T) {
	tests := []struct {
		s                       store.RunStatus
		valid, terminal, active bool
	}{
		{store.RunRunning, true, false, true},
		{store.RunWaiting, true, false, true},
		{store.RunInterrupted, true, false, false},
		{store.RunCompleted, true, true, false},
		{store.RunStopped, true, true, false},
		{store.RunEscalated, true, true, false},
		{store.RunAborted, true, true, false},
		{store.RunFailed, true, true, false},
		{"deduplicated", false, false, false},
		{"", false, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			if got := tt.s.Valid(); got != tt.valid {
				t.Errorf("Valid() = %v", got)
			}
			if got := tt.s.Terminal(); got != tt.terminal {
				t.Errorf("Terminal() = %v", got)
			}
			if got := tt.s.Active(); got != tt.active {
				t.Errorf("Active() = %v", got)
			}
		})
	}
	if n := len(store.RunStatuses()); n != 8 {
		t.Errorf("RunStatuses has %d entries, want 8", n)
	}
	for _, s := range store.RunStatuses() {
		if !s.Valid() {
			t.Errorf("RunStatuses lists invalid %q", s)
		}
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
		cut  bool
	}{
		{"short", "abc", 5, "abc", false},
		{"exact", "abcde", 5, "abcde", false},
		{"ascii", "abcdef", 5, "abcde", true},
		{"inside a two-byte rune", "abcdé", 5, "abcd", true},
		{"inside a four-byte rune", "ab😀", 5, "ab", true},
		{"after a rune", "abé", 4, "abé", false},
		{"invalid UTF-8 replaced", "a\xffb", 10, "a\uFFFDb", false},
		{"zero", "abc", 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := store.Cut(tt.in, tt.max)
			if got != tt.want || cut != tt.cut {
				t.Errorf("Cut(%q, %d) = %q, %v; want %q, %v", tt.in, tt.max, got, cut, tt.want, tt.cut)
			}
			if !utf8.ValidString(got) {
				t.Errorf("result %q is not valid UTF-8", got)
			}
		})
	}
}

func TestNormalizeStep(t *testing.T) {
	zone := time.FixedZone("X", -5*3600)
	rec := store.StepRecord{
		RunID: "r", Name: "s", Attempt: 1, Status: store.StepCompleted,
		RawResponse: strings.Repeat("r", store.MaxRawResponseBytes+1),
		Prompt:      strings.Repeat("p", store.MaxPromptBytes+1),
		Flags:       []string{},
		StartedAt:   time.Date(2026, 1, 1, 0, 0, 0, 0, zone),
	}
	got, err := store.NormalizeStep(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.RawResponse) != store.MaxRawResponseBytes || len(got.Prompt) != store.MaxPromptBytes {
		t.Errorf("lengths %d, %d", len(got.RawResponse), len(got.Prompt))
	}
	if strings.Join(got.Flags, ",") != store.FlagRawResponseCut+","+store.FlagPromptCut {
		t.Errorf("flags %v", got.Flags)
	}
	if got.StartedAt.Location() != time.UTC || !got.StartedAt.Equal(rec.StartedAt) {
		t.Errorf("StartedAt %v", got.StartedAt)
	}
	if len(rec.Flags) != 0 {
		t.Errorf("the caller's Flags were changed: %v", rec.Flags)
	}
	again, err := store.NormalizeStep(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(again.Flags, ",") != strings.Join(got.Flags, ",") || again.RawResponse != got.RawResponse {
		t.Error("NormalizeStep is not idempotent")
	}
	empty, err := store.NormalizeStep(store.StepRecord{RunID: "r", Name: "s", Attempt: 1, Status: store.StepSkipped, Flags: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if empty.Flags != nil {
		t.Errorf("empty flags normalized to %#v, want nil", empty.Flags)
	}
}

func TestNormalizeStepErrors(t *testing.T) {
	nan := math.NaN()
	inf := math.Inf(1)
	tests := []struct {
		name   string
		modify func(*store.StepRecord)
		want   error
	}{
		{"NaN confidence", func(r *store.StepRecord) { r.PrimaryConfidence = &nan }, store.ErrInvalid},
		{"infinite verifier confidence", func(r *store.StepRecord) { r.VerifierConfidence = &inf }, store.ErrInvalid},
		{"infinite cost", func(r *store.StepRecord) { r.CostUSD = &inf }, store.ErrInvalid},
		{"negative duration", func(r *store.StepRecord) { r.DurationMS = -1 }, store.ErrInvalid},
		{"NUL in name", func(r *store.StepRecord) { r.Name = "a\x00b" }, store.ErrInvalid},
		{"invalid UTF-8 in run ID", func(r *store.StepRecord) { r.RunID = "r\xff" }, store.ErrInvalid},
		{"model too long", func(r *store.StepRecord) { r.Model = strings.Repeat("m", store.MaxIDBytes+1) }, store.ErrInvalid},
		{"verifier output too large", func(r *store.StepRecord) {
			r.VerifierOutput = json.RawMessage(`"` + strings.Repeat("v", store.MaxOutputBytes) + `"`)
		}, store.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := store.StepRecord{RunID: "r", Name: "s", Attempt: 1, Status: store.StepCompleted}
			tt.modify(&r)
			if _, err := store.NormalizeStep(r); !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestClaimHolds(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		exists  bool
		status  store.RunStatus
		window  time.Duration
		elapsed time.Duration
		want    bool
	}{
		{"running holds forever", true, store.RunRunning, time.Minute, 1000 * time.Hour, true},
		{"waiting holds forever", true, store.RunWaiting, 0, 1000 * time.Hour, true},
		{"ended holds in window", true, store.RunCompleted, time.Minute, time.Minute - 1, true},
		{"ended lapses at window end", true, store.RunCompleted, time.Minute, time.Minute, false},
		{"interrupted is not active", true, store.RunInterrupted, time.Minute, 2 * time.Minute, false},
		{"pending run holds for grace", false, "", 0, store.DedupPendingGrace - 1, true},
		{"pending run lapses after grace", false, "", 0, store.DedupPendingGrace, false},
		{"pending run holds for a longer window", false, "", 2 * store.DedupPendingGrace, store.DedupPendingGrace, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.ClaimHolds(at, tt.exists, tt.status, tt.window, at.Add(tt.elapsed)); got != tt.want {
				t.Errorf("ClaimHolds = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewApprovalID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, err := store.NewApprovalID()
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != 43 || strings.ContainsAny(id, "+/=") {
			t.Fatalf("ID %q: want 43 URL-safe characters", id)
		}
		if seen[id] {
			t.Fatalf("ID %q repeated", id)
		}
		seen[id] = true
	}
}

func TestNormalizeRunFilter(t *testing.T) {
	tests := []struct {
		in   int
		want int
	}{
		{0, store.DefaultRunLimit}, {-5, store.DefaultRunLimit}, {7, 7}, {store.MaxRunLimit + 1, store.MaxRunLimit},
	}
	for _, tt := range tests {
		f, err := store.NormalizeRunFilter(store.RunFilter{Limit: tt.in})
		if err != nil || f.Limit != tt.want {
			t.Errorf("limit %d → %d, %v; want %d", tt.in, f.Limit, err, tt.want)
		}
	}
}

func TestSameJSON(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1}`, "{\n  \"a\": 1\n}", true},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, false}, // key order is text, not whitespace
		{``, ``, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":`, `{"a":`, true},
		{`{"a":`, `{"a": `, false},
	}
	for _, tt := range tests {
		if got := store.SameJSON(json.RawMessage(tt.a), json.RawMessage(tt.b)); got != tt.want {
			t.Errorf("SameJSON(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
