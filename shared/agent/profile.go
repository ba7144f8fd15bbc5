package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/internal/lazyregexp"
	"github.com/stepline/stepline/shared/internal/yamlread"
	"github.com/stepline/stepline/shared/yamldoc"
)

// The files of a profile, in its directory agents/<name>/.
const (
	ProfileFile = "agent.yaml"
	SoulFile    = "soul.md"
)

// Bounds of the profile files and of the values they hold. A profile
// travels inlined in each of its steps' Task configuration, which Step
// Functions caps (the compiler checks the whole Task against its budget).
const (
	MaxProfileBytes         = 64 << 10 // agent.yaml
	MaxSoulBytes            = 64 << 10 // soul.md
	MaxProfiles             = 1000     // profiles in one agents directory
	MaxModelFallbacks       = 10
	MaxToolGrants           = 100 // servers one profile names
	MaxToolGlobs            = 100 // globs for one server
	MaxMaxTokens            = 1_000_000
	MaxMaxIterations        = 1000
	MaxToolTimeoutSeconds   = 900 // Lambda's limit: one tool call fits one invocation
	MaxTraceToolResultChars = 1_000_000
	MaxTemperature          = 2 // the widest API range; anthropic and bedrock take 0..1
)

// NameRE is what an agent's name (and its directory's) may be.
var NameRE = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$`)

// ServerNameRE is what an MCP server's name may be.
var ServerNameRE = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$`)

// ProfileFields returns the keys agent.yaml may hold.
func ProfileFields() []string {
	return []string{
		"name", "description", "model", "model_fallbacks", "max_tokens", "temperature",
		"thinking_level", "tools", "max_iterations", "tool_timeout_seconds", "trace_tool_result_max_chars",
	}
}

// renamed answers keys of the reference gateway's configuration that a
// profile spells differently, or that are not written at all.
var renamed = map[string]string{
	"max_agent_iterations":     "the limit is max_iterations in agent.yaml",
	"mcp_tool_timeout_seconds": "the limit is tool_timeout_seconds in agent.yaml",
	"soul":                     "the system prompt is the file soul.md beside agent.yaml",
	"version":                  "an agent's version is the hash of its files, computed when it loads",
}

// Loaded is a profile read from its directory, with where each value was
// written so that checks made later can point at it.
type Loaded struct {
	Profile  *Profile
	Path     string // its agent.yaml
	SoulPath string // its soul.md
	at       map[string]Pos
}

// At returns where key was written: a field ("model", "temperature"), an
// item ("model_fallbacks[1]"), a granted server ("tools.grafana") or one
// of its globs ("tools.grafana[0]"); the file itself when unknown.
func (l *Loaded) At(key string) Pos {
	if p, ok := l.at[key]; ok {
		return p
	}
	return Pos{File: l.Path, Line: 1, Col: 1}
}

