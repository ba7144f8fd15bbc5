package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

// TimeoutSeconds is the timeout_seconds a rewritten step gets when its
// script makes a call time out: the box's side of a scripted timeout is a
// call the fake holds open until the step gives up.
const TimeoutSeconds = 2

// Variant is a pipeline rewritten for the box, and what the box needs to
// run it.
type Variant struct {
	YAML    []byte
	Secrets []string // the ${NAME} secrets the pipeline names, sorted
	// Providers maps each provider of the project that an agent step
	// calls through its provider route (Fake.ProviderURL) to the keys of
	// the steps whose agents call it (see Script.SetRoutes).
	Providers map[string][]string
}

var secretRef = regexp.MustCompile(`\$?\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Rewrite returns the box variant of a pipeline: every call it makes goes
// to the fake (see Fake), for scenario id, and nothing else changes, so
// that the same file runs through `stepline run --responses` (where every
// executor is scripted and the endpoints are never called) and through
// the box (where the real executors call the fake, which answers from the
// same responses). Per step, with key the step's responses key:
//
//	gateway    executor_config.base_url = <fake>/s/<id>/m/<key>/v1
//	anthropic  executor_config.base_url = <fake>/s/<id>/m/<key>
//	bedrock    executor_config.model    = <model>~<id>~<key> (the step function's
//	           Bedrock endpoint is the fake)
//	webhook, notify
//	           executor_config.url      = <fake>/s/<id>/h/<key>
//	human, pipeline                     unchanged
//
// A grounding judge's key is "<key>:grounding" (see rewriter.judge) and
// a webhook check's url is <fake>/s/<id>/h/<key>:check:<name>.
// A fan-out's key is "<name>/{{ fan_out_index }}" (a gateway fan-out
// without api_key gets api_key: "", which a templated base_url requires);
// a verifier's is "<key>:verifier". Failure webhooks and notification
// URLs go to <fake>/s/<id>/n/...: locally, scripted runs send neither.
// A step whose scripted replies include a timeout gets timeout_seconds
// TimeoutSeconds (and a webhook's executor_config.timeout_seconds too),
// so that the box's call times out in seconds; the local run's scripted
// timeout fails at once either way.
//
// An agent step (executor_config.agent) is resolved against proj, the
// project that governs the pipeline (RewriteProject points its MCP
// servers and providers at the fake), and its models are placed by where
// they are called:
//
//   - a model written without a provider goes through the step's
//     transport: a gateway or anthropic step gets its base_url as above
//     (only then: a step whose models all name their provider keeps its
//     executor_config);
//   - a first model on Bedrock is named to the fake as a bedrock step's
//     is: executor_config.model = <the step's model, else the profile's>~<id>~<key>;
//   - a model of a project's provider (anthropic/…, openai/…, one the
//     project declares) goes to the scenario's route of that provider,
//     and Variant.Providers tells the fake which step it serves.
//
// A step, branch or fan-out that names a library step (use:) is
// rewritten as the step it resolves to, and what changed is written as
// its own keys over the library's (see rewriter.use).
//
// A Bedrock fallback model cannot be named to the fake (the fake answers
// it 400). Agent fan-outs, agents on a remote runtime and agents needing
// a stdio MCP server have no box counterpart: an error, as are other
// executors (openclaw, scripted).
func Rewrite(src []byte, id string, fake *Fake, script *Script, proj *project.Project) (Variant, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return Variant{}, fmt.Errorf("rewrite: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return Variant{}, fmt.Errorf("rewrite: not a pipeline mapping")
	}
	rw := rewriter{id: id, fake: fake, script: script, proj: proj, providers: map[string][]string{}}
	root := doc.Content[0]
	if steps := mapGet(root, "steps"); steps != nil {
		for _, entry := range steps.Content {
			if err := rw.entry(entry); err != nil {
				return Variant{}, err
			}
		}
	}
	if n := mapGet(root, "notifications"); n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			action, list := n.Content[i].Value, n.Content[i+1]
			items := []*yaml.Node{list}
			if list.Kind == yaml.SequenceNode {
				items = list.Content
			}
			for _, it := range items {
				if cfg := mapGet(it, "config"); cfg != nil && mapGet(cfg, "url") != nil {
					mapSet(cfg, "url", fake.Base(id)+"/n/notification-"+action)
				}
			}
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return Variant{}, fmt.Errorf("rewrite: %w", err)
	}
	v := Variant{YAML: out, Secrets: secretNames(src)}
	if len(rw.providers) > 0 {
		v.Providers = rw.providers
	}
	return v, nil
}

// secretNames are the ${NAME} secrets src names ($${NAME} is no
// reference), sorted.
func secretNames(src []byte) []string {
	seen := map[string]bool{}
	for _, m := range secretRef.FindAllStringSubmatch(string(src), -1) {
		if !strings.HasPrefix(m[0], "$$") {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

type rewriter struct {
	id        string
	fake      *Fake
	script    *Script
	proj      *project.Project
	providers map[string][]string // see Variant.Providers
}

func (rw rewriter) entry(n *yaml.Node) error {
	if p := mapGet(n, "parallel"); p != nil {
		if steps := mapGet(p, "steps"); steps != nil {
			for _, b := range steps.Content {
				if err := rw.step(b, false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if f := mapGet(n, "fan_out"); f != nil {
		return rw.step(f, true)
	}
	return rw.step(n, false)
}

// step rewrites a step, branch or fan-out, written out or named from the
// step library (use:).
func (rw rewriter) step(n *yaml.Node, fanOut bool) error {
	if mapGet(n, "use") != nil {
		return rw.use(n, fanOut)
	}
	return rw.unit(n, unitKey(mapValue(n, "name"), fanOut), fanOut)
}

// unitKey is the responses key of a step, branch or fan-out named name.
func unitKey(name string, fanOut bool) string {
	if fanOut {
		return name + "/{{ fan_out_index }}"
	}
	return name
}

// use rewrites an entry that names a library step (use:): the library
// step (its file's mapping, less description and tags) with the entry's
// keys over it, as the compiler merges them (a local key replaces the
// library's, executor_config merges at every depth), is rewritten as any
// step would be, and what the rewrite changed is written back into the
// entry: each changed key of executor_config (merged over the
// library's), any other changed key whole. The library's file is left
// as it is.
func (rw rewriter) use(n *yaml.Node, fanOut bool) error {
	name := mapValue(n, "use")
	base, err := rw.libraryStep(name)
	if err != nil {
		return err
	}
	eff := cloneNode(mergeStep(base, n))
	before := map[string]*yaml.Node{}
	for i := 0; i+1 < len(eff.Content); i += 2 {
		before[eff.Content[i].Value] = cloneNode(eff.Content[i+1])
	}
	if err := rw.unit(eff, unitKey(mapValue(eff, "name"), fanOut), fanOut); err != nil {
		return err
	}
	for i := 0; i+1 < len(eff.Content); i += 2 {
		k, v := eff.Content[i].Value, eff.Content[i+1]
		was := before[k]
		if sameNode(v, was) {
			continue
		}
		if k != "executor_config" || was == nil || was.Kind != yaml.MappingNode || v.Kind != yaml.MappingNode {
			mapPut(n, k, v)
			continue
		}
		local := configOf(n)
		for j := 0; j+1 < len(v.Content); j += 2 {
			if ck, cv := v.Content[j].Value, v.Content[j+1]; !sameNode(cv, mapGet(was, ck)) {
				mapPut(local, ck, cv)
			}
		}
	}
	return nil
}

// libraryStep is the mapping of library step name, from the project's
// step library, less its description and tags.
func (rw rewriter) libraryStep(name string) (*yaml.Node, error) {
	if rw.proj == nil {
		return nil, fmt.Errorf("rewrite: use: %q names a library step, but no stepline.yaml governs the pipeline", name)
	}
	for _, f := range rw.proj.StepFiles {
		var doc yaml.Node
		if err := yaml.Unmarshal(f.Src, &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode || mapValue(root, "name") != name {
			continue
		}
		out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for i := 0; i+1 < len(root.Content); i += 2 {
			if k := root.Content[i].Value; k != "description" && k != "tags" {
				out.Content = append(out.Content, root.Content[i], root.Content[i+1])
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("rewrite: use: no library step %q in %s", name, rw.proj.Steps)
}

// mergeStep is base with entry's keys over it, as the compiler resolves
// use: (a local key replaces base's, executor_config mappings merge at
// every depth; use is left out).
func mergeStep(base, entry *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(base.Content); i += 2 {
		k, v := base.Content[i], base.Content[i+1]
		switch local := mapGet(entry, k.Value); {
		case local == nil:
		case k.Value == "executor_config":
			v = mergeMappings(v, local)
		default:
			v = local
		}
		out.Content = append(out.Content, k, v)
	}
	for i := 0; i+1 < len(entry.Content); i += 2 {
		if k := entry.Content[i]; k.Value != "use" && mapGet(base, k.Value) == nil {
			out.Content = append(out.Content, k, entry.Content[i+1])
		}
	}
	return out
}

// mergeMappings merges over into base at every depth: mappings under the
// same key merge, any other value of over replaces base's.
func mergeMappings(base, over *yaml.Node) *yaml.Node {
	if base == nil || over == nil || base.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode {
		return over
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: over.Style}
	for i := 0; i+1 < len(base.Content); i += 2 {
		k, v := base.Content[i], base.Content[i+1]
		if o := mapGet(over, k.Value); o != nil {
			v = mergeMappings(v, o)
		}
		out.Content = append(out.Content, k, v)
	}
	for i := 0; i+1 < len(over.Content); i += 2 {
		if k := over.Content[i]; mapGet(base, k.Value) == nil {
			out.Content = append(out.Content, k, over.Content[i+1])
		}
	}
	return out
}

// cloneNode copies a YAML tree (an alias keeps pointing at its anchor).
func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = cloneNode(x)
	}
	return &c
}

// sameNode reports whether two YAML values are written the same.
func sameNode(a, b *yaml.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, errA := yaml.Marshal(a)
	y, errB := yaml.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

// unit rewrites one step, branch or fan-out (whose key is a template),
// written out.
func (rw rewriter) unit(n *yaml.Node, key string, fanOut bool) error {
	if err := rw.executor(n, key, fanOut); err != nil {
		return err
	}
	if v := mapGet(n, "verifier"); v != nil {
		if err := rw.executor(v, key+":verifier", fanOut); err != nil {
			return err
		}
	}
	if g := mapGet(n, "grounding"); g != nil && g.Kind == yaml.MappingNode {
		if err := rw.judge(g, key); err != nil {
			return err
		}
	}
	if cs := mapGet(n, "deterministic_checks"); cs != nil && cs.Kind == yaml.SequenceNode {
		for _, c := range cs.Content {
			if mapValue(c, "type") == "webhook" {
				mapSet(c, "url", rw.fake.Base(rw.id)+"/h/"+key+":check:"+mapValue(c, "name"))
			}
		}
	}
	if f := mapGet(n, "on_failure"); f != nil && f.Kind == yaml.MappingNode {
		if hook := mapGet(f, "webhook"); hook != nil {
			mapSet(hook, "url", rw.fake.Base(rw.id)+"/n/failure-"+strings.ReplaceAll(key, "/{{ fan_out_index }}", ""))
		}
	}
	if rw.timesOut(key) {
		mapSet(n, "timeout_seconds", fmt.Sprint(TimeoutSeconds)).Tag = "!!int"
		if e := mapValue(n, "executor"); e == "webhook" || e == "notify" {
			mapSet(configOf(n), "timeout_seconds", fmt.Sprint(TimeoutSeconds)).Tag = "!!int"
		}
	}
	return nil
}

// timesOut reports whether a reply of key (any item of a fan-out) scripts
// a timeout.
func (rw rewriter) timesOut(key string) bool {
	if rw.script == nil {
		return false
	}
	prefix, fan := strings.CutSuffix(key, "/{{ fan_out_index }}")
	for _, k := range rw.script.Keys() {
		match := k == key || k == key+":verifier"
		if fan {
			rest, ok := strings.CutPrefix(k, prefix+"/")
			rest, _ = strings.CutSuffix(rest, ":verifier")
			match = ok && rest != "" && strings.Trim(rest, "0123456789") == ""
		}
		if !match {
			continue
		}
		for _, r := range rw.script.Replies(k) {
			if r.Timeout() {
				return true
			}
		}
	}
	return false
}

func (rw rewriter) executor(n *yaml.Node, key string, fanOut bool) error {
	base := rw.fake.Base(rw.id)
	e := mapValue(n, "executor")
	if cfg := mapGet(n, "executor_config"); cfg != nil && mapGet(cfg, "agent") != nil {
		switch e {
		case "gateway", "anthropic", "bedrock":
			return rw.agent(n, key, e, fanOut)
		}
	}
	switch e {
	case "gateway":
		cfg := configOf(n)
		mapSet(cfg, "base_url", base+"/m/"+key+"/v1")
		if fanOut && mapGet(cfg, "api_key") == nil {
			mapSet(cfg, "api_key", "")
		}
	case "anthropic":
		mapSet(configOf(n), "base_url", base+"/m/"+key)
	case "bedrock":
		if fanOut {
			return fmt.Errorf("rewrite: fan-out %q: a bedrock fan-out cannot name each item to the fake (its model cannot be a template)", key)
		}
		cfg := configOf(n)
		mapSet(cfg, "model", BedrockModel(mapValue(cfg, "model"), rw.id, key))
	case "webhook", "notify":
		mapSet(configOf(n), "url", base+"/h/"+key)
	case "human", "pipeline":
	default:
		return fmt.Errorf("rewrite: step %q: the box has no counterpart of executor %q", key, e)
	}
	return nil
}

// judge points a step's grounding judge at the fake, under the key
// "<key>:grounding" (the responses file's key for the judge). Its model
// is the judge profile's, written without its provider, so that the call
// goes through the block's transport (grounding.executor, gateway by
// default), whose base_url is the key's route: a judge whose model names
// a project's provider would share that provider's route with the step's
// own agent, and the fake could not tell their calls apart. On Bedrock
// the model is named to the fake as a bedrock step's is.
func (rw rewriter) judge(g *yaml.Node, key string) error {
	if rw.proj == nil {
		return fmt.Errorf("rewrite: step %q has a grounding judge, but no stepline.yaml governs the pipeline", key)
	}
	name, executor := mapValue(g, "agent"), mapValue(g, "executor")
	if name == "" {
		name = pipeline.DefaultGroundingAgent
	}
	if executor == "" {
		executor = pipeline.DefaultGroundingExecutor
	}
	cfgNode := configOf(g)
	cfg := map[string]any{}
	if err := cfgNode.Decode(&cfg); err != nil {
		return fmt.Errorf("rewrite: step %q: grounding.executor_config: %w", key, err)
	}
	model, _ := cfg["model"].(string)
	if model == "" {
		cfg["agent"] = name
		r, _ := rw.proj.Resolve(executor, cfg)
		if r == nil {
			return fmt.Errorf("rewrite: step %q: grounding judge %q does not resolve", key, name)
		}
		model = r.Profile.Model
	}
	_, bare, _ := agent.SplitModel(model)
	base, judgeKey := rw.fake.Base(rw.id), key+":grounding"
	switch executor {
	case agent.APIGateway:
		mapSet(cfgNode, "model", bare)
		mapSet(cfgNode, "base_url", base+"/m/"+judgeKey+"/v1")
	case agent.APIAnthropic:
		mapSet(cfgNode, "model", bare)
		mapSet(cfgNode, "base_url", base+"/m/"+judgeKey)
	case agent.APIBedrock:
		mapSet(cfgNode, "model", BedrockModel(bare, rw.id, judgeKey))
	default:
		return fmt.Errorf("rewrite: step %q: the box has no counterpart of a grounding judge on %q", key, executor)
	}
	return nil
}

// agent rewrites an agent step on executor (gateway, anthropic or
// bedrock): see Rewrite.
func (rw rewriter) agent(n *yaml.Node, key, executor string, fanOut bool) error {
	if fanOut {
		return fmt.Errorf("rewrite: fan-out %q: an agent fan-out cannot name each item to the fake (its agent's endpoints are not templates)", key)
	}
	if rw.proj == nil {
		return fmt.Errorf("rewrite: step %q runs an agent, but no stepline.yaml governs the pipeline", key)
	}
	cfgNode := configOf(n)
	var cfg map[string]any
	if err := cfgNode.Decode(&cfg); err != nil {
		return fmt.Errorf("rewrite: step %q: executor_config: %w", key, err)
	}
	r, issues := rw.proj.Resolve(executor, cfg)
	if r == nil {
		msgs := make([]string, 0, len(issues))
		for _, is := range issues {
			if !is.Warning {
				msgs = append(msgs, is.String())
			}
		}
		return fmt.Errorf("rewrite: step %q: %s", key, strings.Join(msgs, "; "))
	}
	if r.Remote != nil {
		return fmt.Errorf("rewrite: step %q: agent %q runs on a remote %s runtime, which the box has no counterpart of", key, r.Profile.Name, r.Remote.Runtime)
	}
	servers := make([]string, 0, len(r.Servers))
	for name := range r.Servers {
		servers = append(servers, name)
	}
	sort.Strings(servers)
	for _, name := range servers {
		if r.Servers[name].IsStdio() {
			return fmt.Errorf("rewrite: step %q: agent %q needs MCP server %q, which runs a command (stdio): the step function starts none", key, r.Profile.Name, name)
		}
	}
	// The model strings Resolve placed, in its order: the step's model or
	// the profile's, then the fallbacks (empty ones skipped).
	first := r.Profile.Model
	if m, ok := cfg["model"].(string); ok && m != "" {
		first = m
	}
	var written []string
	for _, m := range append([]string{first}, r.Profile.ModelFallbacks...) {
		if m != "" {
			written = append(written, m)
		}
	}
	if len(written) != len(r.Models) {
		return fmt.Errorf("rewrite: step %q: agent %q resolves %d models from %d", key, r.Profile.Name, len(r.Models), len(written))
	}
	transport := false
	for i, ep := range r.Models {
		if _, _, open := agent.SplitModel(written[i]); open {
			transport = true
			continue
		}
		if ep.API == agent.APIGateway || ep.API == agent.APIAnthropic {
			if !slices.Contains(rw.providers[ep.Provider], key) {
				rw.providers[ep.Provider] = append(rw.providers[ep.Provider], key)
			}
		}
	}
	base := rw.fake.Base(rw.id)
	switch {
	case transport && executor == agent.APIGateway:
		mapSet(cfgNode, "base_url", base+"/m/"+key+"/v1")
	case transport && executor == agent.APIAnthropic:
		mapSet(cfgNode, "base_url", base+"/m/"+key)
	}
	if r.Models[0].API == agent.APIBedrock {
		mapSet(cfgNode, "model", BedrockModel(first, rw.id, key))
	}
	return nil
}

// RewriteProject returns the box variant of the project file src, loaded
// as proj, for scenario id, to be written beside the scenario's rewritten
// pipelines (where `stepline compile` and `stepline run` find it): every
// streamable HTTP MCP server's url is the scenario's fake MCP server
// (Fake.MCPURL), every provider that speaks the OpenAI-compatible or the
// Anthropic API (the built-in ones too) gets the scenario's provider
// route as its base_url (Fake.ProviderURL), and the pipelines, agents and
// steps directories are written out as proj placed them, so that the
// agents' profiles, and so their versions, are the original ones.
// Nothing else changes: headers (and their ${NAME} secrets), API keys,
// Bedrock's region, the tool policy, executors.
func RewriteProject(src []byte, proj *project.Project, id string, fake *Fake) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("rewrite project: %w", err)
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("rewrite project: not a mapping")
	}
	root := doc.Content[0]
	for _, d := range []struct{ key, dir string }{{"pipelines", proj.Pipelines}, {"agents", proj.Agents}, {"steps", proj.Steps}} {
		abs, err := filepath.Abs(d.dir)
		if err != nil {
			return nil, fmt.Errorf("rewrite project: %s: %w", d.key, err)
		}
		mapSet(root, d.key, abs)
	}
	if servers := mapGet(root, "mcp_servers"); servers != nil && servers.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(servers.Content); i += 2 {
			name, s := servers.Content[i].Value, servers.Content[i+1]
			if mapGet(s, "url") != nil {
				mapSet(s, "url", fake.MCPURL(id, name))
			}
		}
	}
	var routed []string
	for _, name := range proj.Providers.Names() {
		if api := proj.Providers[name].API; api == agent.APIGateway || api == agent.APIAnthropic {
			routed = append(routed, name)
		}
	}
	if len(routed) > 0 {
		providers := mapGet(root, "providers")
		if providers == nil || providers.Kind != yaml.MappingNode {
			providers = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			mapPut(root, "providers", providers)
		}
		for _, name := range routed {
			p := mapGet(providers, name)
			if p == nil || p.Kind != yaml.MappingNode {
				p = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				mapPut(providers, name, p)
			}
			mapSet(p, "base_url", fake.ProviderURL(id, name, proj.Providers[name].API))
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("rewrite project: %w", err)
	}
	return out, nil
}

// configOf returns n's executor_config mapping, adding an empty one.
func configOf(n *yaml.Node) *yaml.Node {
	if c := mapGet(n, "executor_config"); c != nil && c.Kind == yaml.MappingNode {
		return c
	}
	c := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	mapPut(n, "executor_config", c)
	return c
}

func mapGet(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func mapValue(n *yaml.Node, key string) string {
	if v := mapGet(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// mapSet sets key to the string value and returns the value's node.
func mapSet(n *yaml.Node, key, value string) *yaml.Node {
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	mapPut(n, key, v)
	return v
}

func mapPut(n *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content[i+1] = v
			return
		}
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func yamlUnmarshal(src []byte, v any) error { return yaml.Unmarshal(src, v) }
