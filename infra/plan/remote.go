package plan

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/pipeline"
)

// unreachableAgents reports each step whose agent runs on a remote
// runtime the step function cannot reach: one stepline.yaml does not
// configure (every run of the step would fail), or one at a loopback
// address (the function's loopback is its own). A URL written with a
// ${NAME} reference is resolved where the step runs and not checked.
func unreachableAgents(m *pipeline.Pipeline) compiler.Diagnostics {
	var ds compiler.Diagnostics
	agents(m, func(where string, at pipeline.Pos, r *agent.Resolved) {
		rt := r.Remote
		if rt == nil {
			return
		}
		setting := "executors." + rt.Runtime + ".url"
		switch {
		case rt.URL == "":
			ds = append(ds, compiler.Diagnostic{Pos: at, Msg: fmt.Sprintf(
				"%s: agent %q runs on the %s runtime, which stepline.yaml does not configure: set %s to deploy this pipeline", where, r.Profile.Name, rt.Runtime, setting)})
		case loopback(rt.URL):
			ds = append(ds, compiler.Diagnostic{Pos: at, Msg: fmt.Sprintf(
				"%s: agent %q runs on the %s runtime at %s, a loopback address the step function cannot reach: give %s an address it reaches (a public wss:// endpoint, or one inside the VPC the function runs in)",
				where, r.Profile.Name, rt.Runtime, rt.URL, setting)})
		}
	})
	return ds.Sort()
}

// loopback reports whether u's host is a loopback name or address.
func loopback(u string) bool {
	if strings.Contains(u, "${") {
		return false
	}
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	host := strings.ToLower(p.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
