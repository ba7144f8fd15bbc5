package agent

import (
	"slices"
	"strconv"
	"strings"
)

// CheckProfile checks a loaded profile against its project: the
// providers its models name (and the temperature their APIs take), the
// MCP servers its tools name, and, as warnings, grants the tool policy
// never lets a call through.
func CheckProfile(l *Loaded, providers Providers, servers map[string]Server, policy Policy) Diagnostics {
	var ds Diagnostics
	p := l.Profile
	models := map[string]string{"model": p.Model}
	for i, m := range p.ModelFallbacks {
		models[fallbackKey(i)] = m
	}
	keys := make([]string, 0, len(models))
	for k := range models {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		m := models[key]
		if m == "" {
			continue
		}
		e, err := providers.Resolve(m, Endpoint{})
		if err != nil {
			ds.Errorf(l.At(key), "%s: %v", key, err)
			continue
		}
		if t := p.Temperature; t != nil && e.API != "" && *t > TemperatureMax(e.API) {
			ds.Errorf(l.At("temperature"), "temperature: %g is above %g, the most the %s API takes (%s %q)", *t, TemperatureMax(e.API), e.API, key, m)
		}
	}
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, g := range p.Tools {
		at := l.At("tools." + g.Server)
		if _, ok := servers[g.Server]; !ok {
			if len(names) == 0 {
				ds.Errorf(at, "tools: unknown MCP server %q: stepline.yaml declares no mcp_servers", g.Server)
			} else {
				ds.Errorf(at, "tools: unknown MCP server %q%s (declared: %s)", g.Server, DidYouMean(g.Server, names), strings.Join(names, ", "))
			}
			continue
		}
		if !policy.MayAllow(p.Name, g.Server, "") {
			ds.Warnf(at, "tools: the tool policy never allows agent %q a call to server %q: every call it makes there is denied", p.Name, g.Server)
			continue
		}
		for i, glob := range g.Tools {
			if literal(glob) && !policy.MayAllow(p.Name, g.Server, glob) {
				ds.Warnf(l.At(globKey(g.Server, i)), "tools: the tool policy never allows agent %q a call to %s.%s", p.Name, g.Server, glob)
			}
		}
	}
	return ds.Sort()
}

func fallbackKey(i int) string { return "model_fallbacks[" + strconv.Itoa(i) + "]" }

func globKey(server string, i int) string { return "tools." + server + "[" + strconv.Itoa(i) + "]" }

// literal reports whether a glob names one tool.
func literal(glob string) bool { return !strings.ContainsAny(glob, "*?[") }
