package importer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/internal/atomicfile"
	"github.com/stepline/stepline/shared/yamldoc"
)

// Default bounds of what an import reads (Limits).
const (
	MaxConfigBytes = 1 << 20          // config.yaml
	MaxFileBytes   = yamldoc.MaxBytes // each pipeline or library step file
	MaxFiles       = 1000             // pipeline and library step files together
	MaxTotalBytes  = 64 << 20         // all of them together
)

// Limits bound what an import reads; a zero field is its default.
type Limits struct {
	ConfigBytes int // MaxConfigBytes
	FileBytes   int // MaxFileBytes (yamldoc's bounds apply too)
	Files       int // MaxFiles
	TotalBytes  int // MaxTotalBytes
}

func (l Limits) orDefaults() Limits {
	def := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	return Limits{def(l.ConfigBytes, MaxConfigBytes), def(l.FileBytes, MaxFileBytes), def(l.Files, MaxFiles), def(l.TotalBytes, MaxTotalBytes)}
}

// ManifestName is the file in DEST that lists what the importer wrote,
// with each file's SHA-256, so that a second import knows which files are
// its own and unchanged.
const ManifestName = ".stepline-import.json"

// Options tune an import.
type Options struct {
	// Force overwrites files in DEST the importer did not write, or that
	// were changed since it wrote them.
	Force bool
	// Schema is the JSON Schema of Stepline's pipeline format (package
	// compiler's Schema): the importer keeps the fields it defines and
	// drops, with a note, those it does not, and writes telegram notices
	// without a note once it lists the channel. Nil: the fields this
	// package was written against, and no telegram channel.
	Schema []byte
	// TelegramChannel says that the telegram channel is accepted whatever
	// Schema says.
	TelegramChannel bool
	// Limits bound the source; zero: the defaults.
	Limits Limits
}

// File is one file of DEST.
type File struct {
	Path   string // relative to DEST, slash-separated
	Action string // "written", "unchanged" or "removed"
	Kind   string // "project", "pipeline", "step", "tokens", "prices"
}

// Result is what an import did and what it says.
type Result struct {
	Files []File
	// Notes are every conversion, difference, drop and place that needs a
	// person, sorted by file and position. Files are named relative to SRC.
	Notes []Note
	// Pipelines and Steps are the pipeline and library step files written,
	// as paths in DEST, for the caller to validate.
	Pipelines, Steps []string
}

// ConflictError is an import refused because DEST holds files the
// importer did not write (or that were changed since).
type ConflictError struct{ Paths []string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s holds files the importer did not write or that were changed since (%s): pass --force to overwrite them", "DEST", strings.Join(e.Paths, ", "))
}

type importer struct {
	cfg      *config
	root     *yaml.Node // the pipeline being converted
	telegram bool       // Stepline accepts channel telegram
	schema   map[string][]string
	typed    *typedSchema // the schema's types, for the lax values (coerce.go); nil without a schema
	// libIncludes are, by library step name, the context names its
	// converted templates read (context.X): a pipeline that uses it
	// includes them.
	libIncludes map[string][]string
	// libWhen are the library steps' when: conditions as converted, by
	// name: a pipeline that uses one checks it against its own names.
	libWhen map[string]string
	// libSteps are the library steps as converted, by name.
	libSteps map[string]*yaml.Node
}

type planned struct {
	path, kind string
	data       []byte
}

