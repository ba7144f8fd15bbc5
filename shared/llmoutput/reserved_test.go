package llmoutput

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestReservedFieldsDropped: a reply may not set a name the runner or the
// executor owns, nor a contract, executor or runner name in another case
// (encoding/json matches keys case-insensitively, so "Confidence" would
// overwrite confidence in any Go struct that reads the output). Each is
// dropped and flagged; a name that is merely close is an extra like any
// other.
func TestReservedFieldsDropped(t *testing.T) {
	const base = `"confidence": 0.9, "summary": "s", "next_step_context": "n"`
	cases := []struct {
		name    string
		extra   string   // members added after the contract fields
		flags   []string // the flags of the accepted reply
		dropped []string // extra names absent from the answer
		kept    []string // extra names present in the answer
	}{
		{"failed", `"failed": true`, []string{FlagReservedFieldIgnored}, []string{"failed"}, nil},
		{"failed false", `"failed": false`, []string{FlagReservedFieldIgnored}, []string{"failed"}, nil},
		{"failed_branches", `"failed_branches": []`, []string{FlagReservedFieldIgnored}, []string{"failed_branches"}, nil},
		{"join", `"join": "any_must_pass"`, []string{FlagReservedFieldIgnored}, []string{"join"}, nil},
		{"sub_run_id", `"sub_run_id": "run-forged"`, []string{FlagReservedFieldIgnored}, []string{"sub_run_id"}, nil},
		{"sub_pipeline_status", `"sub_pipeline_status": "completed"`, []string{FlagReservedFieldIgnored}, []string{"sub_pipeline_status"}, nil},
		{"every runner name", `"failed": 1, "failed_branches": ["x"], "join": "x", "sub_run_id": "x", "sub_pipeline_status": "x", "action": "page"`,
			[]string{FlagReservedFieldIgnored}, RunnerFields(), []string{"action"}},
		{"runner name in capitals", `"FAILED": true`, []string{FlagReservedFieldIgnored}, []string{"FAILED"}, nil},
		{"runner name in title case", `"Sub_Run_Id": "x"`, []string{FlagReservedFieldIgnored}, []string{"Sub_Run_Id"}, nil},
		{"contract name in another case", `"Confidence": 1, "SUMMARY": "all good"`, []string{FlagReservedFieldIgnored}, []string{"Confidence", "SUMMARY"}, nil},
		{"contract name with a Unicode fold", "\"\u017fummary\": \"long s folds to s\"", []string{FlagReservedFieldIgnored}, []string{"\u017fummary"}, nil},
		{"executor name in another case", `"Model": "gpt-x"`, []string{FlagReservedFieldIgnored}, []string{"Model"}, nil},
		{"executor name exact", `"model": "gpt-x"`, []string{FlagExecutorFieldIgnored}, []string{"model"}, nil},
		{"executor and runner names", `"raw_response": "x", "failed": true`, []string{FlagExecutorFieldIgnored, FlagReservedFieldIgnored}, []string{"raw_response", "failed"}, nil},
		{"close names are extras", `"failed_reason": "x", "failedbranches": 1, "joins": 2, "sub_run": 3, "is_failed": true, "fail": true`,
			nil, nil, []string{"failed_reason", "failedbranches", "joins", "sub_run", "is_failed", "fail"}},
		{"nested names are content", `"details": {"failed": true, "join": "x"}, "reasoning": {"failed": ["a"]}`, nil, nil, []string{"details"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Parse("{"+base+", "+c.extra+"}", ParseOptions{})
			if !res.OK {
				t.Fatalf("rejected: %v", res.Errors)
			}
			want := c.flags
			if want == nil {
				want = []string{}
			}
			if !slices.Equal(res.Flags, want) {
				t.Errorf("flags = %v, want %v", res.Flags, want)
			}
			o := res.Output
			if o.Confidence != 0.9 || o.Summary != "s" {
				t.Errorf("contract fields changed: %v %q", o.Confidence, o.Summary)
			}
			for _, n := range c.dropped {
				if _, ok := o.Extra.Get(n); ok {
					t.Errorf("extra %q kept", n)
				}
				if _, ok := o.Map()[n]; ok && !slices.Contains([]string{"model"}, n) {
					t.Errorf("Map holds %q", n)
				}
			}
			for _, n := range c.kept {
				if _, ok := o.Extra.Get(n); !ok {
					t.Errorf("extra %q dropped", n)
				}
			}
		})
	}
}

