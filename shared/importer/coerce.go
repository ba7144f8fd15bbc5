package importer

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The reference validates its files with Pydantic in lax mode, which
// reads a string as the number or boolean a field wants: retry attempts
// "3", a threshold "0.7", enforce: "yes". Its YAML reader is YAML 1.1 as
// well, where a plain yes, on or off is already a boolean; Stepline reads
// YAML 1.2, where they are strings. Stepline's validator refuses a
// string where a number or a boolean belongs, so the importer writes
// such a value as what the reference read it as, where Stepline's
// pipeline JSON Schema wants a number, a whole number or a boolean and
// no string. It does so only for the text Pydantic accepts (laxInt,
// laxFloat, laxBool); anything else is left for validate to refuse.
// Maps whose keys are free (vars, headers, executor_config, match) are
// not entered: their values are the executor's or the event's.

// schemaNode is what the coercion reads of a JSON Schema.
type schemaNode struct {
	Ref        string                 `json:"$ref"`
	Type       schemaTypes            `json:"type"`
	Properties map[string]*schemaNode `json:"properties"`
	Items      *schemaNode            `json:"items"`
	OneOf      []*schemaNode          `json:"oneOf"`
	AnyOf      []*schemaNode          `json:"anyOf"`
	AllOf      []*schemaNode          `json:"allOf"`
	Then       *schemaNode            `json:"then"`
	Else       *schemaNode            `json:"else"`
}

// schemaTypes is a schema's type: one name or a list of them.
type schemaTypes []string

func (t *schemaTypes) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*t = schemaTypes{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*t = many
	return nil
}

// typedSchema is a pipeline JSON Schema as the coercion walks it.
type typedSchema struct {
	root  *schemaNode
	defs  map[string]*schemaNode
	depth int // $refs followed on the current path, bounded by maxRefs
}

// maxRefs bounds the $refs followed for one value (a schema that refers
// to itself would not end).
const maxRefs = 32

// newTypedSchema reads schema; nil when there is none or it does not
// decode.
func newTypedSchema(schema []byte) *typedSchema {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		schemaNode
		Definitions map[string]*schemaNode `json:"definitions"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return &typedSchema{root: &s.schemaNode, defs: s.Definitions}
}

// alternatives lists the schemas n may be, its $ref, oneOf, anyOf,
// allOf, then and else followed; out of them come the types and properties it allows.
func (ts *typedSchema) alternatives(n *schemaNode, out []*schemaNode, refs int) []*schemaNode {
	if n == nil || refs > maxRefs {
		return out
	}
	if name, ok := strings.CutPrefix(n.Ref, "#/definitions/"); ok {
		out = ts.alternatives(ts.defs[name], out, refs+1)
	}
	out = append(out, n)
	for _, list := range [][]*schemaNode{n.OneOf, n.AnyOf, n.AllOf, {n.Then, n.Else}} {
		for _, c := range list {
			out = ts.alternatives(c, out, refs+1)
		}
	}
	return out
}

// coerce writes, in the YAML value v that schema n describes, each
// string Pydantic would have read as a number or boolean as that number
// or boolean, and notes it.
func (f *fileConv) coerce(ts *typedSchema, v *yaml.Node, n *schemaNode) {
	alts := ts.alternatives(n, nil, 0)
	if len(alts) == 0 {
		return
	}
	switch v.Kind {
	case yaml.ScalarNode:
		f.coerceScalar(v, alts)
	case yaml.MappingNode:
		for _, e := range entries(v) {
			var props []*schemaNode
			for _, a := range alts {
				if p := a.Properties[e[0].Value]; p != nil {
					props = append(props, p)
				}
			}
			f.coerce(ts, e[1], &schemaNode{AnyOf: props})
		}
	case yaml.SequenceNode:
		var items []*schemaNode
		for _, a := range alts {
			if a.Items != nil {
				items = append(items, a.Items)
			}
		}
		for _, c := range v.Content {
			f.coerce(ts, c, &schemaNode{AnyOf: items})
		}
	}
}

// coerceScalar rewrites the scalar v when it is a string (or, for a whole
// number, a float) and the schemas alts allow no string but a number,
// whole number or boolean Pydantic reads it as.
func (f *fileConv) coerceScalar(v *yaml.Node, alts []*schemaNode) {
	allowed := map[string]bool{}
	for _, a := range alts {
		for _, t := range a.Type {
			allowed[t] = true
		}
	}
	if allowed["string"] {
		return
	}
	tag := v.ShortTag()
	var out, kind string
	switch {
	case tag == "!!float" && allowed["integer"] && !allowed["number"]:
		// Pydantic takes a float with no fraction for an int.
		if x, err := strconv.ParseFloat(v.Value, 64); err == nil && x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			out, kind = strconv.FormatFloat(x, 'f', -1, 64), "whole number"
		}
	case tag != "!!str":
		return
	case allowed["integer"]:
		if s, ok := laxInt(v.Value); ok {
			out, kind = s, "whole number"
		} else if s, ok := laxFloat(v.Value); ok && allowed["number"] {
			out, kind = s, "number"
		}
	case allowed["number"]:
		if s, ok := laxFloat(v.Value); ok {
			out, kind = s, "number"
		}
	}
	if out == "" && tag == "!!str" && allowed["boolean"] {
		if b, ok := laxBool(v.Value); ok {
			out, kind = strconv.FormatBool(b), "boolean"
		}
	}
	if out == "" {
		return
	}
	f.add(v, Converted, "lax value", strconv.Quote(v.Value)+" written as "+out+": the reference read it as a "+kind, "")
	// The tag YAML resolves the text to, so that it is written plain.
	v.Value, v.Style = out, 0
	switch {
	case kind == "boolean":
		v.Tag = "!!bool"
	case strings.ContainsAny(out, ".eE"):
		v.Tag = "!!float"
	default:
		v.Tag = "!!int"
	}
}

// laxInt is Pydantic's reading of a string as an int: surrounding space,
// a sign, leading zeros and a fraction of zeros allowed; the number as
// Stepline writes it, false when it is not one or is past 2^53.
func laxInt(s string) (string, bool) {
	s = strings.TrimSpace(s)
	neg := false
	switch {
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	case strings.HasPrefix(s, "-"):
		s, neg = s[1:], true
	}
	if whole, frac, ok := strings.Cut(s, "."); ok {
		if frac == "" || strings.Trim(frac, "0") != "" {
			return "", false
		}
		s = whole
	}
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return "", false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > 1<<53 {
		return "", false
	}
	if neg {
		n = -n
	}
	return strconv.FormatInt(n, 10), true
}

// laxFloat is Pydantic's reading of a string as a float, for decimal
// text (surrounding space, a sign, a fraction, an exponent): a finite
// number as Stepline writes it; infinities, NaN, hexadecimal and
// underscores are left alone.
func laxFloat(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.Trim(s, "0123456789.eE+-") != "" || !strings.ContainsAny(s, "0123456789") {
		return "", false
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return "", false
	}
	if a := math.Abs(x); a == 0 || a >= 1e-4 && a < 1e15 {
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return strconv.FormatFloat(x, 'g', -1, 64), true
}

// laxBool is Pydantic's reading of a string as a bool: 0 and 1, and the
// words f, n, no, off, false, t, y, on, yes, true in any case.
func laxBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "0", "f", "n", "no", "off", "false":
		return false, true
	case "1", "t", "y", "on", "yes", "true":
		return true, true
	}
	return false, false
}