// Import converts the reference project in src (its config.yaml, the
// pipelines and library steps it names) into a Stepline project in dest.
// It writes nothing when any file it would write exists in dest without
// being its own unchanged output, unless opt.Force. Running it twice on
// the same src gives the same dest.
func Import(src, dest string, opt Options) (*Result, error) {
	cfgPath := filepath.Join(src, "config.yaml")
	lim := opt.Limits.orDefaults()
	cfgSrc, err := readBounded(cfgPath, lim.ConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	res := &Result{}
	var cfgRoot *yaml.Node
	if doc, err := yamldoc.Parse(cfgSrc); err != nil {
		return nil, fmt.Errorf("config.yaml:%w", yamldoc.SyntaxError(cfgSrc, err))
	} else if len(doc.Content) > 0 {
		cfgRoot = doc.Content[0]
	}
	if same(cfgPath, filepath.Join(dest, "config.yaml")) {
		// DEST is SRC: the pipelines and steps would be overwritten in place.
		return nil, fmt.Errorf("DEST is SRC: import into another directory")
	}
	cfg := parseConfig("config.yaml", cfgRoot)
	imp := newImporter(cfg, opt)
	imp.calibrationConfig()
	res.Notes = append(res.Notes, cfg.notes...)

	plan := []planned{{path: "stepline.yaml", kind: "project"}} // written once the library steps are known
	if b := cfg.tokensFile(); b != nil {
		plan = append(plan, planned{"tokens.yaml", "tokens", b})
	}
	if b := cfg.pricesFile(); b != nil {
		plan = append(plan, planned{"prices.yaml", "prices", b})
	}
	total, count := 0, 0
	for _, dir := range []struct{ from, to, kind string }{{cfg.stepDir, "steps", "step"}, {cfg.pipelineDir, "pipelines", "pipeline"}} {
		from := dir.from
		if !filepath.IsAbs(from) {
			from = filepath.Join(src, from)
		}
		names, err := yamlFiles(from, lim.Files)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && dir.kind == "step" {
				continue // no library: the reference runs without one
			}
			return nil, fmt.Errorf("read %s: %w", dir.to, err)
		}
		for _, name := range names {
			if count++; count > lim.Files {
				return nil, fmt.Errorf("more than %d pipeline and library step files", lim.Files)
			}
			data, err := readBounded(filepath.Join(from, name), lim.FileBytes)
			if err != nil {
				return nil, err
			}
			if total += len(data); total > lim.TotalBytes {
				return nil, fmt.Errorf("the pipelines and library steps are larger than %d bytes together", lim.TotalBytes)
			}
			rel := filepath.ToSlash(filepath.Join(relOrAbs(src, from), name))
			out, notes := imp.convertFile(rel, data, dir.kind == "step")
			res.Notes = append(res.Notes, notes...)
			if out == nil {
				continue
			}
			p := dir.to + "/" + name
			if same(filepath.Join(from, name), filepath.Join(dest, filepath.FromSlash(p))) {
				return nil, fmt.Errorf("DEST would overwrite the source file %s: import into another directory", filepath.Join(from, name))
			}
			plan = append(plan, planned{p, dir.kind, out})
			if dir.kind == "pipeline" {
				res.Pipelines = append(res.Pipelines, filepath.Join(dest, filepath.FromSlash(p)))
			} else {
				res.Steps = append(res.Steps, filepath.Join(dest, filepath.FromSlash(p)))
			}
		}
	}
	plan[0].data = cfg.projectFile(len(res.Steps) > 0)
	sortNotes(res.Notes)
	files, err := write(dest, plan, opt.Force)
	if err != nil {
		return nil, err
	}
	res.Files = files
	return res, nil
}

// same reports whether two paths name the same file (or would).
func same(a, b string) bool {
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

func relOrAbs(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

func sortNotes(ns []Note) {
	sort.SliceStable(ns, func(a, b int) bool {
		x, y := ns[a], ns[b]
		if x.File != y.File {
			return x.File < y.File
		}
		if x.Line != y.Line {
			return x.Line < y.Line
		}
		return x.Col < y.Col
	})
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

// yamlFiles lists the *.yaml files of dir, as the reference loads them:
// in name order.
func yamlFiles(dir string, limit int) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".yaml") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
		if len(out) > limit {
			return nil, fmt.Errorf("%s: more than %d pipeline and library step files", dir, limit)
		}
	}
	sort.Strings(out)
	return out, nil
}

