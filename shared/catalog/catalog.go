// Package catalog is how a deployed Stepline tells its ingest function
// which pipelines it has, without the core stack changing when a pipeline
// is added.
//
// Each stack that holds pipelines (the core stack when they stay in it,
// else each pipeline stack) publishes one bundle: a JSON document holding
// its pipeline files, uploaded as a CDK file asset, and one Parameter
// Store parameter, /stepline/<prefix>/pipelines/<bundle>, whose value is
// the bundle's s3://bucket/key URL. The ingest function lists the
// parameters under /stepline/<prefix>/pipelines (one GetParametersByPath
// call per ten bundles; a deployment has at most 20), reads each bundle
// and routes with the union of their files in file-name order. A new
// bundle version has a new key (the asset's hash), so a parameter's value
// changes exactly when its pipelines do, and the function reloads only
// then (see Loader).
//
// Bundles are written by the deployment, not by events or models, but
// the reader still bounds them: a bundle's size (MaxBundleBytes), the
// number of bundles (MaxBundles) and of files (MaxFiles), and each file's
// name (a plain .yaml or .yml file name, unique across bundles).
package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Limits on what a reader accepts.
const (
	MaxBundleBytes = 16 << 20 // one bundle's JSON
	MaxBundles     = 64       // parameters under the path
	MaxFiles       = 2000     // pipeline files over all bundles
)

// Format is the bundle document's version.
const Format = 1

// Path is the Parameter Store path under which a deployment with the
// given name prefix (its state machines' prefix) publishes its bundles.
func Path(prefix string) string { return "/stepline/" + prefix + "/pipelines" }

// ParameterName is the parameter of bundle name (the stack's: "core", or
// the pipeline stack's number) under Path(prefix).
func ParameterName(prefix, bundle string) string { return Path(prefix) + "/" + bundle }

// File is one pipeline file of a bundle.
type File struct {
	Name   string `json:"name"`   // the file's base name, e.g. "triage.yaml"
	Source string `json:"source"` // its bytes
}

// Bundle is the pipeline files of one stack.
type Bundle struct {
	Format int    `json:"stepline_bundle"`
	Files  []File `json:"files"` // in file-name order
}

// checkName checks what a bundled file may be called: a file name (no
// directory, no separator or NUL) of at most 255 bytes with a .yaml or
// .yml extension, as the directory the deployment read them from held.
func checkName(name string) error {
	ext := strings.ToLower(filepath.Ext(name))
	if len(name) > 255 || strings.ContainsAny(name, "/\\\x00") || (ext != ".yaml" && ext != ".yml") {
		return fmt.Errorf("file name %q: want a .yaml or .yml file name", name)
	}
	return nil
}

// Encode returns the bundle document of files, sorted by name. A name
// that is not a plain YAML file name, or one given twice, is an error.
func Encode(files []File) ([]byte, error) {
	b := Bundle{Format: Format, Files: append([]File(nil), files...)}
	sort.Slice(b.Files, func(i, j int) bool { return b.Files[i].Name < b.Files[j].Name })
	if err := b.check(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode parses and checks a bundle document.
func Decode(raw []byte) (Bundle, error) {
	if len(raw) > MaxBundleBytes {
		return Bundle{}, fmt.Errorf("bundle of %d bytes: at most %d", len(raw), MaxBundleBytes)
	}
	var b Bundle
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Bundle{}, fmt.Errorf("bundle: not a bundle document: %w", err)
	}
	if b.Format != Format {
		return Bundle{}, fmt.Errorf("bundle: format %d, want %d (deploy the core stack and the pipeline stacks from the same Stepline)", b.Format, Format)
	}
	if err := b.check(); err != nil {
		return Bundle{}, err
	}
	return b, nil
}

func (b Bundle) check() error {
	if len(b.Files) > MaxFiles {
		return fmt.Errorf("bundle: %d files, at most %d", len(b.Files), MaxFiles)
	}
	seen := make(map[string]bool, len(b.Files))
	for _, f := range b.Files {
		if err := checkName(f.Name); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
		if seen[f.Name] {
			return fmt.Errorf("bundle: file %q given twice", f.Name)
		}
		seen[f.Name] = true
	}
	return nil
}

// ParseURL splits a parameter's value, s3://bucket/key, into its bucket
// and key.
func ParseURL(v string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(v, "s3://")
	if ok {
		bucket, key, ok = strings.Cut(rest, "/")
	}
	if !ok || bucket == "" || key == "" {
		return "", "", fmt.Errorf("%q is not an s3://bucket/key URL", v)
	}
	return bucket, key, nil
}
