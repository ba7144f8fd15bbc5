package steprun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ArtifactStore keeps the artifacts step outputs carry, so that records
// and the state payload hold a reference instead of the content.
type ArtifactStore interface {
	// Put stores content as artifact key of step in run and returns its
	// reference. Putting the same artifact again replaces it.
	Put(ctx context.Context, run, step, key, content string) (ref string, err error)
	// Get returns the content a reference points to. Errors: one wrapping
	// ErrArtifactNotFound when there is none.
	Get(ctx context.Context, ref string) (string, error)
	// Ref returns the reference Put returns for artifact key of step in
	// run, stored or not, without storing anything.
	Ref(run, step, key string) (string, error)
}

// ErrArtifactNotFound reports a reference to no stored artifact.
var ErrArtifactNotFound = errors.New("artifact not found")

// LocalScheme prefixes the references of a Dir.
const LocalScheme = "local://"

// isArtifactRef reports whether s is a reference rather than inline content.
func isArtifactRef(s string) bool {
	return strings.HasPrefix(s, LocalScheme) || strings.HasPrefix(s, "s3://")
}

// Dir is an ArtifactStore in a local directory: artifact key of step in run
// is the file Root/run/step/key (a "/" in a step name, as in "group/branch",
// becomes "_"), referenced as local://run/step/key. A key that is not one
// file name is refused (the runner stores a reply's artifact under
// ArtifactName of the name the reply gave).
type Dir struct {
	Root string
}

var _ ArtifactStore = Dir{}

func cleanPart(what, s string) (string, error) {
	switch {
	case s == "", s == ".", s == "..":
		return "", fmt.Errorf("artifact %s %q is not a usable file name", what, s)
	case strings.ContainsAny(s, "/\\\x00"):
		return "", fmt.Errorf("artifact %s %q contains a path separator", what, s)
	}
	return s, nil
}

// MaxArtifactNameBytes bounds the file (or S3 key segment) name an
// artifact is stored under.
const MaxArtifactNameBytes = 200

// ArtifactName is the one file name an artifact named key by a reply is
// stored under (the key the runner puts it as), locally and in S3 alike: every character but ASCII
// letters, digits, "-", "_" and "." becomes "_" (so "../../x" is
// ".._.._x", never a path), a name of dots only is as many underscores,
// the empty name is "-", and a name longer than MaxArtifactNameBytes keeps its start and a hash
// of the whole. Two names of one reply that map to one file ("a/b" and
// "a_b") are told apart by the runner. ArtifactName of its own answer
// answers the same.
func ArtifactName(key string) string {
	s := safeSegment(key)
	switch {
	case s == "":
		s = "-"
	case strings.Trim(s, ".") == "":
		s = strings.Repeat("_", len(s))
	}
	if len(s) > MaxArtifactNameBytes {
		s = hashedName(s, key)
	}
	return s
}

// hashedName is name's start, cut to fit MaxArtifactNameBytes with "-"
// and 16 hex digits of key's SHA-256 after it.
func hashedName(name, key string) string {
	sum := sha256.Sum256([]byte(key))
	return name[:min(len(name), MaxArtifactNameBytes-17)] + "-" + hex.EncodeToString(sum[:8])
}

// artifactFiles maps each of a reply's artifact names (sorted) to its
// file name: ArtifactName, and for a name whose file an earlier name
// took ("a_b" after "a/b"), that name's start and a hash of the whole.
func artifactFiles(keys []string) map[string]string {
	files := make(map[string]string, len(keys))
	used := make(map[string]bool, len(keys))
	for _, k := range keys {
		f := ArtifactName(k)
		if used[f] {
			f = hashedName(f, k)
		}
		used[f] = true
		files[k] = f
	}
	return files
}

func (d Dir) path(run, step, key string) (string, string, error) {
	parts := [3]string{run, strings.ReplaceAll(step, "/", "_"), key}
	for i, what := range [3]string{"run", "step", "key"} {
		p, err := cleanPart(what, parts[i])
		if err != nil {
			return "", "", err
		}
		parts[i] = p
	}
	if d.Root == "" {
		return "", "", errors.New("artifact directory not set")
	}
	return filepath.Join(d.Root, parts[0], parts[1], parts[2]), LocalScheme + parts[0] + "/" + parts[1] + "/" + parts[2], nil
}

// Put implements ArtifactStore.
func (d Dir) Put(ctx context.Context, run, step, key, content string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	p, ref, err := d.path(run, step, key)
	if err != nil {
		return "", fmt.Errorf("put artifact: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("put artifact %s: %w", ref, err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return "", fmt.Errorf("put artifact %s: %w", ref, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("put artifact %s: %w", ref, err)
	}
	return ref, nil
}

// Ref implements ArtifactStore.
func (d Dir) Ref(run, step, key string) (string, error) {
	_, ref, err := d.path(run, step, key)
	if err != nil {
		return "", fmt.Errorf("artifact reference: %w", err)
	}
	return ref, nil
}

// Get implements ArtifactStore.
func (d Dir) Get(ctx context.Context, ref string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rest, ok := strings.CutPrefix(ref, LocalScheme)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 {
		return "", fmt.Errorf("get artifact %q: not a %s reference", ref, LocalScheme)
	}
	p, _, err := d.path(parts[0], parts[1], parts[2])
	if err != nil {
		return "", fmt.Errorf("get artifact: %w", err)
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("get artifact %s: %w", ref, ErrArtifactNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("get artifact %s: %w", ref, err)
	}
	return string(b), nil
}