// convertFile converts one pipeline or library step file; nil when it
// cannot be read as YAML (a note says why).
func (imp *importer) convertFile(rel string, data []byte, library bool) ([]byte, []Note) {
	f := newFileConv(imp, rel, data)
	f.library = library
	if !utf8.Valid(data) {
		return nil, []Note{{File: rel, Line: 1, Col: 1, Level: Person, Kind: "file", Msg: "the file is not UTF-8: not imported"}}
	}
	doc, err := yamldoc.ParseSingle(data) // the reference refused a file of two documents
	if err != nil {
		var ye *yamldoc.Error
		msg := "not imported: "
		if !errors.As(err, &ye) { // a syntax error, placed where the text breaks
			ye = yamldoc.SyntaxError(data, err)
			msg += "invalid YAML: "
		}
		msg += ye.Msg
		return nil, []Note{{File: rel, Line: ye.Line, Col: ye.Column, Level: Person, Kind: "file", Msg: msg}}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, []Note{{File: rel, Line: 1, Col: 1, Level: Person, Kind: "file", Msg: "not a mapping: not imported"}}
	}
	doc.Content[0] = expand(doc.Content[0], func(k *yaml.Node) {
		f.notes = append(f.notes, Note{File: rel, Line: k.Line, Col: k.Column, Level: Check, Kind: "duplicate key",
			Msg: fmt.Sprintf("key %q is written twice in this mapping: the reference read the last value, kept here once", k.Value)})
	})
	root := doc.Content[0]
	imp.root = root
	if library {
		f.stepEntry(root)
		if imp.typed != nil {
			f.coerce(imp.typed, root, imp.typed.defs["step"])
		}
		if n := lookup(root, "name"); n != nil {
			imp.libSteps[n.Value] = root
			if len(f.includes) > 0 {
				imp.libIncludes[n.Value] = f.includes
			}
			if w := lookup(root, "when"); w != nil && w.Kind == yaml.ScalarNode && w.Tag != "!!null" {
				imp.libWhen[n.Value] = w.Value
			}
		}
	} else {
		f.convertPipeline(root)
		if imp.typed != nil {
			f.coerce(imp.typed, root, imp.typed.root)
		}
	}
	header := "# Imported from the reference's " + rel + " by \"stepline import vectorstep\"."
	if doc.HeadComment != "" {
		doc.HeadComment = header + "\n" + doc.HeadComment
	} else if root.HeadComment != "" {
		root.HeadComment = header + "\n\n" + root.HeadComment
	} else {
		doc.HeadComment = header
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, append(f.notes, Note{File: rel, Line: 1, Col: 1, Level: Person, Kind: "file", Msg: "not imported: " + err.Error()})
	}
	if err := enc.Close(); err != nil {
		return nil, append(f.notes, Note{File: rel, Line: 1, Col: 1, Level: Person, Kind: "file", Msg: "not imported: " + err.Error()})
	}
	return b.Bytes(), f.notes
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// write puts the planned files in dest, after checking that every file it
// replaces is its own unchanged output (or force), and removes its own
// earlier files no longer planned when they are unchanged.
func write(dest string, plan []planned, force bool) ([]File, error) {
	old := map[string]string{}
	if b, err := readBounded(filepath.Join(dest, ManifestName), MaxConfigBytes); err == nil {
		var m struct {
			Files map[string]string `json:"files"`
		}
		if json.Unmarshal(b, &m) == nil {
			old = m.Files
		}
	}
	current := func(p string) ([]byte, bool) {
		b, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(p)))
		return b, err == nil
	}
	var conflicts []string
	for _, p := range plan {
		b, ok := current(p.path)
		if ok && old[p.path] != digest(b) && !bytes.Equal(b, p.data) {
			conflicts = append(conflicts, p.path)
		}
	}
	if len(conflicts) > 0 && !force {
		return nil, &ConflictError{Paths: conflicts}
	}
	var files []File
	manifest := map[string]string{}
	for _, p := range plan {
		manifest[p.path] = digest(p.data)
		if b, ok := current(p.path); ok && bytes.Equal(b, p.data) {
			files = append(files, File{Path: p.path, Action: "unchanged", Kind: p.kind})
			continue
		}
		if err := writeFile(filepath.Join(dest, filepath.FromSlash(p.path)), p.data); err != nil {
			return nil, err
		}
		files = append(files, File{Path: p.path, Action: "written", Kind: p.kind})
	}
	stale := make([]string, 0)
	for p := range old {
		if _, ok := manifest[p]; !ok {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	for _, p := range stale {
		if b, ok := current(p); ok && digest(b) == old[p] && validOwnPath(p) {
			if err := os.Remove(filepath.Join(dest, filepath.FromSlash(p))); err != nil {
				return nil, err
			}
			files = append(files, File{Path: p, Action: "removed"})
		}
	}
	mb, err := json.MarshalIndent(struct {
		Note  string            `json:"note"`
		Files map[string]string `json:"files"`
	}{"files written by stepline import vectorstep, with their SHA-256: a later import overwrites only these, unchanged", manifest}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dest, ManifestName), append(mb, '\n')); err != nil {
		return nil, err
	}
	return files, nil
}

