package project

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/internal/yamlread"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/yamldoc"
)

// FileName is the project file's name.
const FileName = "stepline.yaml"

// MaxFileBytes bounds stepline.yaml.
const MaxFileBytes = 1 << 20

// Bounds of what stepline.yaml declares.
const (
	MaxServers     = 100
	MaxRules       = 1000
	MaxProviders   = 100
	MaxArgs        = 100
	MaxHeaders     = 100
	MaxRegexLength = 1000
)

// Default directories, relative to the project file's.
const (
	DefaultPipelines = "pipelines"
	DefaultAgents    = "agents"
	DefaultSteps     = "steps"
)

// Project is a loaded stepline.yaml: where its pipelines, agents and step
// files live, the model providers and MCP servers its agents use, the
// tool policy, executor defaults, and its agent profiles.
type Project struct {
	Path string // the stepline.yaml read
	Dir  string // its directory: relative directories are from here
	// Directories, joined to Dir when relative.
	Pipelines string
	Agents    string
	// Steps is the step library: the steps a pipeline names with use:.
	Steps     string
	Providers agent.Providers // the built-ins, with the file's changes and additions
	Servers   map[string]agent.Server
	Policy    agent.Policy
	Executors Executors
	// Notifications are defaults of the pipelines' notification channels
	// (notifications.telegram).
	Notifications Notifications
	// HumanApproval routes approval requests to chat channels by the
	// run's team (human_approval); see ApprovalRoutes.
	HumanApproval approval.Routes
	// Profiles are the agents in Agents, by name.
	Profiles map[string]*agent.Loaded
	// StepFiles are the files of the step library (Steps), in name
	// order, as read: package compiler parses them.
	StepFiles []StepFile
	// Diagnostics are every problem of stepline.yaml and of the profiles,
	// sorted. A project with errors compiles no pipeline.
	Diagnostics agent.Diagnostics

	at map[string]agent.Pos // where keys were written ("mcp_servers.grafana")
}

// Executors are defaults for steps that do not set them.
type Executors struct {
	// OpenAI is the endpoint of gateway steps without base_url (and
	// api_key): the compiler writes them into such steps'
	// executor_config, so the step runs with them wherever it runs.
	OpenAI OpenAIDefaults
	// Gateway and OpenClaw place the remote agent runtimes agent steps
	// run on (see Runtime).
	Gateway  GatewayConfig
	OpenClaw OpenClawConfig
}

// OpenAIDefaults is executors.openai.
type OpenAIDefaults struct {
	BaseURL string // an absolute http(s) URL, or ""
	APIKey  string // a ${NAME} reference, or ""
}

// GatewayConfig is executors.gateway: a remote agent gateway.
type GatewayConfig struct {
	URL   string
	Token string // a ${NAME} reference
}

// OpenClawConfig is executors.openclaw: an OpenClaw gateway.
type OpenClawConfig struct {
	URL string
	// Identity is the directory of the device identity (device.json,
	// device-auth.json) as written; see Project.OpenClawIdentity.
	Identity string
}

