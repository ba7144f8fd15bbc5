package steprun

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/task"
)

// TestNullStepIsNotInContext: a step variable the state machine set to
// null (a group's branch that gave no output) reaches the function as
// steps.<name> = null, in Step Functions and in the local engine alike.
// Templates see it as a step that did not run: it tests false, and
// reading one of its fields is the same error as for a skipped step.
func TestNullStepIsNotInContext(t *testing.T) {
	cases := []struct {
		name   string
		steps  map[string]json.RawMessage
		tmpl   string
		want   string // the rendered prompt; "" when an error is expected
		errHas string
	}{
		{"null tests false", map[string]json.RawMessage{"gone": json.RawMessage(`null`)}, "{% if steps.gone %}yes{% else %}no{% endif %}", "no", ""},
		{"absent tests false", map[string]json.RawMessage{}, "{% if steps.gone %}yes{% else %}no{% endif %}", "no", ""},
		{"present tests true", map[string]json.RawMessage{"gone": json.RawMessage(`{"confidence":1,"summary":"s","next_step_context":""}`)}, "{% if steps.gone %}yes{% else %}no{% endif %}", "yes", ""},
		{"field of null", map[string]json.RawMessage{"gone": json.RawMessage(` null `)}, "{{ steps.gone.summary }}", "", `step "gone" is not in the context`},
		{"field of absent", map[string]json.RawMessage{}, "{{ steps.gone.summary }}", "", `step "gone" is not in the context`},
		{"others kept beside a null", map[string]json.RawMessage{"gone": json.RawMessage(`null`), "here": json.RawMessage(`{"confidence":1,"summary":"s","next_step_context":""}`)}, "{{ steps.here.summary }} {% if steps.gone %}yes{% else %}no{% endif %}", "s no", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, `triage: [{confidence: 0.9, summary: ok, next_step_context: ""}]`)
			req := newRequest(t, task.ModeStep, seqStep("triage", c.tmpl))
			req.Steps = c.steps
			_, err := e.h.Respond(context.Background(), req)
			if c.want == "" {
				if fault.Name(err) != fault.NameTemplateError || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("err = %v, want a TemplateError containing %q", err, c.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := stepRecords(t, e.st, "triage")[0].Prompt; got != c.want {
				t.Errorf("rendered %q, want %q", got, c.want)
			}
		})
	}
}
