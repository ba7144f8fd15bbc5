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
