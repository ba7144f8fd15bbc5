package llmoutput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// contractSchemaJSON is the JSON Schema of the LLMOutput contract. It
// states what Parse accepts once a reply is clean; the repairs Parse makes
// and the rules a schema cannot say (placeholders, duplicate keys, the
// executor's fields) are in the package documentation.
const contractSchemaJSON = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "LLMOutput",
  "description": "One step's answer. model, provider and raw_response are set by the executor: do not send them.",
  "type": "object",
  "properties": {
    "confidence": {
      "description": "How sure you are of the answer: a fraction from 0 to 1, not a percentage.",
      "type": "number",
      "minimum": 0,
      "maximum": 1
    },
    "summary": {
      "description": "The outcome in one line.",
      "type": "string",
      "minLength": 1,
      "pattern": "\\S"
    },
    "next_step_context": {
      "description": "What the next steps need to know; \"\" when there is nothing to pass on.",
      "type": "string"
    },
    "proceed": {
      "description": "false stops the pipeline cleanly; proceed_reason should then say why.",
      "type": "boolean",
      "default": true
    },
    "proceed_reason": {
      "description": "Why the pipeline should stop, when proceed is false; without it the summary says why.",
      "type": "string"
    },
    "reasoning": {
      "description": "How you reached the answer. Conventional keys: supports, contradicts, assumptions (lists of short statements).",
      "type": "object"
    },
    "artifacts": {
      "description": "Named text outputs: name → content.",
      "type": "object",
      "additionalProperties": {"type": "string"}
    }
  },
  "required": ["confidence", "summary", "next_step_context"],
  "additionalProperties": true
}`

// ContractName is the SchemaSpec name of the LLMOutput contract.
const ContractName = "llm_output"

// ContractSchemaJSON returns the JSON Schema of the LLMOutput contract.
func ContractSchemaJSON() json.RawMessage {
	return json.RawMessage(contractSchemaJSON)
}

// ContractSpec is the SchemaSpec of the LLMOutput contract. It is not
// strict: extra fields and free-form reasoning and artifacts are part of
// the contract, and OpenAI's strict mode cannot express them.
func ContractSpec() SchemaSpec {
	return SchemaSpec{
		Name:        ContractName,
		Description: "The step's answer in the LLMOutput contract",
		JSON:        ContractSchemaJSON(),
	}
}

// ContractInstruction is the system-prompt text that asks for an LLMOutput
// answer.
func ContractInstruction() string {
	return Instruction(ContractSpec())
}

// Instruction renders the system-prompt text that asks for one JSON object
// matching spec, and nothing before or after it.
func Instruction(spec SchemaSpec) string {
	var b strings.Builder
	b.WriteString("Reply with exactly one JSON object that matches the JSON Schema below, and nothing before or after it: no prose, no code fence, no comments.")
	if spec.Description != "" {
		b.WriteString("\nThe object is: ")
		b.WriteString(strings.TrimSpace(spec.Description))
		if !strings.HasSuffix(spec.Description, ".") {
			b.WriteByte('.')
		}
	}
	b.WriteString("\nUse the exact field names, give every required field, and write real values, not placeholders.")
	var ind bytes.Buffer
	if err := json.Indent(&ind, spec.JSON, "", "  "); err != nil {
		ind.Reset()
		ind.Write(spec.JSON)
	}
	b.WriteString("\nJSON Schema")
	if spec.Name != "" {
		fmt.Fprintf(&b, " (%s)", spec.Name)
	}
	b.WriteString(":\n")
	b.Write(ind.Bytes())
	return b.String()
}

// StrictSchema derives from a JSON Schema the form OpenAI's strict
// structured output accepts: every object closed (additionalProperties
// false) with all its properties required, optional ones made nullable,
// and the validation keywords strict mode rejects (bounds, lengths,
// patterns, formats, defaults) removed. The runner still validates every
// answer against the original schema, so nothing is lost. It returns an
// error wrapping ErrNotStrict when the schema holds what strict mode
// cannot express: a free-form object or map, oneOf, allOf, not, if.
func StrictSchema(schema json.RawMessage) (json.RawMessage, error) {
	s := string(schema)
	v, _, _, perr := parseLenient(s, 0, len(s), DefaultMaxDepth)
	if perr != nil {
		return nil, fmt.Errorf("strict schema: %s", perr.Message)
	}
	out, err := strictNode(&v, "#")
	if err != nil {
		return nil, err
	}
	return json.RawMessage(appendJSON(nil, &out)), nil
}

func strictNode(s *value, path string) (value, error) {
	if s.kind != kindObject {
		return value{}, fmt.Errorf("strict schema at %s: %w: a schema must be an object here", path, ErrNotStrict)
	}
	out := value{kind: kindObject}
	var props *value
	var required *value
	isObject := false
	for _, m := range s.members {
		switch m.key {
		case "$schema", "$id", "$comment", "default", "examples", "minimum", "maximum",
			"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
			"pattern", "format", "minItems", "maxItems", "uniqueItems", "minProperties",
			"maxProperties", "contentEncoding", "contentMediaType", "readOnly", "writeOnly":
			continue
		case "oneOf", "allOf", "not", "if", "then", "else", "patternProperties", "dependencies",
			"dependentRequired", "dependentSchemas", "additionalItems", "contains", "propertyNames",
			"unevaluatedProperties", "unevaluatedItems":
			return value{}, fmt.Errorf("strict schema at %s: %w: %q is not supported", path, ErrNotStrict, m.key)
		case "properties":
			if m.val.kind != kindObject {
				return value{}, fmt.Errorf("strict schema at %s: properties must be an object", path)
			}
			props = &m.val
			isObject = true
			continue
		case "required":
			required = &m.val
			continue
		case "additionalProperties":
			if !(m.val.kind == kindBool && m.val.str == "false") {
				return value{}, fmt.Errorf("strict schema at %s: %w: an object with additional properties (a map or free-form object)", path, ErrNotStrict)
			}
			continue
		case "type":
			if m.val.kind == kindString && m.val.str == "object" {
				isObject = true
			}
			if m.val.kind == kindArray {
				for _, t := range m.val.items {
					if t.str == "object" {
						isObject = true
					}
				}
			}
		case "items":
			it, err := strictNode(&m.val, path+"/items")
			if err != nil {
				return value{}, err
			}
			out.members = append(out.members, member{m.key, it})
			continue
		case "anyOf":
			if m.val.kind != kindArray {
				return value{}, fmt.Errorf("strict schema at %s: anyOf must be an array", path)
			}
			alts := value{kind: kindArray}
			for i := range m.val.items {
				a, err := strictNode(&m.val.items[i], fmt.Sprintf("%s/anyOf/%d", path, i))
				if err != nil {
					return value{}, err
				}
				alts.items = append(alts.items, a)
			}
			out.members = append(out.members, member{m.key, alts})
			continue
		case "$defs", "definitions":
			defs := value{kind: kindObject}
			for _, d := range m.val.members {
				dv, err := strictNode(&d.val, path+"/"+m.key+"/"+d.key)
				if err != nil {
					return value{}, err
				}
				defs.members = append(defs.members, member{d.key, dv})
			}
			out.members = append(out.members, member{m.key, defs})
			continue
		}
		out.members = append(out.members, m)
	}
	if !isObject {
		return out, nil
	}
	if props == nil {
		return value{}, fmt.Errorf("strict schema at %s: %w: an object without properties (free-form)", path, ErrNotStrict)
	}
	req := map[string]bool{}
	if required != nil {
		for _, r := range required.items {
			req[r.str] = true
		}
	}
	np := value{kind: kindObject}
	all := value{kind: kindArray}
	for _, p := range props.members {
		pv, err := strictNode(&p.val, path+"/properties/"+p.key)
		if err != nil {
			return value{}, err
		}
		if !req[p.key] {
			pv = nullable(pv)
		}
		np.members = append(np.members, member{p.key, pv})
		all.items = append(all.items, value{kind: kindString, str: p.key})
	}
	out.members = append(out.members,
		member{"properties", np},
		member{"required", all},
		member{"additionalProperties", value{kind: kindBool, str: "false"}})
	return out, nil
}

// nullable lets a schema also accept null.
func nullable(s value) value {
	hasType := false
	for i := range s.members {
		m := &s.members[i]
		switch m.key {
		case "type":
			hasType = true
			switch m.val.kind {
			case kindString:
				if m.val.str != "null" {
					m.val = value{kind: kindArray, items: []value{m.val, {kind: kindString, str: "null"}}}
				}
			case kindArray:
				if !hasString(m.val.items, "null") {
					m.val.items = append(m.val.items, value{kind: kindString, str: "null"})
				}
			}
		case "enum":
			if m.val.kind == kindArray {
				hasNull := false
				for _, e := range m.val.items {
					hasNull = hasNull || e.kind == kindNull
				}
				if !hasNull {
					m.val.items = append(m.val.items, value{kind: kindNull})
				}
			}
		}
	}
	if hasType {
		return s
	}
	return value{kind: kindObject, members: []member{{"anyOf", value{kind: kindArray, items: []value{
		s, {kind: kindObject, members: []member{{"type", value{kind: kindString, str: "null"}}}},
	}}}}}
}

func hasString(vs []value, s string) bool {
	for _, v := range vs {
		if v.kind == kindString && v.str == s {
			return true
		}
	}
	return false
}
