package dynamo

import (
	"slices"
	"testing"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"disk-full", "disk-full"},
		{"a#b", "a%23b"},
		{"50%", "50%25"},
		{"%23", "%2523"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := escape(tt.in); got != tt.want {
			t.Errorf("escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestKeysDoNotCollide(t *testing.T) {
	dedup := func(p, f string) string { return prefixDedup + escape(p) + "#" + escape(f) }
	tests := []struct {
		name string
		a, b string
	}{
		{"dedup: '#' moved between parts", dedup("p#q", "r"), dedup("p", "q#r")},
		{"dedup: escaped text vs escape", dedup("p%23q", "r"), dedup("p#q", "r")},
		{"step: name ending in a number", stepSK("fan#1", 2), stepSK("fan", 12)},
		{"step: slash names", stepSK("group/a", 1), stepSK("group", 1)},
		{"run: escaped ID", runPK("a#b"), runPK("a%23b")},
	}
	for _, tt := range tests {
		if tt.a == tt.b {
			t.Errorf("%s: both are %q", tt.name, tt.a)
		}
	}
}

func TestSchema(t *testing.T) {
	def := Schema()
	if got, want := def.KeyAttributes(), []string{AttrPK, AttrSK, AttrGSI1PK, AttrGSI1SK, AttrGSI2PK, AttrGSI2SK}; !slices.Equal(got, want) {
		t.Errorf("key attributes %v, want %v", got, want)
	}
	if def.TTLAttribute != AttrTTL {
		t.Errorf("TTL attribute %q", def.TTLAttribute)
	}
	if len(def.Indexes) != 2 {
		t.Fatalf("%d indexes, want 2", len(def.Indexes))
	}
	for _, g := range def.Indexes {
		proj := g.NonKeyAttributes
		for _, usage := range []string{aInputTokens, aOutputTokens, aCostUSD, aUsageKeys, aTrigger, aFinalOutput} {
			if slices.Contains(proj, usage) {
				t.Errorf("index %s projects %q: AddUsage and big fields must not reach the indexes", g.Name, usage)
			}
		}
		for _, need := range []string{aID, aPipeline, aStatus, aStartedAt} {
			if !slices.Contains(proj, need) {
				t.Errorf("index %s does not project %q", g.Name, need)
			}
		}
	}
}
