package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/project"
)

// stepInfo is one library step as `stepline steps --json` prints it.
type stepInfo struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Tags        []string  `json:"tags"`
	Executor    string    `json:"executor"`
	Path        string    `json:"path"` // its file
	UsedBy      []stepUse `json:"used_by"`
}

// stepUse is one use of a library step by a pipeline of the project.
type stepUse struct {
	Pipeline string `json:"pipeline"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Kind     string `json:"kind"` // step, branch or fan_out
	As       string `json:"as"`   // the step's name in the pipeline
}

// cmdSteps lists the project's step library: each step's name,
// executor, tags, the pipelines of the project that use it and its
// description. The project is --config or the stepline.yaml found
// walking up from the working directory. Its problems (of stepline.yaml,
// its profiles, and each library file checked on its own) go to stderr,
// and an error makes the exit code 1, after the list.
func cmdSteps(c *cobra.Command) action {
	fs := c.Flags()
	config := fs.String("config", "", "the project file (stepline.yaml); default: the first found walking up from the working directory")
	asJSON := fs.Bool("json", false, "print the steps as a JSON array")
	return func(_ context.Context, e env, _ []string) int { return steps(e, *config, *asJSON) }
}

func steps(e env, config string, asJSON bool) int {
	path := config
	if path == "" {
		var err error
		if path, err = project.Find("."); err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		if path == "" {
			fmt.Fprintf(e.stderr, "stepline: no %s here or above: the step library belongs to a project (give --config FILE)\n", project.FileName)
			return exitFailed
		}
	}
	p, err := project.Load(path)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defaults := settings.DefaultsFromEnv(e.getenv)
	lib := gate.Library(p, defaults)
	uses, err := libraryUses(p, defaults)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	infos := make([]stepInfo, 0)
	for _, ls := range lib.Steps() {
		info := stepInfo{Name: ls.Name, Description: ls.Description, Tags: ls.Tags, Path: ls.Path, UsedBy: uses[ls.Name]}
		if ls.Step != nil {
			info.Executor = ls.Step.Executor
		}
		if info.Tags == nil {
			info.Tags = []string{}
		}
		if info.UsedBy == nil {
			info.UsedBy = []stepUse{}
		}
		infos = append(infos, info)
	}
	ds := lib.Diagnostics()
	fmt.Fprint(e.stderr, p.Diagnostics.String())
	fmt.Fprint(e.stderr, ds.String())
	if asJSON {
		b, _ := json.MarshalIndent(infos, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else if len(infos) == 0 {
		fmt.Fprintf(e.stdout, "no library steps in %s\n", p.Steps)
	} else {
		w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tEXECUTOR\tTAGS\tUSED BY\tDESCRIPTION")
		for _, s := range infos {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.Name, orDash(s.Executor), orDash(strings.Join(s.Tags, ", ")), usedByText(s.UsedBy), orDash(firstLine(s.Description)))
		}
		_ = w.Flush()
	}
	if ds.HasErrors() || p.Diagnostics.HasErrors() {
		return exitFailed
	}
	return exitOK
}

// libraryUses compiles every pipeline of the project and collects where
// each uses a library step, by the library step's name. A project
// without a pipelines directory uses none.
func libraryUses(p *project.Project, d settings.Defaults) (map[string][]stepUse, error) {
	files, err := projectPipelines(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]stepUse{}
	for _, path := range files {
		f, _, _, err := gate.CompileFileIn(path, p, d)
		if err != nil {
			return nil, err
		}
		if f == nil || f.Pipeline == nil {
			continue
		}
		for _, u := range f.Uses() {
			out[u.Step] = append(out[u.Step], stepUse{Pipeline: f.Pipeline.Name, File: path, Line: u.Pos.Line, Col: u.Pos.Col, Kind: u.Kind, As: u.As})
		}
	}
	return out, nil
}

// usedByText writes uses as "sre-investigation (investigate), …", "-"
// for none.
func usedByText(us []stepUse) string {
	if len(us) == 0 {
		return "-"
	}
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = u.Pipeline
		if u.As != "" {
			parts[i] += " (" + u.As + ")"
		}
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// firstLine is the first line of s, trimmed.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}
