package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/project"
)

// agentInfo is one agent as `stepline agents --json` prints it.
type agentInfo struct {
	Name           string            `json:"name"`
	Description    string            `json:"description,omitempty"`
	Version        string            `json:"version"`
	Model          string            `json:"model"`
	ModelFallbacks []string          `json:"model_fallbacks,omitempty"`
	ThinkingLevel  string            `json:"thinking_level,omitempty"`
	Tools          []agent.ToolGrant `json:"tools"`
	Path           string            `json:"path"` // its agent.yaml
	// Runs says where its steps run it: project.RunsInProcess, for a
	// profile of the project (which wins over a remote gateway).
	Runs string `json:"runs"`
}

// cmdAgents lists the project's agent profiles: name, version, model,
// tools and where they run, then the remote runtimes that serve the
// agents the project has no profile of. The project is --config or the
// stepline.yaml found walking up from the working directory. Its problems
// (of stepline.yaml and of each profile) go to stderr, and an error makes
// the exit code 1, after the list.
func cmdAgents(c *cobra.Command) action {
	fs := c.Flags()
	config := fs.String("config", "", "the project file (stepline.yaml); default: the first found walking up from the working directory")
	asJSON := fs.Bool("json", false, "print the agents as a JSON array")
	return func(_ context.Context, e env, _ []string) int { return agents(e, *config, *asJSON) }
}

func agents(e env, config string, asJSON bool) int {
	path := config
	if path == "" {
		var err error
		if path, err = project.Find("."); err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		if path == "" {
			fmt.Fprintf(e.stderr, "stepline: no %s here or above: agents belong to a project (give --config FILE)\n", project.FileName)
			return exitFailed
		}
	}
	p, err := project.Load(path)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	infos := make([]agentInfo, 0, len(p.Profiles))
	for _, name := range p.AgentNames() {
		l := p.Profiles[name]
		pr := l.Profile
		tools := pr.Tools
		if tools == nil {
			tools = []agent.ToolGrant{}
		}
		infos = append(infos, agentInfo{Name: pr.Name, Description: pr.Description, Version: pr.Version, Model: pr.Model,
			ModelFallbacks: pr.ModelFallbacks, ThinkingLevel: pr.ThinkingLevel, Tools: tools, Path: l.Path, Runs: project.RunsInProcess})
	}
	fmt.Fprint(e.stderr, p.Diagnostics.String())
	if asJSON {
		b, _ := json.MarshalIndent(infos, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else if len(infos) == 0 {
		fmt.Fprintf(e.stdout, "no agents in %s\n", p.Agents)
	} else {
		w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tVERSION\tMODEL\tTOOLS\tRUNS")
		for _, a := range infos {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", a.Name, a.Version, a.Model, toolsText(a.Tools), a.Runs)
		}
		_ = w.Flush()
	}
	if !asJSON {
		for _, line := range remoteRuntimes(p) {
			fmt.Fprintln(e.stdout, line)
		}
	}
	if p.Diagnostics.HasErrors() {
		return exitFailed
	}
	return exitOK
}

// toolsText writes grants as "grafana[query_*,search], runbooks", "-"
// for none.
func toolsText(gs []agent.ToolGrant) string {
	if len(gs) == 0 {
		return "-"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.Server
		if len(g.Tools) > 0 {
			parts[i] += "[" + strings.Join(g.Tools, ",") + "]"
		}
	}
	return strings.Join(parts, ", ")
}

// remoteRuntimes says which remote runtimes the project names and which
// agents they serve, by the project's rule (project.Runtime).
func remoteRuntimes(p *project.Project) []string {
	var out []string
	if u := p.RuntimeURL(project.RunsGateway); u != "" {
		what := "every agent"
		if len(p.Profiles) > 0 {
			what = "any agent not listed above (a profile of the project wins)"
		}
		out = append(out, fmt.Sprintf("gateway steps naming %s run on the remote agent gateway at %s (executors.gateway)", what, u))
	}
	if u := p.RuntimeURL(project.RunsOpenClaw); u != "" {
		out = append(out, fmt.Sprintf("openclaw steps run their agent on the OpenClaw gateway at %s, as device %s (executors.openclaw)", u, p.OpenClawIdentity()))
	}
	return out
}