// Version is the content hash of a profile: the first 12 hexadecimal
// digits of the SHA-256 of its two files' exact bytes, framed so that no
// two pairs of files give the same input:
//
//	"agent.yaml" NUL <decimal length> NUL <agent.yaml bytes>
//	"soul.md" NUL <decimal length> NUL <soul.md bytes>
//
// Any change to either file, a comment or a trailing blank included,
// makes a new version; moving the directory does not.
func Version(agentYAML, soul []byte) string {
	h := sha256.New()
	for _, f := range []struct {
		name string
		b    []byte
	}{{ProfileFile, agentYAML}, {SoulFile, soul}} {
		io.WriteString(h, f.name)
		h.Write([]byte{0})
		io.WriteString(h, strconv.Itoa(len(f.b)))
		h.Write([]byte{0})
		h.Write(f.b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// LoadProfiles reads every profile in dir, the project's agents
// directory: each subdirectory holding an agent.yaml, in name order.
// Directories whose names begin with "." or "_" are skipped; any other
// without agent.yaml gets a warning. A dir that does not exist holds no
// profiles. Every profile is returned, also one with errors (so a step
// naming it is not told the agent is unknown); the diagnostics say what
// is wrong.
func LoadProfiles(dir string) (map[string]*Loaded, Diagnostics) {
	var ds Diagnostics
	out := map[string]*Loaded{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		ds.Errorf(Pos{File: dir}, "read agents: %v", err)
		return out, ds
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(path, ProfileFile)); errors.Is(err, fs.ErrNotExist) {
			ds.Warnf(Pos{File: path}, "no %s here: not an agent", ProfileFile)
			continue
		}
		if n++; n > MaxProfiles {
			ds.Errorf(Pos{File: dir}, "more than %d agents in one directory", MaxProfiles)
			break
		}
		l, lds := LoadProfile(path)
		ds = append(ds, lds...)
		out[name] = l
	}
	return out, ds.Sort()
}

// LoadProfile reads the profile in dir (agent.yaml and soul.md); its name
// must be the directory's.
func LoadProfile(dir string) (*Loaded, Diagnostics) {
	var ds Diagnostics
	name := filepath.Base(dir)
	yamlPath, soulPath := filepath.Join(dir, ProfileFile), filepath.Join(dir, SoulFile)
	src, err := readBounded(yamlPath, MaxProfileBytes)
	if err != nil {
		ds.Errorf(Pos{File: yamlPath, Line: 1, Col: 1}, "%v", err)
		return &Loaded{Profile: &Profile{Name: name}, Path: yamlPath, SoulPath: soulPath}, ds
	}
	soul, err := readBounded(soulPath, MaxSoulBytes)
	if errors.Is(err, fs.ErrNotExist) {
		ds.Errorf(Pos{File: soulPath}, "missing: an agent's system prompt is its %s, beside %s (an empty file is allowed)", SoulFile, ProfileFile)
		soul = nil
	} else if err != nil {
		ds.Errorf(Pos{File: soulPath, Line: 1, Col: 1}, "%v", err)
		soul = nil
	}
	l, pds := ParseProfile(name, yamlPath, src, soulPath, soul)
	return l, append(ds, pds...).Sort()
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("the file is larger than %d KiB", limit>>10)
	}
	return b, nil
}

// ParseProfile reads a profile from the source of its agent.yaml and its
// soul.md (nil when missing); name is its directory's name, which the
// profile's name must repeat. The paths position the diagnostics. It
// checks what the files alone decide: fields, types, ranges, names,
// thinking levels, globs. CheckProfile checks it against its project.
func ParseProfile(name, path string, src []byte, soulPath string, soul []byte) (*Loaded, Diagnostics) {
	p := &parser{
		l:  &Loaded{Profile: &Profile{Name: name}, Path: path, SoulPath: soulPath, at: map[string]Pos{}},
		ds: Diagnostics{},
	}
	p.r = yamlread.Reader{Report: func(n *yaml.Node, warning bool, msg string) {
		d := Diagnostic{Pos: p.pos(n), Warning: warning, Msg: msg}
		p.ds = append(p.ds, d)
	}}
	pr := p.l.Profile
	if soul != nil {
		switch {
		case len(soul) > MaxSoulBytes:
			p.ds.Errorf(Pos{File: soulPath, Line: 1, Col: 1}, "the file is larger than %d KiB", MaxSoulBytes>>10)
		case !utf8.Valid(soul):
			p.ds.Errorf(Pos{File: soulPath, Line: 1, Col: 1}, "the file is not valid UTF-8")
		default:
			pr.Soul = string(soul)
		}
	}
	pr.Version = Version(src, soul)
	if !NameRE.MatchString(name) {
		p.ds.Errorf(Pos{File: filepath.Dir(path)}, "agent directory %q is not an agent name (letters, digits, _ and -, at most 80, starting with a letter or digit)", name)
	}
	p.parse(src)
	return p.l, p.ds.Sort()
}

type parser struct {
	l  *Loaded
	r  yamlread.Reader
	ds Diagnostics
}

func (p *parser) pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: p.l.Path, Line: 1, Col: 1}
	}
	return Pos{File: p.l.Path, Line: n.Line, Col: n.Column}
}

func (p *parser) note(key string, n *yaml.Node) { p.l.at[key] = p.pos(yamlread.Resolve(n)) }

func (p *parser) fail(n *yaml.Node, format string, args ...any) {
	p.ds.Errorf(p.pos(n), format, args...)
}