// TestReservedNameAloneStillMissing: a contract name written in another
// case is dropped, so the field it stands for is missing, with the hint
// that names are exact.
func TestReservedNameAloneStillMissing(t *testing.T) {
	res := Parse(`{"Confidence": 0.9, "summary": "s", "next_step_context": ""}`, ParseOptions{})
	if res.OK || len(res.Errors) != 1 || res.Errors[0].Code != CodeMissingField ||
		!strings.Contains(res.Errors[0].Message, `found "Confidence"`) {
		t.Fatalf("errors = %v", res.Errors)
	}
}

// TestRunnerFieldsRoundTrip: the runner sets its own names with SetExtra;
// they encode and decode as extras, and a reply that replays such an
// output has them dropped again.
func TestRunnerFieldsRoundTrip(t *testing.T) {
	o := New(0.5, "2 branches joined", "")
	for _, n := range RunnerFields() {
		if err := o.SetExtra(n, "runner"); err != nil {
			t.Fatalf("SetExtra(%q): %v", n, err)
		}
	}
	if errs := o.Validate(); len(errs) != 0 {
		t.Fatalf("Validate = %v", errs)
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var back Output
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, n := range RunnerFields() {
		if v, ok := back.Extra.Get(n); !ok || string(v) != `"runner"` {
			t.Errorf("decoded %q = %s %v", n, v, ok)
		}
	}
	res := Parse(string(b), ParseOptions{})
	if !res.OK || !slices.Contains(res.Flags, FlagReservedFieldIgnored) || len(res.Output.Extra) != 0 {
		t.Errorf("replayed output: ok %v flags %v extras %v", res.OK, res.Flags, res.Output.Extra)
	}
}

func TestReservedNames(t *testing.T) {
	cases := []struct {
		name string
		want bool
	}{
		{"failed", true},
		{"failed_branches", true},
		{"join", true},
		{"sub_run_id", true},
		{"sub_pipeline_status", true},
		{"model", true},
		{"provider", true},
		{"raw_response", true},
		{"Join", true},
		{"CONFIDENCE", true},
		{"Proceed_Reason", true},
		{"\u212aoin", false}, // Kelvin sign folds to k, not j
		{"\u017fub_run_id", true},
		{"confidence", true},
		{"action", false},
		{"failure", false},
		{"join_", false},
		{"", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Reserved(c.name); got != c.want {
				t.Errorf("Reserved(%q) = %v, want %v", c.name, got, c.want)
			}
		})
	}
	want := []string{FieldFailed, FieldFailedBranches, FieldJoin, FieldSubRunID, FieldSubPipelineStatus}
	if got := RunnerFields(); !slices.Equal(got, want) {
		t.Errorf("RunnerFields = %v, want %v", got, want)
	}
	RunnerFields()[0] = "changed"
	if RunnerFields()[0] != FieldFailed {
		t.Error("RunnerFields hands out its own array")
	}
}

// TestRunnerReportsReservedFlag: the structured-output runner passes the
// flag on with the accepted answer.
func TestRunnerReportsReservedFlag(t *testing.T) {
	p := &scripted{replies: []Completion{reply(`{"confidence": 0.9, "summary": "ok", "next_step_context": "", "failed": true}`)}}
	res, err := Complete(context.Background(), p, []Message{{RoleUser, "go"}}, ContractSchema())
	if err != nil || !res.Success {
		t.Fatalf("%v %+v", err, res)
	}
	if !slices.Equal(res.Flags, []string{FlagReservedFieldIgnored}) {
		t.Errorf("flags = %v", res.Flags)
	}
	if _, ok := res.Data.Extra.Get("failed"); ok {
		t.Error("the answer kept failed")
	}
	if !strings.Contains(res.Data.RawResponse, `"failed": true`) {
		t.Error("the raw response must keep the reply as received, for audit")
	}
}