// validOwnPath reports whether a path from the manifest is one the
// importer could have written (the manifest is a file in DEST: it names
// no path outside it).
func validOwnPath(p string) bool {
	switch {
	case p == "stepline.yaml" || p == "tokens.yaml" || p == "prices.yaml":
		return true
	case strings.HasPrefix(p, "pipelines/") || strings.HasPrefix(p, "steps/"):
		name := p[strings.IndexByte(p, '/')+1:]
		return name != "" && !strings.ContainsAny(name, `/\`) && name != ".." && strings.HasSuffix(name, ".yaml")
	}
	return false
}

// writeFile writes a converted file, making its directory first.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data)
}

// TelegramAccepted reports whether a pipeline JSON Schema (package
// compiler's Schema) lets a notification's channel be telegram.
func TelegramAccepted(schema []byte) bool {
	var s struct {
		Definitions map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"definitions"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return false
	}
	for _, c := range s.Definitions["notification"].Properties["channel"].Enum {
		if c == "telegram" {
			return true
		}
	}
	return false
}

// yamlUnmarshal reads YAML within yamldoc's bounds (tests read the output back).
func yamlUnmarshal(b []byte, v any) error { return yamldoc.Unmarshal(b, v) }

// calibrationConfig decides config.yaml's calibration block: its n_min
// and bin_width go into every calibrated step when Stepline's steps take
// them; the rest is dropped.
func (imp *importer) calibrationConfig() {
	c := imp.cfg
	if c.calibration == nil {
		return
	}
	kept := map[string]bool{}
	for _, f := range imp.fields("calibration") {
		kept[f] = true
	}
	for _, e := range entries(c.calibration) {
		k := e[0].Value
		if (k == "n_min" || k == "bin_width") && kept[k] && slices.Contains(imp.fields("step"), "calibration") {
			c.add(e[0], Converted, "config calibration", "calibration."+k+": written into each step's calibration block that sets none")
			continue
		}
		c.add(e[0], Dropped, "config calibration."+k, "calibration."+k+": Stepline has no such setting")
	}
}

func newImporter(cfg *config, opt Options) *importer {
	return &importer{cfg: cfg, telegram: opt.TelegramChannel || TelegramAccepted(opt.Schema), schema: schemaFields(opt.Schema), typed: newTypedSchema(opt.Schema),
		libIncludes: map[string][]string{}, libWhen: map[string]string{}, libSteps: map[string]*yaml.Node{}}
}

// fields are the fields Stepline accepts in the definition def.
func (imp *importer) fields(def string) []string {
	if fs := imp.schema[def]; len(fs) > 0 {
		return fs
	}
	return builtinFields[def]
}

// schemaFields reads, from a pipeline JSON Schema, the fields of each
// definition the importer keeps fields of; nil when there is no schema.
func schemaFields(schema []byte) map[string][]string {
	if len(schema) == 0 {
		return nil
	}
	type object struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var s struct {
		Properties  map[string]json.RawMessage `json:"properties"`
		Definitions map[string]object          `json:"definitions"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	keys := func(m map[string]json.RawMessage) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	out := map[string][]string{"pipeline": keys(s.Properties)}
	if d, ok := s.Definitions["calibration"]; ok {
		out["calibration"] = keys(d.Properties)
	}
	for def := range builtinFields {
		if d, ok := s.Definitions[def]; ok {
			out[def] = keys(d.Properties)
		}
	}
	var budget object
	if b, ok := s.Properties["budget"]; ok && json.Unmarshal(b, &budget) == nil {
		out["budget"] = keys(budget.Properties)
	}
	return out
}
