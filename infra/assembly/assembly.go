// Package assembly reads what a synthesized cloud assembly (cdk.out)
// lists for publishing: the file assets of a stack, from its
// <stack>.assets.json manifest. It imports nothing of the CDK, so that
// the offline AWS tier (package e2e) and the infra tests read the
// manifest the same way without linking the CDK.
package assembly

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Packagings of a file asset.
const (
	PackagingFile = "file" // a file, published as it is
	PackagingZip  = "zip"  // a directory, published zipped (a function's code)
)

// FileAsset is one file asset a stack publishes.
type FileAsset struct {
	ID        string // the manifest's key: the asset's hash
	Path      string // the file or directory, relative to the assembly
	Packaging string // PackagingFile or PackagingZip
	ObjectKey string // the object key it is published under (the first destination's)
}

// FileAssets returns the file assets of stack in the assembly at dir,
// sorted by ID, leaving out the stack's template (which the manifest
// lists too).
func FileAssets(dir, stack string) ([]FileAsset, error) {
	name := stack + ".assets.json"
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	var m struct {
		Files map[string]struct {
			Source struct {
				Path      string `json:"path"`
				Packaging string `json:"packaging"`
			} `json:"source"`
			Destinations map[string]struct {
				ObjectKey string `json:"objectKey"`
			} `json:"destinations"`
		} `json:"files"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out []FileAsset
	for _, id := range slices.Sorted(maps.Keys(m.Files)) {
		f := m.Files[id]
		if !strings.HasPrefix(f.Source.Path, "asset.") {
			continue // the template
		}
		a := FileAsset{ID: id, Path: f.Source.Path, Packaging: f.Source.Packaging}
		for _, d := range slices.Sorted(maps.Keys(f.Destinations)) {
			a.ObjectKey = f.Destinations[d].ObjectKey
			break
		}
		out = append(out, a)
	}
	return out, nil
}
