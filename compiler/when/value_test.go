package when

import (
	"encoding/json"
	"math"
	"testing"
)

// decode is a JSON text as encoding/json decodes it into an any, the
// values Truthy and Equal are given.
func decode(t *testing.T, src string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return v
}

// TestTruthy: Python's truth value of every JSON kind, each at the
// boundary between false and true (0 and the numbers on either side of
// it, "" and one character, [] and one item, {} and one key).
func TestTruthy(t *testing.T) {
	cases := []struct {
		json string
		want bool
	}{
		{`null`, false},
		{`false`, false},
		{`true`, true},
		{`0`, false},
		{`0.0`, false},
		{`-0.0`, false},
		{`0e10`, false},
		{`1`, true},
		{`-1`, true},
		{`5e-324`, true}, // the smallest number above 0
		{`-5e-324`, true},
		{`1.0`, true},
		{`""`, false},
		{`" "`, true},
		{`"0"`, true}, // a string's truth is its length, not its number
		{`"false"`, true},
		{`[]`, false},
		{`[null]`, true},
		{`[0]`, true},
		{`[[]]`, true},
		{`{}`, false},
		{`{"k": null}`, true},
		{`{"k": {}}`, true},
	}
	for _, c := range cases {
		if got := Truthy(decode(t, c.json)); got != c.want {
			t.Errorf("Truthy(%s) = %v, want %v", c.json, got, c.want)
		}
	}
	// Not JSON values as encoding/json decodes them: false.
	for _, v := range []any{1, int64(1), float32(1), json.Number("1"), map[string]string{"k": "v"}, []string{"a"}, struct{}{}} {
		if Truthy(v) {
			t.Errorf("Truthy(%#v) = true, want false (not a decoded JSON value)", v)
		}
	}
	if !Truthy(math.NaN()) { // Python: bool(float("nan")) is True
		t.Error("Truthy(NaN) = false, want true")
	}
}

// TestEqual: == over JSON values, each kind against itself on either
// side of equality and against every other kind, nested lists and
// objects included.
func TestEqual(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{`null`, `null`, true},
		{`null`, `false`, false},
		{`null`, `0`, false},
		{`null`, `""`, false},
		{`null`, `[]`, false},
		{`null`, `{}`, false},
		{`true`, `true`, true},
		{`false`, `false`, true},
		{`true`, `false`, false},
		{`true`, `1`, false}, // booleans never equal numbers
		{`false`, `0`, false},
		{`true`, `"true"`, false},
		{`1`, `1`, true},
		{`1`, `1.0`, true}, // one number however written
		{`1`, `1e0`, true},
		{`0`, `-0`, true},
		{`0.1`, `0.10000000000000001`, true}, // the same float64
		{`1`, `1.0000000000000002`, false},   // the next float64 above 1
		{`1`, `0.9999999999999999`, false},   // and below
		{`1`, `2`, false},
		{`1`, `"1"`, false}, // a string never equals a number
		{`1`, `true`, false},
		{`1`, `[1]`, false},
		{`""`, `""`, true},
		{`"a"`, `"a"`, true},
		{`"a"`, `"A"`, false},
		{`"a"`, `"a "`, false},
		{`""`, `null`, false},
		{`""`, `[]`, false},
		{`[]`, `[]`, true},
		{`[]`, `{}`, false},
		{`[1, "a", null]`, `[1.0, "a", null]`, true},
		{`[1, 2]`, `[2, 1]`, false}, // order counts
		{`[1]`, `[1, 1]`, false},
		{`[1, 1]`, `[1]`, false},
		{`[[1, [2]]]`, `[[1, [2]]]`, true},
		{`[[1, [2]]]`, `[[1, [3]]]`, false},
		{`[[1, [2]]]`, `[[1, ["2"]]]`, false},
		{`{}`, `{}`, true},
		{`{"a": 1, "b": [1, {"c": null}]}`, `{"b": [1.0, {"c": null}], "a": 1}`, true}, // key order does not count
		{`{"a": 1}`, `{"a": 1, "b": 1}`, false},
		{`{"a": 1, "b": 1}`, `{"a": 1}`, false},
		{`{"a": 1}`, `{"b": 1}`, false}, // same size, another key
		{`{"a": null}`, `{"b": null}`, false},
		{`{"a": {"b": 1}}`, `{"a": {"b": true}}`, false},
		{`{"a": {"b": 1}}`, `{"a": {"b": 1.0}}`, true},
		{`{"a": 1}`, `[["a", 1]]`, false},
	}
	for _, c := range cases {
		a, b := decode(t, c.a), decode(t, c.b)
		if got := Equal(a, b); got != c.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Equal(b, a); got != c.want {
			t.Errorf("Equal(%s, %s) = %v, want %v (the other way round)", c.b, c.a, got, c.want)
		}
	}
	// Values of other Go types equal nothing, themselves included.
	for _, v := range []any{1, int64(1), json.Number("1"), map[string]string{}, []string{}} {
		if Equal(v, v) {
			t.Errorf("Equal(%#v, itself) = true, want false (not a decoded JSON value)", v)
		}
	}
	if Equal(math.NaN(), math.NaN()) { // as Python: nan != nan
		t.Error("Equal(NaN, NaN) = true")
	}
}
