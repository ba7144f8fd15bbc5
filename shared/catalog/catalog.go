// Package catalog is how a deployed Stepline tells its ingest function
// which pipelines it has, without the core stack changing when a pipeline
// is added.
//
// Each stack that holds pipelines (the core stack when they stay in it,
// else each pipeline stack) publishes one bundle: a JSON document holding
// its pipeline files, each with its compiled model, uploaded as a CDK file
// asset, and one Parameter Store parameter,
// /stepline/<prefix>/pipelines/<bundle>, whose value is the bundle's
// s3://bucket/key URL. The ingest function lists the parameters under
// /stepline/<prefix>/pipelines (one GetParametersByPath call per ten
// bundles; a deployment has at most 20), reads each bundle and routes with
// the union of their files in file-name order. A new bundle version has a
// new key (the asset's hash), so a parameter's value changes exactly when
// its pipelines do, and the function reloads only then (see Loader).
//
// A bundled file carries its source (GET /pipelines/{name} answers it)
// and its model: the pipeline as the CDK app compiled it, through the same
// compile stepline validate runs, in the JSON of pipeline.MarshalModel
// (NewFile). The function decodes the models with encoding/json
// (File.Pipeline) and never compiles: it links no compiler, schema
// validator, Liquid or YAML parser. A bundle of format 1 (a deployment
// from before the models were bundled) has none, and is refused with the
// fix: deploy the stacks again.
//
// Bundles are written by the deployment, not by events or models, but
// they are read back over S3 and the reader still bounds them: a bundle's
// size (MaxBundleBytes) and nesting (MaxDepth), the number of bundles
// (MaxBundles) and of files (MaxFiles), and each file's name (a plain
// .yaml or .yml file name, unique across bundles). Errors in a bundle's
// JSON name their line and column.
package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/stepline/stepline/shared/internal/jsonstr"
	"github.com/stepline/stepline/shared/pipeline"
)

// Limits on what a reader accepts.
const (
	MaxBundleBytes = 16 << 20 // one bundle's JSON
	MaxBundles     = 64       // parameters under the path
	MaxFiles       = 2000     // pipeline files over all bundles
	// MaxDepth is how deeply a bundle's JSON may nest objects and arrays:
	// room for a pipeline's own 100 levels of YAML (package yamldoc's
	// bound) under the bundle's and the model's.
	MaxDepth = 128
)

// Format is the bundle document's version: 2 since the files carry their
// compiled models.
const Format = 2

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
	// Model is the file's compiled pipeline, pipeline.MarshalModel's JSON.
	Model json.RawMessage `json:"model"`
}

// NewFile returns the bundled form of a pipeline file: its base name, its
// source and the model of p, the pipeline compiled from it.
func NewFile(name, source string, p *pipeline.Pipeline) (File, error) {
	if err := checkName(name); err != nil {
		return File{}, err
	}
	m, err := pipeline.MarshalModel(p)
	if err != nil {
		return File{}, fmt.Errorf("file %q: %w", name, err)
	}
	return File{Name: name, Source: source, Model: m}, nil
}

// Pipeline decodes the file's model. The pipeline's position is the
// file's name (Pos.File), its only position.
func (f File) Pipeline() (*pipeline.Pipeline, error) {
	p, err := pipeline.UnmarshalModel(f.Model)
	if err != nil {
		return nil, fmt.Errorf("pipeline file %s: %w", f.Name, err)
	}
	p.Pos = pipeline.Pos{File: f.Name}
	return p, nil
}

// Pipelines decodes the models of files, in their order.
func Pipelines(files []File) ([]*pipeline.Pipeline, error) {
	ps := make([]*pipeline.Pipeline, 0, len(files))
	for _, f := range files {
		p, err := f.Pipeline()
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
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

// Decode parses and checks a bundle document. Its models are checked to
// be there, not decoded (File.Pipeline decodes one).
func Decode(raw []byte) (Bundle, error) {
	if len(raw) > MaxBundleBytes {
		return Bundle{}, fmt.Errorf("bundle of %d bytes: at most %d", len(raw), MaxBundleBytes)
	}
	if err := checkDepth(raw, MaxDepth); err != nil {
		return Bundle{}, fmt.Errorf("bundle: %w", err)
	}
	// The format first, alone: an older or newer document is refused for
	// its format, not for a field it has or lacks. (json.Unmarshal also
	// refuses text after the document.)
	var v struct {
		Format int `json:"stepline_bundle"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Bundle{}, fmt.Errorf("bundle: not a bundle document: %w", positioned(raw, err))
	}
	if v.Format != Format {
		return Bundle{}, fmt.Errorf("bundle: format %d, want %d: deploy the core stack and the pipeline stacks again, from the same Stepline", v.Format, Format)
	}
	var b Bundle
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Bundle{}, fmt.Errorf("bundle: not a bundle document: %w", positioned(raw, err))
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
		if m := bytes.TrimSpace(f.Model); len(m) == 0 || m[0] != '{' {
			return fmt.Errorf("bundle: file %q has no compiled model: deploy its stack again", f.Name)
		}
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

// checkDepth returns an error naming the line and column of the first
// object or array of raw nested deeper than max. Brackets inside strings
// do not count; raw need not be valid JSON (the decoder says what else is
// wrong with it).
func checkDepth(raw []byte, max int) error {
	depth := 0
	for i, c := range jsonstr.Outside(raw) {
		switch c {
		case '{', '[':
			depth++
			if depth > max {
				return fmt.Errorf("%s: nested deeper than %d levels", lineCol(raw, int64(i)), max)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// positioned adds the line and column of a JSON error that has an offset
// into raw: the last byte the decoder read, the character that is wrong
// or the end of the value of the wrong type.
func positioned(raw []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%s: %w", lineCol(raw, syn.Offset-1), err)
	case errors.As(err, &typ):
		return fmt.Errorf("%s: %w", lineCol(raw, typ.Offset-1), err)
	}
	return err
}

// lineCol says where byte offset off of raw is: "line 3, column 7".
func lineCol(raw []byte, off int64) string {
	off = min(max(off, 0), int64(len(raw)))
	line, col := jsonstr.LineCol(string(raw[:off]), int(off))
	return fmt.Sprintf("line %d, column %d", line, col)
}
