package llmoutput

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
)

// TestJudgeAgain checks the hook an agent's loop drives the Runner with:
// a rejected reply is re-asked while attempts are left (MaxRetries 2:
// attempts 1 and 2 ask again, 3 does not), a refusal never is, and an
// accepted reply carries the executor's fields.
func TestJudgeAgain(t *testing.T) {
	good := `{"confidence": 0.8, "summary": "ok", "next_step_context": ""}`
	cases := []struct {
		name    string
		content string
		finish  string
		attempt int
		ok      bool
		again   bool
		errName string
	}{
		{"accepted", good, FinishStop, 1, true, false, ""},
		{"rejected, first attempt", "no json here", FinishStop, 1, false, true, ""},
		{"rejected, below the last attempt", "no json here", FinishStop, 2, false, true, ""},
		{"rejected, at the last attempt", "no json here", FinishStop, 3, false, false, fault.NameInvalidOutput},
		{"rejected, above the last attempt", "no json here", FinishStop, 4, false, false, fault.NameInvalidOutput},
		{"refused", "", FinishRefusal, 1, false, false, fault.NameModelRefused},
	}
	var r Runner
	schema := ContractSchema()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, err := r.Judge(schema, Completion{Content: c.content, FinishReason: c.finish, Model: "m", Provider: "p"}, c.attempt)
			if err != nil {
				t.Fatal(err)
			}
			if j.OK != c.ok || j.Again != c.again {
				t.Fatalf("ok %v again %v, want %v %v", j.OK, j.Again, c.ok, c.again)
			}
			if c.ok {
				if j.Data.Model != "m" || j.Data.Provider != "p" || j.Data.RawResponse != c.content || j.Err(c.attempt) != nil {
					t.Errorf("accepted answer: %+v, err %v", j.Data, j.Err(c.attempt))
				}
				return
			}
			if j.Feedback == "" || j.Replay == "" {
				t.Errorf("feedback %q, replay %q", j.Feedback, j.Replay)
			}
			if c.errName != "" && fault.Name(j.Err(c.attempt)) != c.errName {
				t.Errorf("Err = %v, want %s", j.Err(c.attempt), c.errName)
			}
		})
	}
}

// TestInstruct checks that Instruct is what Complete sends first.
func TestInstruct(t *testing.T) {
	schema := ContractSchema()
	msgs := []Message{{Role: RoleSystem, Content: "You are careful."}, {Role: RoleUser, Content: "triage"}}
	var r Runner
	got, err := r.Instruct(msgs, schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0].Content, "You are careful.\n\n") || !strings.Contains(got[0].Content, schema.Instruction()) {
		t.Errorf("instructed = %+v", got)
	}
	if msgs[0].Content != "You are careful." {
		t.Error("Instruct changed the caller's messages")
	}
	r.SkipInstruction = true
	if got, _ := r.Instruct(msgs, schema); got[0].Content != "You are careful." {
		t.Errorf("SkipInstruction: %q", got[0].Content)
	}
	var ce *fault.ConfigError
	if _, err := r.Instruct(msgs, &OutputSchema{}); !errors.As(err, &ce) {
		t.Errorf("a schema not built by a constructor: %v", err)
	}
	if _, err := r.Judge(&OutputSchema{}, Completion{}, 1); !errors.As(err, &ce) {
		t.Errorf("Judge with a schema not built by a constructor: %v", err)
	}
}
