package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Step kinds in a model's JSON (MarshalModel): which node type each entry
// of steps decodes into.
const (
	KindStep     = "step"
	KindParallel = "parallel"
	KindFanOut   = "fan_out"
)

// model is the JSON of MarshalModel: the pipeline as json.Marshal writes
// it (the resolved pipeline GET /pipelines/{name} answers), with what that
// leaves out and a reader needs beside it.
type model struct {
	// Config is Pipeline.Config, the fingerprint of the compiled state
	// machine.
	Config string `json:"config_fingerprint"`
	// Kinds is the kind of each entry of the pipeline's steps, in order.
	Kinds    []string        `json:"step_kinds"`
	Pipeline json.RawMessage `json:"pipeline"`
}

// MarshalModel returns the JSON of a compiled pipeline that UnmarshalModel
// reads back: every field json.Marshal writes, the kind of each node of
// Steps and the state machine's fingerprint (Config). Positions (Pos,
// Fields) are left out: a model is read where the file is not.
func MarshalModel(p *Pipeline) ([]byte, error) {
	if p == nil {
		return nil, errors.New("marshal pipeline model: no pipeline")
	}
	m := model{Config: p.Config, Kinds: make([]string, len(p.Steps))}
	for i, n := range p.Steps {
		switch n.(type) {
		case *Step:
			m.Kinds[i] = KindStep
		case *Parallel:
			m.Kinds[i] = KindParallel
		case *FanOut:
			m.Kinds[i] = KindFanOut
		default:
			return nil, fmt.Errorf("marshal pipeline model %q: steps[%d] is a %T", p.Name, i, n)
		}
	}
	var err error
	if m.Pipeline, err = marshal(p); err != nil {
		return nil, fmt.Errorf("marshal pipeline model %q: %w", p.Name, err)
	}
	out, err := marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal pipeline model %q: %w", p.Name, err)
	}
	return out, nil
}

// marshal is json.Marshal without HTML escaping (the model is data, never
// served as HTML) and without the encoder's trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalModel reads the JSON MarshalModel wrote. A field the model does
// not have, a kind it does not know or a steps list of another length than
// the kinds is an error; positions are zero. Values of type any (configs,
// payloads, trigger.match values) come back as encoding/json decodes them:
// float64, string, bool, nil, []any and map[string]any.
//
// The caller bounds the size and nesting of data: encoding/json reads
// whatever it is given.
func UnmarshalModel(data []byte) (*Pipeline, error) {
	var m model
	if err := strict(data, &m); err != nil {
		return nil, fmt.Errorf("pipeline model: %w", err)
	}
	if m.Pipeline == nil {
		return nil, errors.New("pipeline model: no pipeline")
	}
	// Steps is a list of interfaces: the model's kinds say which type each
	// entry is. The outer field wins over the embedded one of the same
	// name (encoding/json's rule for fields at different depths).
	p := new(Pipeline)
	aux := struct {
		*plainPipeline
		Steps []json.RawMessage `json:"steps,omitempty"`
	}{plainPipeline: (*plainPipeline)(p)}
	if err := strict(m.Pipeline, &aux); err != nil {
		return nil, fmt.Errorf("pipeline model: pipeline: %w", err)
	}
	if len(aux.Steps) != len(m.Kinds) {
		return nil, fmt.Errorf("pipeline model %q: %d steps but %d step kinds", p.Name, len(aux.Steps), len(m.Kinds))
	}
	p.Steps = nil
	if len(aux.Steps) > 0 {
		p.Steps = make([]Node, len(aux.Steps))
	}
	for i, raw := range aux.Steps {
		var n Node
		switch m.Kinds[i] {
		case KindStep:
			n = new(Step)
		case KindParallel:
			n = new(Parallel)
		case KindFanOut:
			n = new(FanOut)
		default:
			return nil, fmt.Errorf("pipeline model %q: steps[%d]: unknown kind %q (want %s, %s or %s)", p.Name, i, m.Kinds[i], KindStep, KindParallel, KindFanOut)
		}
		if err := strict(raw, n); err != nil {
			return nil, fmt.Errorf("pipeline model %q: steps[%d]: %w", p.Name, i, err)
		}
		p.Steps[i] = n
	}
	p.Config = m.Config
	return p, nil
}

// plainPipeline is Pipeline without its methods (it has none today; the
// conversion keeps a future UnmarshalJSON from recursing).
type plainPipeline Pipeline

// strict decodes one JSON value into v, refusing unknown fields and
// anything after the value.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("text after the value")
	}
	return nil
}
