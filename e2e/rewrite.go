package e2e

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
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
// A fan-out's key is "<name>/{{ fan_out_index }}" (a gateway fan-out
// without api_key gets api_key: "", which a templated base_url requires);
// a verifier's is "<key>:verifier". Failure webhooks and notification
// URLs go to <fake>/s/<id>/n/...: locally, scripted runs send neither.
// A step whose scripted replies include a timeout gets timeout_seconds
// TimeoutSeconds (and a webhook's executor_config.timeout_seconds too),
// so that the box's call times out in seconds; the local run's scripted
// timeout fails at once either way.
//
// Other executors (openclaw, scripted) have no box counterpart: an error.
func Rewrite(src []byte, id string, fake *Fake, script *Script) (Variant, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return Variant{}, fmt.Errorf("rewrite: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return Variant{}, fmt.Errorf("rewrite: not a pipeline mapping")
	}
	rw := rewriter{id: id, fake: fake, script: script}
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
	seen := map[string]bool{}
	for _, m := range secretRef.FindAllStringSubmatch(string(src), -1) {
		if !strings.HasPrefix(m[0], "$$") {
			seen[m[1]] = true
		}
	}
	v := Variant{YAML: out}
	for s := range seen {
		v.Secrets = append(v.Secrets, s)
	}
	sort.Strings(v.Secrets)
	return v, nil
}

type rewriter struct {
	id     string
	fake   *Fake
	script *Script
}

func (rw rewriter) entry(n *yaml.Node) error {
	if p := mapGet(n, "parallel"); p != nil {
		if steps := mapGet(p, "steps"); steps != nil {
			for _, b := range steps.Content {
				if err := rw.unit(b, mapValue(b, "name"), false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if f := mapGet(n, "fan_out"); f != nil {
		return rw.unit(f, mapValue(f, "name")+"/{{ fan_out_index }}", true)
	}
	return rw.unit(n, mapValue(n, "name"), false)
}

// unit rewrites one step, branch or fan-out (whose key is a template).
func (rw rewriter) unit(n *yaml.Node, key string, fanOut bool) error {
	if err := rw.executor(n, key, fanOut); err != nil {
		return err
	}
	if v := mapGet(n, "verifier"); v != nil {
		if err := rw.executor(v, key+":verifier", fanOut); err != nil {
			return err
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
	switch e := mapValue(n, "executor"); e {
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