func (p *parser) parse(src []byte) {
	top := Pos{File: p.l.Path, Line: 1, Col: 1}
	if len(src) > MaxProfileBytes {
		p.ds.Errorf(top, "the file is larger than %d KiB", MaxProfileBytes>>10)
		return
	}
	if !utf8.Valid(src) {
		p.ds.Errorf(top, "the file is not valid UTF-8")
		return
	}
	doc, err := yamldoc.Parse(src)
	if err != nil {
		p.ds = append(p.ds, YAMLError(p.l.Path, err))
		return
	}
	if len(doc.Content) == 0 {
		p.ds.Errorf(top, "the file is empty: a profile needs at least name and model")
		return
	}
	root := doc.Content[0]
	es, ok := p.r.Mapping(root, "a profile")
	if !ok {
		return
	}
	pr := p.l.Profile
	seen := map[string]bool{}
	for _, e := range es {
		seen[e.Key] = true
		v := e.Value
		p.note(e.Key, v)
		if yamlread.IsNull(v) && e.Key != "name" && e.Key != "model" {
			continue // an optional field left empty: its default
		}
		switch e.Key {
		case "name":
			if s, ok := p.r.NonEmpty(v, "name"); ok && s != pr.Name {
				p.fail(v, "name %q does not match its directory %q: an agent is named after its directory", s, pr.Name)
			}
		case "description":
			pr.Description, _ = p.r.String(v, "description")
		case "model":
			pr.Model, _ = p.model(v, "model")
		case "model_fallbacks":
			p.fallbacks(v)
		case "max_tokens":
			pr.MaxTokens, _ = p.r.Int(v, "max_tokens", 1, MaxMaxTokens)
		case "temperature":
			if t, ok := p.r.Float(v, "temperature", 0, MaxTemperature); ok {
				pr.Temperature = &t
			}
		case "thinking_level":
			if s, ok := p.r.String(v, "thinking_level"); ok {
				if err := CheckThinkingLevel(s); err != nil {
					p.fail(v, "thinking_level: %v", err)
				} else {
					pr.ThinkingLevel = s
				}
			}
		case "tools":
			p.tools(v)
		case "max_iterations":
			pr.MaxIterations, _ = p.r.Int(v, "max_iterations", 1, MaxMaxIterations)
		case "tool_timeout_seconds":
			pr.ToolTimeoutSeconds, _ = p.r.Int(v, "tool_timeout_seconds", 1, MaxToolTimeoutSeconds)
		case "trace_tool_result_max_chars":
			pr.TraceToolResultMaxChars, _ = p.r.Int(v, "trace_tool_result_max_chars", 1, MaxTraceToolResultChars)
		default:
			if why, ok := renamed[e.Key]; ok {
				p.fail(e.KeyAt, "unknown field %q: %s", e.Key, why)
			} else {
				p.fail(e.KeyAt, "unknown field %q%s (fields: %s)", e.Key, DidYouMean(e.Key, ProfileFields()), strings.Join(ProfileFields(), ", "))
			}
		}
	}
	for _, req := range []string{"name", "model"} {
		if !seen[req] {
			p.fail(root, "%s: required", req)
		}
	}
}

// model reads a model string: "<provider>/<model>", or a model alone
// (the step's executor carries it).
func (p *parser) model(n *yaml.Node, field string) (string, bool) {
	s, ok := p.r.NonEmpty(n, field)
	if !ok {
		return "", false
	}
	if err := CheckModel(s); err != nil {
		p.fail(n, "%s: %v", field, err)
		return "", false
	}
	return s, true
}

// CheckModel checks a model string's form (its provider is the project's
// to know): no blanks or control characters, no template or brace, a
// model after the provider's slash.
func CheckModel(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return errors.New("must not be empty")
	case strings.Contains(s, "{{") || strings.Contains(s, "{%"):
		return fmt.Errorf("%q is a template: a model is written out", s)
	case strings.ContainsAny(s, "{}"):
		return fmt.Errorf("%q holds a brace: a model is written out", s)
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' }):
		return fmt.Errorf("%q holds a blank or a control character", s)
	case strings.HasSuffix(s, "/"):
		return fmt.Errorf("%q names no model after its provider", s)
	}
	return nil
}

// CheckThinkingLevel checks a thinking level against ThinkingLevels.
func CheckThinkingLevel(s string) error {
	if slices.Contains(ThinkingLevels(), s) {
		return nil
	}
	return fmt.Errorf("%q is not a thinking level%s: want one of %s", s, DidYouMean(s, ThinkingLevels()), strings.Join(ThinkingLevels(), ", "))
}

