package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// PipelineOf returns the pipeline facts a compiled definition (its JSON)
// assigns in its first state: every compiled definition starts with a Pass
// state that assigns the variable "pipeline", the same facts every Task of
// the run is sent. The recorder function reads them from a deployed state
// machine, the local runner from the definition it ran.
func PipelineOf(definition []byte) (Pipeline, error) {
	var def struct {
		StartAt string `json:"StartAt"`
		States  map[string]struct {
			Assign map[string]json.RawMessage `json:"Assign"`
		} `json:"States"`
	}
	if err := json.Unmarshal(definition, &def); err != nil {
		return Pipeline{}, fmt.Errorf("state machine definition: %w", err)
	}
	raw, ok := def.States[def.StartAt].Assign["pipeline"]
	if !ok {
		return Pipeline{}, errors.New("state machine definition: its first state assigns no pipeline (not compiled by Stepline?)")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return Pipeline{}, fmt.Errorf("state machine definition: pipeline: %w", err)
	}
	return PipelineAssigned(v)
}

// PipelineAssigned returns the pipeline facts of the value a compiled
// definition's first state assigns "pipeline" (as encoding/json decodes
// it; PipelineOf reads it from the definition's text). v is not changed.
func PipelineAssigned(v any) (Pipeline, error) {
	p, err := pipelineFacts(decodeStatic(v))
	if err != nil {
		return Pipeline{}, fmt.Errorf("state machine definition: %w", err)
	}
	return p, nil
}

// PipelineValue returns the pipeline facts of a run's variable
// "pipeline" as the run holds it (as encoding/json decodes it): the
// value the first state assigned, evaluated, so the facts the run started
// with whatever was compiled under its name since.
func PipelineValue(v any) (Pipeline, error) {
	p, err := pipelineFacts(v)
	if err != nil {
		return Pipeline{}, fmt.Errorf("the run's variable %w", err)
	}
	return p, nil
}

func pipelineFacts(v any) (Pipeline, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Pipeline{}, fmt.Errorf("pipeline: %w", err)
	}
	var p Pipeline
	if err := json.Unmarshal(b, &p); err != nil {
		return Pipeline{}, fmt.Errorf("pipeline: %w", err)
	}
	if p.Name == "" {
		return Pipeline{}, errors.New("pipeline: no name")
	}
	return p, nil
}

// decodeStatic undoes the compiler's encoding of static values: a string
// that Step Functions would take for JSONata (or that holds a line break,
// or is empty) is written as the JSONata string literal "{% '…' %}", which
// evaluates to the original text. Other values are returned as they are,
// in new maps and slices (v is not changed).
func decodeStatic(v any) any {
	switch v := v.(type) {
	case string:
		if s, ok := jsonataLiteral(v); ok {
			return s
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = decodeStatic(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = decodeStatic(e)
		}
		return out
	}
	return v
}

// jsonataLiteral reads "{% '<text>' %}", a JSONata expression that is a
// single-quoted string literal, and returns the text. JSONata string
// escapes are JSON's.
func jsonataLiteral(s string) (string, bool) {
	inner, ok := strings.CutPrefix(s, "{%")
	if !ok {
		return "", false
	}
	if inner, ok = strings.CutSuffix(inner, "%}"); !ok {
		return "", false
	}
	inner = strings.TrimSpace(inner)
	if len(inner) < 2 || inner[0] != '\'' || inner[len(inner)-1] != '\'' {
		return "", false
	}
	body := inner[1 : len(inner)-1]
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '\\':
			if i+1 == len(body) {
				return "", false
			}
			b.WriteByte(c)
			b.WriteByte(body[i+1])
			i++
		case '\'':
			return "", false // an unescaped quote: not one literal
		case '"':
			b.WriteString(`\"`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	var out string
	if err := json.Unmarshal([]byte(b.String()), &out); err != nil {
		return "", false
	}
	return out, true
}
