package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stepline/stepline/shared/project"
)

// configFlag registers --config on a command that reads pipelines.
func configFlag(fs *pflag.FlagSet) *string {
	return fs.String("config", "", "the project file (stepline.yaml); default: the first found walking up from the pipeline file")
}

// useProject loads the project file of --config, when given, into sf:
// pipelines compile in it, and the pipelines directory (*dir) becomes
// its pipelines directory unless --pipelines was given. It reports
// whether the command may go on (the error is written).
func useProject(e env, fs *pflag.FlagSet, config string, sf *stateFlags, dir *string) bool {
	if config == "" {
		return true
	}
	p, err := project.Load(config)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return false
	}
	sf.project = p
	if !fs.Changed("pipelines") {
		*dir = p.Pipelines
	}
	return true
}

// projectPipelines lists the pipeline files (*.yaml, *.yml) in the
// project's pipelines directory, in name order.
func projectPipelines(p *project.Project) ([]string, error) {
	entries, err := os.ReadDir(p.Pipelines)
	if err != nil {
		return nil, fmt.Errorf("read pipelines of %s: %w", p.Path, err)
	}
	var out []string
	for _, en := range entries {
		ext := strings.ToLower(filepath.Ext(en.Name()))
		if !en.IsDir() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, filepath.Join(p.Pipelines, en.Name()))
		}
	}
	return out, nil
}