func (p *parser) fallbacks(n *yaml.Node) {
	items, ok := p.r.List(n, "model_fallbacks")
	if !ok {
		return
	}
	if len(items) > MaxModelFallbacks {
		p.fail(n, "model_fallbacks: %d models, more than %d", len(items), MaxModelFallbacks)
		return
	}
	pr := p.l.Profile
	for i, it := range items {
		key := fmt.Sprintf("model_fallbacks[%d]", i)
		s, ok := p.model(it, key)
		if !ok {
			continue
		}
		p.note(key, it)
		if s == pr.Model || slices.Contains(pr.ModelFallbacks, s) {
			p.ds.Warnf(p.pos(it), "%s: %q is already tried before it", key, s)
		}
		pr.ModelFallbacks = append(pr.ModelFallbacks, s)
	}
}

// tools reads the tool grants: a server name grants all its tools, a
// mapping {server: [globs]} the tools its globs match.
func (p *parser) tools(n *yaml.Node) {
	items, ok := p.r.List(n, "tools")
	if !ok {
		return
	}
	pr := p.l.Profile
	first := map[string]*yaml.Node{}
	add := func(server string, at *yaml.Node, globs []string) {
		if !ServerNameRE.MatchString(server) {
			p.fail(at, "tools: %q is not an MCP server name (letters, digits, _ and -, at most 40, starting with a letter or digit)", server)
			return
		}
		if prev, dup := first[server]; dup {
			p.fail(at, "tools: server %q is granted twice (first at %d:%d)", server, prev.Line, prev.Column)
			return
		}
		if len(pr.Tools) == MaxToolGrants {
			p.fail(at, "tools: more than %d servers", MaxToolGrants)
			return
		}
		first[server] = at
		p.note("tools."+server, at)
		pr.Tools = append(pr.Tools, ToolGrant{Server: server, Tools: globs})
	}
	for i, it := range items {
		field := fmt.Sprintf("tools[%d]", i)
		switch {
		case it.Kind == yaml.ScalarNode && it.ShortTag() == "!!str":
			add(it.Value, it, nil)
		case it.Kind == yaml.MappingNode:
			es, _ := p.r.Mapping(it, field)
			for _, e := range es {
				globs := p.globs(e.Value, "tools."+e.Key)
				if globs != nil {
					add(e.Key, e.KeyAt, globs)
				}
			}
		default:
			p.fail(it, "%s: want an MCP server name or {server: [tool globs]}, got %s", field, yamlread.Kind(it))
		}
	}
}

// globs reads a server's tool globs; nil when there is a problem.
func (p *parser) globs(n *yaml.Node, field string) []string {
	globs, at, ok := p.r.Strings(n, field)
	if !ok {
		return nil
	}
	if len(yamlread.Resolve(n).Content) != len(globs) {
		return nil // an item was not a string, reported
	}
	switch {
	case len(globs) == 0:
		p.fail(n, "%s: an empty list grants no tool: name the server alone to grant all its tools, or leave it out", field)
		return nil
	case len(globs) > MaxToolGlobs:
		p.fail(n, "%s: %d globs, more than %d", field, len(globs), MaxToolGlobs)
		return nil
	}
	for i, g := range globs {
		if err := CheckGlob(g); err != nil {
			p.fail(at[i], "%s[%d]: %v", field, i, err)
			return nil
		}
		if g == "" {
			p.fail(at[i], "%s[%d]: an empty glob matches no tool", field, i)
			return nil
		}
		p.note(fmt.Sprintf("%s[%d]", field, i), at[i])
	}
	return globs
}

var yamlLineRE = lazyregexp.New(`^yaml: (?:line (\d+): )?(.*)$`)

// YAMLError positions what yamldoc.Parse refused in file: a bound
// crossed, at its node, or a syntax error, at its line.
func YAMLError(file string, err error) Diagnostic {
	var be *yamldoc.Error
	if errors.As(err, &be) {
		return Diagnostic{Pos: Pos{File: file, Line: be.Line, Col: be.Column}, Msg: be.Msg}
	}
	msg := err.Error()
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	line := 1
	if m := yamlLineRE.FindStringSubmatch(strings.SplitN(msg, "\n", 2)[0]); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
		}
		msg = m[2]
	}
	return Diagnostic{Pos: Pos{File: file, Line: line, Col: 1}, Msg: "invalid YAML: " + msg}
}
