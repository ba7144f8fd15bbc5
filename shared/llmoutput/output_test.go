package llmoutput

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestNewAndValidate(t *testing.T) {
	nan := New(math.NaN(), "s", "")
	stop := New(1, "Approved by human operator", "")
	stop.Proceed = false
	cases := []struct {
		name  string
		out   *Output
		codes []string
	}{
		{"valid", New(1, "Webhook delivered: HTTP 200", "ok"), nil},
		{"confidence above one", New(1.5, "s", ""), []string{"confidence:out_of_range"}},
		{"confidence NaN", nan, []string{"confidence:out_of_range"}},
		{"blank summary", New(0.5, " ", ""), []string{"summary:empty_field"}},
		{"stop without reason", stop, nil}, // the reference contract accepts it
		{"reserved extra", &Output{Confidence: 1, Summary: "s", Proceed: true, Extra: Extras{{Name: "model", Value: json.RawMessage(`"x"`)}}}, []string{"model:invalid_value"}},
		{"broken extra", &Output{Confidence: 1, Summary: "s", Proceed: true, Extra: Extras{{Name: "x", Value: json.RawMessage(`{`)}}}, []string{"x:syntax"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := errorCodes(c.out.Validate())
			if len(got) != len(c.codes) || (len(got) > 0 && !reflect.DeepEqual(got, c.codes)) {
				t.Errorf("Validate = %v, want %v", got, c.codes)
			}
		})
	}
}

func TestSetExtra(t *testing.T) {
	o := New(1, "Webhook delivered: HTTP 200", "")
	if err := o.SetExtra("status_code", 200); err != nil {
		t.Fatal(err)
	}
	if err := o.SetExtra("body", map[string]any{"ok": true}); err != nil {
		t.Fatal(err)
	}
	if err := o.SetExtra("status_code", 201); err != nil {
		t.Fatal(err)
	}
	if err := o.SetExtra("summary", "x"); err == nil || !strings.Contains(err.Error(), "contract") {
		t.Errorf("SetExtra(summary) = %v, want a contract-name error", err)
	}
	if err := o.SetExtra("bad", math.Inf(1)); err == nil {
		t.Error("SetExtra accepted +Inf")
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"confidence":1,"summary":"Webhook delivered: HTTP 200","next_step_context":"","proceed":true,"status_code":201,"body":{"ok":true}}`
	if string(b) != want {
		t.Errorf("json.Marshal = %s\nwant %s", b, want)
	}
	if res := Parse(string(b), ParseOptions{}); !res.OK {
		t.Errorf("a built answer does not parse: %v", res.Errors)
	}
}

func TestMarshalFormsAndMap(t *testing.T) {
	res := Parse(`{"confidence": 0.8, "summary": "s", "next_step_context": "n", "proceed": false,
		"proceed_reason": "r", "reasoning": {"supports": ["a"], "weight": 2}, "artifacts": {"b.txt": "B", "a.txt": "A"},
		"action": "page", "count": 3, "nested": {"z": [1, "two", null]}}`, ParseOptions{})
	if !res.OK {
		t.Fatal(res.Errors)
	}
	o := res.Output
	o.Model, o.Provider, o.RawResponse = "claude-x", "anthropic", "the raw <reply> & more"

	full, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	wantFull := `{"confidence":0.8,"summary":"s","next_step_context":"n","proceed":false,"proceed_reason":"r",` +
		`"reasoning":{"supports":["a"],"weight":2},"artifacts":{"a.txt":"A","b.txt":"B"},"action":"page","count":3,` +
		`"nested":{"z":[1,"two",null]},"model":"claude-x","provider":"anthropic","raw_response":"the raw \u003creply\u003e \u0026 more"}`
	if string(full) != wantFull {
		t.Errorf("json.Marshal\n got %s\nwant %s", full, wantFull)
	}
	compact, err := o.CompactJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(compact), "raw_response") || !strings.Contains(string(compact), `"provider":"anthropic"`) {
		t.Errorf("CompactJSON = %s", compact)
	}

	m := o.Map()
	if _, ok := m["raw_response"]; ok {
		t.Error("Map holds raw_response")
	}
	want := map[string]any{
		"confidence": 0.8, "summary": "s", "next_step_context": "n", "proceed": false, "proceed_reason": "r",
		"reasoning": map[string]any{"supports": []any{"a"}, "weight": 2.0},
		"artifacts": map[string]any{"a.txt": "A", "b.txt": "B"},
		"action":    "page", "count": 3.0, "nested": map[string]any{"z": []any{1.0, "two", nil}},
		"model": "claude-x", "provider": "anthropic",
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("Map\n got %#v\nwant %#v", m, want)
	}

	var back Output
	if err := json.Unmarshal(full, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, o) {
		t.Errorf("UnmarshalJSON\n got %#v\nwant %#v", back, *o)
	}
}

func TestUnmarshalDefaultsAndErrors(t *testing.T) {
	var o Output
	if err := json.Unmarshal([]byte(`{"confidence":0.5,"summary":"s","next_step_context":"","b":1,"a":2}`), &o); err != nil {
		t.Fatal(err)
	}
	if !o.Proceed || len(o.Extra) != 2 || o.Extra[0].Name != "b" || o.Extra[1].Name != "a" {
		t.Errorf("decoded %+v: want proceed true and extras b, a in order", o)
	}
	for _, bad := range []string{`[]`, `{"confidence":"x"}`, `{"summary":1}`, `{`} {
		if err := json.Unmarshal([]byte(bad), &o); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
	if _, err := (Output{Confidence: math.Inf(1)}).MarshalJSON(); err == nil {
		t.Error("MarshalJSON encoded an infinite confidence")
	}
}

func TestParseKeepsExtrasAndDropsExecutorFields(t *testing.T) {
	res := Parse(`{"model": "fake", "confidence": 1, "b": 1, "summary": "s", "a": {"y": 1, "x": 2}, "next_step_context": "", "raw_response": "x"}`, ParseOptions{})
	if !res.OK {
		t.Fatal(res.Errors)
	}
	o := res.Output
	if o.Model != "" || o.RawResponse != "" {
		t.Errorf("executor fields taken from the agent: %+v", o)
	}
	if len(o.Extra) != 2 || o.Extra[0].Name != "b" || string(o.Extra[1].Value) != `{"y":1,"x":2}` {
		t.Errorf("extras = %+v", o.Extra)
	}
	if v, ok := o.Extra.Get("a"); !ok || string(v) != `{"y":1,"x":2}` {
		t.Errorf("Extra.Get(a) = %s, %v", v, ok)
	}
	if _, ok := o.Extra.Get("zzz"); ok {
		t.Error("Extra.Get found a missing field")
	}
}
