package intake

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/yamldoc"
)

// LoadPipelines loads the pipeline files (*.yaml, *.yml) directly in dir,
// in file-name order: the routing order. Each file is compiled through
// package gate, as stepline validate and the CDK app compile it, so a
// file is loaded here exactly when it validates. A file with errors is
// left out and reported in the returned error (its *compiler.Error, one
// per file) while the good ones are still returned, so a caller may serve
// them and show the problems.
func LoadPipelines(dir string) ([]*pipeline.Pipeline, error) {
	return LoadPipelinesIn(dir, nil)
}

// LoadPipelinesIn is LoadPipelines in project p; nil: each file's, the
// stepline.yaml found walking up from it.
func LoadPipelinesIn(dir string, p *project.Project) ([]*pipeline.Pipeline, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load pipelines: %w", err)
	}
	var ps []*pipeline.Pipeline
	var errs []error
	for _, e := range entries { // os.ReadDir sorts by file name
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		in := p
		if in == nil {
			var err error
			if in, err = gate.Project(path, ""); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		f, _, ds, err := gate.CompileFileIn(path, in, settings.Defaults{})
		switch {
		case err != nil:
			errs = append(errs, err)
		case ds.HasErrors():
			errs = append(errs, ds.Err())
		case f == nil || f.Pipeline == nil:
			errs = append(errs, fmt.Errorf("%s: not a pipeline", e.Name()))
		default:
			ps = append(ps, f.Pipeline)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ps, fmt.Errorf("load pipelines: %w", err)
	}
	return ps, nil
}

// ParseTokens reads team tokens from a config file's bytes, YAML or JSON,
// in one of these forms:
//
//	{"checkout": "tok-1", "payments": "tok-2"}          # team: token
//	teams: [{name: checkout, token: tok-1}]              # the reference form
//	auth: {teams: [...], token: legacy-token}            # the same under auth:
//
// A top-level or auth-level token: is a token without a team. Tokens may be
// ${NAME} references; resolve them with Expand. inbound.TokensOf reads the
// decoded document. An empty file is no tokens.
func ParseTokens(data []byte) (inbound.Tokens, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return inbound.Tokens{}, nil
	}
	var doc map[string]any
	if err := yamldoc.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse tokens: %w", err)
	}
	return inbound.TokensOf(doc)
}