// Find returns the stepline.yaml that governs path (a pipeline file or a
// directory): the first found walking up from its directory, or "" when
// there is none up to the file system's root. The path is relative when
// it lies under the working directory, as a pipeline path given relative
// is.
func Find(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", FileName, err)
	}
	dir := abs
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		dir = filepath.Dir(abs)
	}
	for {
		cand := filepath.Join(dir, FileName)
		if fi, err := os.Stat(cand); err == nil && !fi.IsDir() {
			return relative(cand), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// relative returns path relative to the working directory when it lies
// under it.
func relative(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// ForFile loads the project that governs the pipeline file at path; nil
// when no stepline.yaml lies above it.
func ForFile(path string) (*Project, error) {
	cfg, err := Find(path)
	if err != nil || cfg == "" {
		return nil, err
	}
	return Load(cfg)
}

// Load reads the project file at path, the profiles in its agents
// directory and the files of its steps directory. The error is for a
// file that cannot be read; what is wrong inside it, in a profile or in
// reading a step file, is in the project's Diagnostics (package compiler
// checks what a step file says).
func Load(path string) (*Project, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read project: %w", err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read project: %w", err)
	}
	p := Parse(path, src)
	profiles, ds := agent.LoadProfiles(p.Agents)
	p.Profiles = profiles
	p.Diagnostics = append(p.Diagnostics, ds...)
	for _, name := range p.AgentNames() {
		p.Diagnostics = append(p.Diagnostics, agent.CheckProfile(profiles[name], p.Providers, p.Servers, p.Policy)...)
	}
	if _, err := os.Stat(p.Agents); errors.Is(err, fs.ErrNotExist) {
		if pos, ok := p.at["agents"]; ok {
			p.Diagnostics.Warnf(pos, "agents: directory %s does not exist: the project has no agents", p.Agents)
		}
	}
	steps, sds := loadStepFiles(p.Steps)
	p.StepFiles = steps
	p.Diagnostics = append(p.Diagnostics, sds...)
	if _, err := os.Stat(p.Steps); errors.Is(err, fs.ErrNotExist) {
		if pos, ok := p.at["steps"]; ok {
			p.Diagnostics.Warnf(pos, "steps: directory %s does not exist: the project has no step library", p.Steps)
		}
	}
	p.Diagnostics = p.Diagnostics.Sort()
	return p, nil
}

// Parse reads the project file's source; path names it in diagnostics
// and places the directories. It loads no profiles (Load does).
func Parse(path string, src []byte) *Project {
	dir := filepath.Dir(path)
	p := &Project{
		Path:      path,
		Dir:       dir,
		Pipelines: filepath.Join(dir, DefaultPipelines),
		Agents:    filepath.Join(dir, DefaultAgents),
		Steps:     filepath.Join(dir, DefaultSteps),
		Providers: agent.BuiltinProviders(),
		Servers:   map[string]agent.Server{},
		Policy:    agent.Policy{Default: agent.Allow},
		Profiles:  map[string]*agent.Loaded{},
		at:        map[string]agent.Pos{},
	}
	d := &decoder{p: p}
	d.r = yamlread.Reader{Report: func(n *yaml.Node, warning bool, msg string) {
		p.Diagnostics = append(p.Diagnostics, agent.Diagnostic{Pos: d.pos(n), Warning: warning, Msg: msg})
	}}
	d.parse(src)
	p.Diagnostics = p.Diagnostics.Sort()
	return p
}

// AgentNames lists the project's agents, sorted.
func (p *Project) AgentNames() []string {
	out := make([]string, 0, len(p.Profiles))
	for n := range p.Profiles {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ServerNames lists the declared MCP servers, sorted.
func (p *Project) ServerNames() []string {
	out := make([]string, 0, len(p.Servers))
	for n := range p.Servers {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// At returns where a key of the project file was written: "agents",
// "mcp_servers.grafana", "tool_policy.rules[2]", …; the file itself when
// unknown.
func (p *Project) At(key string) agent.Pos {
	if pos, ok := p.at[key]; ok {
		return pos
	}
	return agent.Pos{File: p.Path, Line: 1, Col: 1}
}

// Fields of stepline.yaml.
var (
	topFields      = []string{"pipelines", "agents", "steps", "providers", "mcp_servers", "tool_policy", "executors", "notifications", "human_approval"}
	serverFields   = []string{"url", "headers", "command", "args", "env"}
	policyFields   = []string{"default", "rules"}
	ruleFields     = []string{"allow", "deny", "reason"}
	matchFields    = []string{"server", "tool", "agent", "input_regex"}
	providerFields = []string{"base_url", "api_key", "region"}
	executorFields = map[string][]string{
		"openai":   {"base_url", "api_key"},
		"gateway":  {"url", "token"},
		"openclaw": {"url", "identity"},
	}
)

// fromGateway answers keys of the reference gateway's config.yaml.
var fromGateway = map[string]string{
	"agents_dir":    `the agents directory is "agents"`,
	"limits":        "an agent's limits are in its agent.yaml (max_iterations, tool_timeout_seconds, trace_tool_result_max_chars)",
	"server":        "Stepline has no gateway server to configure",
	"identity":      "Stepline has no gateway identity",
	"logging":       "Stepline logs where its commands and functions run",
	"observability": "Stepline traces through X-Ray on AWS",
}

type decoder struct {
	p     *Project
	r     yamlread.Reader
	rules []string // where each rule of the policy was written
}

func (d *decoder) pos(n *yaml.Node) agent.Pos {
	if n == nil {
		return agent.Pos{File: d.p.Path, Line: 1, Col: 1}
	}
	return agent.Pos{File: d.p.Path, Line: n.Line, Col: n.Column}
}

func (d *decoder) note(key string, n *yaml.Node) { d.p.at[key] = d.pos(yamlread.Resolve(n)) }

func (d *decoder) fail(n *yaml.Node, format string, args ...any) {
	d.p.Diagnostics.Errorf(d.pos(n), format, args...)
}

func (d *decoder) warn(n *yaml.Node, format string, args ...any) {
	d.p.Diagnostics.Warnf(d.pos(n), format, args...)
}

func (d *decoder) unknown(e yamlread.Entry, where string, fields []string) {
	prefix := ""
	if where != "" {
		prefix = where + ": "
	}
	d.fail(e.KeyAt, "%sunknown field %q%s (fields: %s)", prefix, e.Key, agent.DidYouMean(e.Key, fields), strings.Join(fields, ", "))
}

func (d *decoder) parse(src []byte) {
	p := d.p
	top := agent.Pos{File: p.Path, Line: 1, Col: 1}
	switch {
	case len(src) > MaxFileBytes:
		p.Diagnostics.Errorf(top, "the file is larger than %d MiB", MaxFileBytes>>20)
		return
	case !utf8.Valid(src):
		p.Diagnostics.Errorf(top, "the file is not valid UTF-8")
		return
	}
	doc, err := yamldoc.Parse(src)
	if err != nil {
		p.Diagnostics = append(p.Diagnostics, agent.YAMLError(p.Path, err))
		return
	}
	if len(doc.Content) == 0 {
		return // an empty project file: every default
	}
	es, ok := d.r.Mapping(doc.Content[0], "a project file")
	if !ok {
		return
	}
	for _, e := range es {
		d.note(e.Key, e.Value)
		if yamlread.IsNull(e.Value) {
			continue
		}
		switch e.Key {
		case "pipelines":
			d.directory(e.Value, "pipelines", &p.Pipelines)
		case "agents":
			d.directory(e.Value, "agents", &p.Agents)
		case "steps":
			d.directory(e.Value, "steps", &p.Steps)
		case "providers":
			d.providers(e.Value)
		case "mcp_servers":
			d.servers(e.Value)
		case "tool_policy":
			d.policy(e.Value)
		case "executors":
			d.executors(e.Value)
		case "notifications":
			d.notifications(e.Value)
		case "human_approval":
			d.humanApproval(e.Value)
		default:
			if why, ok := fromGateway[e.Key]; ok {
				d.fail(e.KeyAt, "unknown field %q: it belongs to the reference gateway's config.yaml; %s", e.Key, why)
				continue
			}
			d.unknown(e, "", topFields)
		}
	}
	d.checkRules()
}

// checkRules warns about rules that can never decide a call: one naming
// a server the file does not declare, one after a rule that matches
// every call.
func (d *decoder) checkRules() {
	servers := d.p.ServerNames()
	for i, r := range d.p.Policy.Rules {
		where := d.rules[i]
		if r.Server != "" && d.p.Servers[r.Server].Name == "" {
			d.p.Diagnostics.Warnf(d.p.At(where+"."+r.Effect+".server"), "%s: no MCP server %q is declared%s: the rule never matches", where, r.Server, agent.DidYouMean(r.Server, servers))
		}
		for j := range i {
			q := d.p.Policy.Rules[j]
			if q.Server == "" && (q.Tool == "" || q.Tool == "*") && (q.Agent == "" || q.Agent == "*") && q.InputRegex == "" {
				d.p.Diagnostics.Warnf(d.p.At(where), "%s: never reached: %s matches every call first", where, d.rules[j])
				break
			}
		}
	}
}

func (d *decoder) directory(n *yaml.Node, field string, dst *string) {
	s, ok := d.r.NonEmpty(n, field)
	if !ok {
		return
	}
	if filepath.IsAbs(s) {
		*dst = filepath.Clean(s)
		return
	}
	*dst = filepath.Join(d.p.Dir, s)
}

// providers reads providers: changes to the built-ins and custom
// OpenAI-compatible endpoints.
func (d *decoder) providers(n *yaml.Node) {
	es, ok := d.r.Mapping(n, "providers")
	if !ok {
		return
	}
	builtin := agent.BuiltinProviders()
	for _, e := range es {
		where := "providers." + e.Key
		d.note(where, e.KeyAt)
		switch {
		case e.Key == agent.APIGateway:
			d.fail(e.KeyAt, "%s: the provider name %q is reserved for models a gateway step carries without a provider", where, e.Key)
			continue
		case !agent.ProviderNameRE.MatchString(e.Key):
			d.fail(e.KeyAt, "%s: %q is not a provider name (lowercase letters, digits, _ and -, at most 40, starting with a letter)", where, e.Key)
			continue
		case len(d.p.Providers) >= len(builtin)+MaxProviders:
			d.fail(e.KeyAt, "providers: more than %d", MaxProviders)
			return
		}
		prov, known := builtin[e.Key]
		if !known {
			prov = agent.Provider{API: agent.APIGateway}
		}
		fs, ok := d.r.Mapping(e.Value, where)
		if !ok {
			continue
		}
		hasURL := false
		for _, f := range fs {
			key := where + "." + f.Key
			switch {
			case f.Key == "base_url" && e.Key != "bedrock":
				if u, ok := d.url(f.Value, key, "http", "https"); ok {
					prov.BaseURL, hasURL = u, true
				}
			case f.Key == "api_key" && e.Key != "bedrock":
				if k, ok := d.secretRef(f.Value, key, true); ok {
					prov.APIKey = k
				}
			case f.Key == "region" && e.Key == "bedrock":
				prov.Region, _ = d.r.NonEmpty(f.Value, key)
			case slices.Contains(providerFields, f.Key):
				d.fail(f.KeyAt, "%s: %s does not apply to provider %q", where, f.Key, e.Key)
			default:
				allowed := []string{"base_url", "api_key"}
				if e.Key == "bedrock" {
					allowed = []string{"region"}
				}
				d.unknown(f, where, allowed)
			}
		}
		if !known && !hasURL {
			d.fail(e.KeyAt, "%s: base_url: required: a provider Stepline does not build in is an OpenAI-compatible endpoint at its base_url (built in: %s)", where, strings.Join(builtin.Names(), ", "))
			continue
		}
		d.p.Providers[e.Key] = prov
	}
}

// servers reads mcp_servers.
func (d *decoder) servers(n *yaml.Node) {
	es, ok := d.r.Mapping(n, "mcp_servers")
	if !ok {
		return
	}
	if len(es) > MaxServers {
		d.fail(n, "mcp_servers: %d servers, more than %d", len(es), MaxServers)
		return
	}
	for _, e := range es {
		where := "mcp_servers." + e.Key
		d.note(where, e.KeyAt)
		if !agent.ServerNameRE.MatchString(e.Key) {
			d.fail(e.KeyAt, "%s: %q is not an MCP server name (letters, digits, _ and -, at most 40, starting with a letter or digit)", where, e.Key)
			continue
		}
		fs, ok := d.r.Mapping(e.Value, where)
		if !ok {
			continue
		}
		s := agent.Server{Name: e.Key}
		var urlAt, cmdAt *yaml.Node
		bad := false
		for _, f := range fs {
			key := where + "." + f.Key
			switch f.Key {
			case "url":
				urlAt = f.KeyAt
				if u, ok := d.url(f.Value, key, "http", "https"); ok {
					s.URL = u
				} else {
					bad = true
				}
			case "headers":
				s.Headers = d.headers(f.Value, key)
				bad = bad || s.Headers == nil
			case "command":
				cmdAt = f.KeyAt
				if c, ok := d.r.NonEmpty(f.Value, key); ok {
					s.Command = c
				} else {
					bad = true
				}
			case "args":
				args, _, ok := d.r.Strings(f.Value, key)
				if ok && len(args) > MaxArgs {
					d.fail(f.Value, "%s: %d arguments, more than %d", key, len(args), MaxArgs)
					ok = false
				}
				s.Args, bad = args, bad || !ok
			case "env":
				env, at, ok := d.r.StringMap(f.Value, key)
				for k, v := range env {
					d.checkRefs(at[k], key+"."+k, v)
				}
				s.Env, bad = env, bad || !ok
			default:
				d.unknown(f, where, serverFields)
			}
		}
		switch {
		case urlAt != nil && cmdAt != nil:
			d.fail(cmdAt, "%s: give url (streamable HTTP) or command (stdio), not both", where)
			continue
		case urlAt == nil && cmdAt == nil && !bad:
			d.fail(e.KeyAt, "%s: needs url (streamable HTTP, everywhere) or command (stdio, local runs only)", where)
			continue
		case urlAt != nil && (s.Args != nil || s.Env != nil):
			d.fail(urlAt, "%s: args and env are for a stdio server (command); an HTTP server takes headers", where)
			continue
		case cmdAt != nil && s.Headers != nil:
			d.fail(cmdAt, "%s: headers are for an HTTP server (url); a stdio server takes env", where)
			continue
		}
		if !bad {
			d.p.Servers[e.Key] = s
		}
	}
}

// headers reads an HTTP server's headers; nil when one is wrong.
func (d *decoder) headers(n *yaml.Node, field string) map[string]string {
	hs, at, ok := d.r.StringMap(n, field)
	if !ok {
		return nil
	}
	if len(hs) > MaxHeaders {
		d.fail(n, "%s: %d headers, more than %d", field, len(hs), MaxHeaders)
		return nil
	}
	good := true
	for k, v := range hs {
		key := field + "." + k
		switch {
		case !settings.ValidHeaderName(k):
			d.fail(at[k], "%s: %q is not a valid header name", field, k)
			good = false
		case strings.ContainsAny(v, "\r\n"):
			d.fail(at[k], "%s: must not contain line breaks", key)
			good = false
		default:
			if !d.checkRefs(at[k], key, v) {
				good = false
			} else if credential(k) && !strings.Contains(v, "${") {
				d.warn(at[k], "%s: a credential written out would be compiled into every state machine that uses the server: write it as a ${NAME} secret reference", key)
			}
		}
	}
	if !good {
		return nil
	}
	return hs
}

// credential reports whether a header name looks like it carries one.
func credential(name string) bool {
	l := strings.ToLower(name)
	return l == "authorization" || l == "cookie" || strings.Contains(l, "token") || strings.Contains(l, "key") || strings.Contains(l, "secret")
}

// checkRefs checks the ${NAME} placeholders in a value.
func (d *decoder) checkRefs(n *yaml.Node, field, s string) bool {
	if err := secret.CheckRefs(s); err != nil {
		d.fail(n, "%s: %v", field, err)
		return false
	}
	return true
}

// secretRef reads a value that must be one ${NAME} reference (or "" when
// empty is allowed: send none).
func (d *decoder) secretRef(n *yaml.Node, field string, empty bool) (string, bool) {
	s, ok := d.r.String(n, field)
	if !ok {
		return "", false
	}
	if (s == "" && empty) || secret.IsRef(s) {
		return s, true
	}
	d.fail(n, "%s: write it as one ${NAME} secret reference: a value written out would be compiled into the state machine", field)
	return "", false
}

// url reads an absolute URL with one of schemes. A URL holding a ${NAME}
// reference is checked where it is resolved.
func (d *decoder) url(n *yaml.Node, field string, schemes ...string) (string, bool) {
	s, ok := d.r.NonEmpty(n, field)
	if !ok {
		return "", false
	}
	if strings.Contains(s, "${") {
		return s, d.checkRefs(n, field, s)
	}
	u, err := url.Parse(s)
	if err != nil || !slices.Contains(schemes, u.Scheme) || u.Host == "" {
		d.fail(n, "%s: want an absolute %s URL, got %q", field, strings.Join(schemes, " or "), s)
		return "", false
	}
	return s, true
}

// policy reads tool_policy: default and the ordered rules, each
// {allow: {match}} or {deny: {match}, reason}.
func (d *decoder) policy(n *yaml.Node) {
	es, ok := d.r.Mapping(n, "tool_policy")
	if !ok {
		return
	}
	for _, e := range es {
		switch e.Key {
		case "default":
			if s, ok := d.r.String(e.Value, "tool_policy.default"); ok {
				if s != agent.Allow && s != agent.Deny {
					d.fail(e.Value, "tool_policy.default: want allow or deny, got %q", s)
				} else {
					d.p.Policy.Default = s
				}
			}
		case "rules":
			items, ok := d.r.List(e.Value, "tool_policy.rules")
			if !ok {
				continue
			}
			if len(items) > MaxRules {
				d.fail(e.Value, "tool_policy.rules: %d rules, more than %d", len(items), MaxRules)
				continue
			}
			for i, it := range items {
				where := fmt.Sprintf("tool_policy.rules[%d]", i)
				if r, ok := d.rule(it, where); ok {
					d.p.Policy.Rules = append(d.p.Policy.Rules, r)
					d.rules = append(d.rules, where)
				}
			}
		default:
			d.unknown(e, "tool_policy", policyFields)
		}
	}
}

func (d *decoder) rule(n *yaml.Node, where string) (agent.Rule, bool) {
	d.note(where, n)
	var r agent.Rule
	es, ok := d.r.Mapping(n, where)
	if !ok {
		return r, false
	}
	var actions []string
	var match *yaml.Node
	good := true
	for _, e := range es {
		switch e.Key {
		case agent.Allow, agent.Deny, "require_approval":
			actions = append(actions, e.Key)
			match = e.Value
			r.Effect = e.Key
		case "reason":
			if s, ok := d.r.String(e.Value, where+".reason"); ok {
				r.Reason = s
			} else {
				good = false
			}
		default:
			d.unknown(e, where, ruleFields)
			good = false
		}
	}
	switch {
	case len(actions) != 1:
		d.fail(n, "%s: a rule has exactly one of allow or deny, got %s", where, describe(actions))
		return r, false
	case r.Effect == "require_approval":
		d.fail(n, "%s: require_approval is not supported: a rule allows or denies", where)
		return r, false
	case r.Effect == agent.Deny && strings.TrimSpace(r.Reason) == "":
		d.fail(n, "%s: a deny rule needs a reason: the model is told it, and the step record keeps it", where)
		good = false
	}
	mwhere := where + "." + r.Effect
	if yamlread.IsNull(match) {
		return r, good // allow: / deny: alone matches every call
	}
	ms, ok := d.r.Mapping(match, mwhere)
	if !ok {
		return r, false
	}
	for _, m := range ms {
		key := mwhere + "." + m.Key
		s, ok := d.r.String(m.Value, key)
		if !ok {
			good = false
			continue
		}
		switch m.Key {
		case "server":
			r.Server = s
			d.note(key, m.Value)
		case "tool":
			r.Tool = s
			if err := agent.CheckGlob(s); err != nil {
				d.fail(m.Value, "%s: %v", key, err)
				good = false
			}
		case "agent":
			r.Agent = s
			if err := agent.CheckGlob(s); err != nil {
				d.fail(m.Value, "%s: %v", key, err)
				good = false
			}
		case "input_regex":
			r.InputRegex = s
			if len(s) > MaxRegexLength {
				d.fail(m.Value, "%s: %d characters, more than %d", key, len(s), MaxRegexLength)
				good = false
			} else if _, err := regexp.Compile(s); err != nil {
				d.fail(m.Value, "%s: not an RE2 regular expression: %v", key, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
				good = false
			}
		default:
			d.unknown(m, mwhere, matchFields)
			good = false
		}
	}
	return r, good
}

func describe(actions []string) string {
	if len(actions) == 0 {
		return "none"
	}
	return strings.Join(actions, " and ")
}

// executors reads executors: openai, gateway, openclaw.
func (d *decoder) executors(n *yaml.Node) {
	es, ok := d.r.Mapping(n, "executors")
	if !ok {
		return
	}
	x := &d.p.Executors
	for _, e := range es {
		where := "executors." + e.Key
		fields, known := executorFields[e.Key]
		if !known {
			d.unknown(e, "executors", []string{"gateway", "openai", "openclaw"})
			continue
		}
		fs, ok := d.r.Mapping(e.Value, where)
		if !ok {
			continue
		}
		for _, f := range fs {
			key := where + "." + f.Key
			switch e.Key + "." + f.Key {
			case "openai.base_url":
				x.OpenAI.BaseURL, _ = d.url(f.Value, key, "http", "https")
			case "openai.api_key":
				x.OpenAI.APIKey, _ = d.secretRef(f.Value, key, true)
			case "gateway.url":
				x.Gateway.URL, _ = d.url(f.Value, key, "http", "https", "ws", "wss")
			case "gateway.token":
				x.Gateway.Token, _ = d.secretRef(f.Value, key, false)
			case "openclaw.url":
				x.OpenClaw.URL, _ = d.url(f.Value, key, "http", "https", "ws", "wss")
			case "openclaw.identity":
				if id, ok := d.r.NonEmpty(f.Value, key); ok && strings.Contains(id, "${") {
					d.fail(f.Value, "%s: a directory holding device.json and device-auth.json, read by local runs; where no directory is read (on AWS) the identity is the secrets %s and %s", key, OpenClawDeviceSecret, OpenClawDeviceAuthSecret)
				} else {
					x.OpenClaw.Identity = id
				}
			default:
				d.unknown(f, where, fields)
			}
		}
	}
}
