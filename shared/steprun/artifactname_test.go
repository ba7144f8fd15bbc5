package steprun

import (
	"strings"
	"testing"
)

func TestArtifactName(t *testing.T) {
	at200 := strings.Repeat("a", MaxArtifactNameBytes)
	at201 := strings.Repeat("a", MaxArtifactNameBytes+1)
	for _, tc := range []struct{ key, want string }{
		{"report.md", "report.md"},
		{"../../etc/passwd", ".._.._etc_passwd"},
		{"a/b", "a_b"},
		{`a\b`, "a_b"},
		{"nul\x00", "nul_"},
		{"é", "_"},
		{"", "-"},
		{".", "_"},
		{"..", "__"},
		{"...", "___"},
		{".x", ".x"},
		{at200, at200},
	} {
		if got := ArtifactName(tc.key); got != tc.want {
			t.Errorf("ArtifactName(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
	long := ArtifactName(at201)
	if len(long) != MaxArtifactNameBytes || !strings.HasPrefix(long, strings.Repeat("a", MaxArtifactNameBytes-17)+"-") {
		t.Errorf("a %d-byte name: %q (%d bytes)", len(at201), long, len(long))
	}
	if other := ArtifactName(at201 + "b"); other == long {
		t.Error("two long names that differ after the cut map to one file")
	}
	for _, k := range []string{"../x", "", "..", at201, "report.md"} {
		if n := ArtifactName(k); ArtifactName(n) != n {
			t.Errorf("ArtifactName is not stable on %q: %q then %q", k, n, ArtifactName(n))
		}
	}
}

func TestArtifactFiles(t *testing.T) {
	files := artifactFiles([]string{"a/b", "a_b", "a\\b", "x"})
	seen := map[string]string{}
	for k, f := range files {
		if other, ok := seen[f]; ok {
			t.Errorf("%q and %q share the file %q", k, other, f)
		}
		seen[f] = k
		if ArtifactName(f) != f {
			t.Errorf("%q: file %q is not one file name", k, f)
		}
	}
	if files["a/b"] != "a_b" || files["x"] != "x" || !strings.HasPrefix(files["a_b"], "a_b-") {
		t.Errorf("files %v", files)
	}
}
