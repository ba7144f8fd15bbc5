package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "def.json")
	for _, data := range []string{"first", "second, longer"} {
		if err := Write(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
			t.Errorf("mode %v, want 0644", fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in the directory, want only the file (no temporary left)", len(entries))
	}
	// A directory that does not exist: an error, nothing written.
	if err := Write(filepath.Join(dir, "missing", "x"), []byte("x")); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
	// A path that is a directory: the rename fails and the temporary goes.
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "sub"), []byte("x")); err == nil {
		t.Error("Write over a directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d entries after a failed write, want 2 (file and sub)", len(entries))
	}
}
