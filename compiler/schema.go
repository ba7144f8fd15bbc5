package compiler

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/xeipuuv/gojsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/pipeline"
)

//go:embed schema/pipeline.schema.json
var schemaJSON []byte

// Schema returns the JSON Schema of the pipeline format (draft-07). Editors
// can use it through yaml-language-server; Parse validates every file
// against it.
func Schema() []byte { return schemaJSON }

// compiledSchema is the parsed schema, built once: it is immutable.
var compiledSchema = sync.OnceValues(func() (*gojsonschema.Schema, error) {
	return gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schemaJSON))
})

// fieldSets lists the fields each kind of node accepts, for "did you mean".
var fieldSets = sync.OnceValue(func() map[string][]string {
	var s struct {
		Properties  map[string]any `json:"properties"`
		Definitions map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"definitions"`
	}
	_ = json.Unmarshal(schemaJSON, &s)
	out := map[string][]string{"": slices.Sorted(maps.Keys(s.Properties))}
	for name, def := range s.Definitions {
		out[name] = slices.Sorted(maps.Keys(def.Properties))
	}
	return out
})

// unsupported names fields of the format Stepline was modelled on that
// Stepline does not implement, so that their authors get a clear answer.
var unsupported = map[string]string{
	"calibration":         "calibration belongs to sequential steps",
	"readiness":           "readiness criteria are not supported",
	"include_approx_cost": "per-step include_approx_cost is not supported; set it on budget",
	"use":                 "use: names a library step in a steps entry, a parallel branch or a fan_out",
}

// validateSchema checks the document against the pipeline schema and turns
// each violation into a positioned, readable diagnostic. Violations at the
// nodes in reported are left out: the decoder has said better what is
// wrong with them (a number out of its field's range, or not finite).
func validateSchema(f *File, root *yaml.Node, reported map[*yaml.Node]bool) Diagnostics {
	var ds Diagnostics
	schema, err := compiledSchema()
	if err != nil {
		ds.errorf(pipeline.Pos{File: f.name}, "internal: pipeline schema does not load: %v", err)
		return ds
	}
	res, err := schema.Validate(gojsonschema.NewGoLoader(toValue(root)))
	if err != nil {
		ds.errorf(f.pos(root), "%v", err)
		return ds
	}
	errs := dropAnyOfRequired(res.Errors())
	// Combinator errors (oneOf, if/then) only restate the detailed errors
	// gojsonschema merges in from the best-matching branch: keep them only
	// when nothing more precise was said at or below their path.
	for _, e := range errs {
		path := splitPath(e.Context())
		if reported[nodeAt(root, path)] {
			continue
		}
		switch e.Type() {
		case "condition_then", "condition_else":
			continue
		case "number_one_of":
			if moreSpecific(errs, path) {
				continue
			}
		}
		ds = append(ds, schemaDiag(f, root, path, e))
	}
	return ds
}

func splitPath(c *gojsonschema.JsonContext) []string {
	s := c.String("\x00")
	parts := strings.Split(s, "\x00")
	if len(parts) > 0 && parts[0] == "(root)" {
		parts = parts[1:]
	}
	return parts
}

func moreSpecific(errs []gojsonschema.ResultError, path []string) bool {
	for _, e := range errs {
		switch e.Type() {
		case "number_one_of", "number_any_of", "condition_then", "condition_else":
			continue
		}
		p := splitPath(e.Context())
		if len(p) >= len(path) && strings.Join(p[:len(path)], "\x00") == strings.Join(path, "\x00") {
			return true
		}
	}
	return false
}

func schemaDiag(f *File, root *yaml.Node, path []string, e gojsonschema.ResultError) Diagnostic {
	where, rest := describe(root, path)
	field := strings.Join(rest, ".")
	prefix := ""
	if where != "" {
		prefix = where + ": "
	}
	node := nodeAt(root, path)
	pos := pipeline.Pos{File: f.name}
	if node != nil {
		pos = f.pos(node)
	}
	det := e.Details()
	var msg string
	switch e.Type() {
	case "additional_property_not_allowed":
		prop, _ := det["property"].(string)
		if k := keyNodeAt(root, append(append([]string{}, path...), prop)); k != nil {
			pos = f.pos(k)
		}
		in := ""
		if field != "" {
			in = " in " + field
		}
		if why, ok := unsupported[prop]; ok {
			msg = fmt.Sprintf("%sunknown field %q%s: %s", prefix, prop, in, why)
			break
		}
		msg = fmt.Sprintf("%sunknown field %q%s%s", prefix, prop, in, didYouMean(prop, knownFields(rest, where)))
	case "required":
		prop, _ := det["property"].(string)
		if field != "" {
			msg = fmt.Sprintf("%s%s: missing required field %q", prefix, field, prop)
		} else {
			msg = fmt.Sprintf("%smissing required field %q", prefix, prop)
		}
	case "invalid_type":
		msg = fmt.Sprintf("%s%s must be %s, not %s", prefix, fieldName(field), typeWords(fmt.Sprint(det["expected"])), kindName(node))
	case "enum":
		got := ""
		if node != nil {
			got = node.Value
		}
		allowed := enumValues(fmt.Sprint(det["allowed"]))
		msg = fmt.Sprintf("%s%s %q is not one of %s%s", prefix, fieldName(field), got, strings.Join(allowed, ", "), didYouMean(got, allowed))
	case "number_gte", "number_lte", "number_gt", "number_lt":
		msg = fmt.Sprintf("%s%s %s", prefix, fieldName(field), rangeWords(e.Type(), det, rest))
	case "string_gte":
		msg = fmt.Sprintf("%s%s must not be empty", prefix, fieldName(field))
	case "string_lte":
		msg = fmt.Sprintf("%s%s is longer than %v characters", prefix, fieldName(field), det["max"])
	case "array_min_items":
		msg = fmt.Sprintf("%s%s needs at least %v entry", prefix, fieldName(field), det["min"])
	case "pattern", "does_not_match_pattern":
		got := ""
		if node != nil {
			got = node.Value
		}
		msg = fmt.Sprintf("%s%s %q may hold only ASCII letters, digits, '-' and '_', starting with a letter or digit", prefix, fieldName(field), got)
		if last(rest) == "as" {
			msg = fmt.Sprintf("%sas %q must be an identifier (ASCII letters, digits, '_')", prefix, got)
		}
	case "number_any_of":
		if last(path) == "budget" {
			msg = "budget needs a limit: max_tokens or max_usd"
		}
	case "number_one_of":
		msg = fmt.Sprintf("%s%s has the wrong shape", prefix, fieldName(field))
	case "array_max_properties", "array_min_properties":
		msg = fmt.Sprintf("%s%s: an operator block takes exactly one of %s", prefix, fieldName(field), strings.Join(pipeline.MatchOps(), ", "))
	case "invalid_property_name", "number_not":
	}
	if msg == "" {
		msg = prefix + lowerFirst(e.Description())
		if field != "" {
			msg = prefix + field + ": " + lowerFirst(e.Description())
		}
	}
	return Diagnostic{Pos: pos, Msg: msg}
}

func last(p []string) string {
	if len(p) == 0 {
		return ""
	}
	return p[len(p)-1]
}

func fieldName(field string) string {
	if field == "" {
		return "the pipeline"
	}
	return field
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// knownFields lists the fields accepted where an unknown one was found.
func knownFields(rest []string, where string) []string {
	sets := fieldSets()
	kind := ""
	switch {
	case strings.HasPrefix(where, "branch"):
		kind = "branch"
	case strings.HasPrefix(where, "parallel"):
		kind = "parallel"
	case strings.HasPrefix(where, "fan_out"):
		kind = "fanOut"
	case strings.HasPrefix(where, "step"):
		kind = "step"
	}
	if len(rest) >= 2 && rest[len(rest)-2] == "deterministic_checks" {
		return sets["deterministicCheck"]
	}
	if len(rest) > 0 {
		switch rest[len(rest)-1] {
		case "verifier":
			kind = "verifier"
		case "grounding":
			kind = "grounding"
		case "calibration":
			kind = "calibration"
		case "trigger":
			if len(rest) == 1 && where == "" {
				kind = "trigger"
			}
		case "webhook":
			return []string{"url", "method", "headers", "payload", "timeout_seconds"}
		case "retry":
			return []string{"attempts", "backoff", "delay_seconds"}
		case "loop_until":
			return []string{"confidence", "max_iterations"}
		case "on_failure":
			return []string{"policy", "webhook"}
		case "budget":
			return []string{"max_tokens", "max_usd", "max_cost", "include_approx_cost"}
		case "schedule":
			return []string{"cron", "timezone", "summary", "severity", "labels", "team"}
		case "durable":
			return []string{"on_interrupted", "max_resume_age_seconds"}
		case "dedup":
			return []string{"enabled", "window_seconds"}
		case "context_template":
			return []string{"include"}
		}
	}
	if kind == "" && where == "" && len(rest) == 0 {
		return sets[""]
	}
	if kind == "step" && len(rest) == 0 {
		// A misspelt group key lands here too.
		return append(append([]string{}, sets["step"]...), "parallel", "fan_out")
	}
	return sets[kind]
}

func typeWords(expected string) string {
	words := map[string]string{
		"string": "a string", "number": "a number", "integer": "a whole number", "boolean": "true or false",
		"object": "a mapping", "array": "a list", "null": "null",
	}
	var out []string
	for _, t := range strings.Split(expected, ",") {
		t = strings.TrimSpace(t)
		if w, ok := words[t]; ok {
			out = append(out, w)
		} else if t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, " or ")
}

func enumValues(allowed string) []string {
	var out []string
	for _, v := range strings.Split(allowed, ",") {
		v = strings.TrimSpace(v)
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func rangeWords(kind string, det gojsonschema.ErrorDetails, rest []string) string {
	f := last(rest)
	if strings.Contains(f, "confidence") || f == "veto_floor" {
		return "must be between 0 and 1"
	}
	switch kind {
	case "number_gte":
		return fmt.Sprintf("must be at least %v", det["min"])
	case "number_gt":
		return fmt.Sprintf("must be greater than %v", det["min"])
	case "number_lte":
		return fmt.Sprintf("must be at most %v", det["max"])
	}
	return fmt.Sprintf("must be less than %v", det["max"])
}

// dropAnyOfRequired removes the "required" errors that gojsonschema merges
// in from a failed anyOf of required-alternatives (budget needs one of
// several limits): the anyOf error says it better.
func dropAnyOfRequired(errs []gojsonschema.ResultError) []gojsonschema.ResultError {
	anyOf := map[string]bool{}
	for _, e := range errs {
		if e.Type() == "number_any_of" {
			anyOf[e.Context().String()] = true
		}
	}
	if len(anyOf) == 0 {
		return errs
	}
	out := errs[:0:0]
	for _, e := range errs {
		if e.Type() == "required" && anyOf[e.Context().String()] {
			continue
		}
		out = append(out, e)
	}
	return out
}
