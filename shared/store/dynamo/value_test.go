package dynamo

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValueJSON(t *testing.T) {
	tests := []struct {
		name string
		v    Value
		json string
	}{
		{"string", S(`a "quoted" <tag>`), `{"S":"a \"quoted\" \u003ctag\u003e"}`},
		{"empty string", S(""), `{"S":""}`},
		{"number", N("12.5"), `{"N":"12.5"}`},
		{"string set", SS("a", "b"), `{"SS":["a","b"]}`},
		{"list", L(S("x"), N("1")), `{"L":[{"S":"x"},{"N":"1"}]}`},
		{"empty list", L(), `{"L":[]}`},
		{"nested list", L(L(S("deep"))), `{"L":[{"L":[{"S":"deep"}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil || string(b) != tt.json {
				t.Fatalf("Marshal = %s, %v; want %s", b, err, tt.json)
			}
			var back Value
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !back.Equal(tt.v) {
				t.Errorf("round trip = %v, want %v", back, tt.v)
			}
		})
	}
}

func TestValueAccessors(t *testing.T) {
	if s, ok := S("x").Str(); !ok || s != "x" {
		t.Errorf("S.Str = %q, %v", s, ok)
	}
	if _, ok := S("1").Num(); ok {
		t.Error("a string reads as a number")
	}
	if n, ok := N("1").Num(); !ok || n != "1" {
		t.Errorf("N.Num = %q, %v", n, ok)
	}
	if _, ok := N("1").Str(); ok {
		t.Error("a number reads as a string")
	}
	if l, ok := L(S("a")).List(); !ok || len(l) != 1 {
		t.Errorf("L.List = %v, %v", l, ok)
	}
	if s, ok := SS("a").StrSet(); !ok || len(s) != 1 {
		t.Errorf("SS.StrSet = %v, %v", s, ok)
	}
	var zero Value
	if _, ok := zero.Str(); ok || zero.Type() != "" {
		t.Error("the zero Value reads as a string")
	}
}

// Types the store never writes still decode, as values no accessor takes,
// so an item edited by hand gives a typed error instead of a panic.
func TestValueOtherTypes(t *testing.T) {
	for _, in := range []string{`{"BOOL":true}`, `{"NULL":true}`, `{"M":{"a":{"S":"b"}}}`, `{"NS":["1"]}`, `{"B":"AAE="}`} {
		var v Value
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if _, ok := v.Str(); ok {
			t.Errorf("%s reads as a string", in)
		}
		if _, err := json.Marshal(v); err == nil {
			t.Errorf("%s: written back without an error", in)
		}
	}
	r := reader{m: Item{aStatus: N("1"), aFlags: L(N("2")), aIndex: S("x")}}
	r.s(aStatus)
	if r.err == nil || !strings.Contains(r.err.Error(), `"status" is not a string`) {
		t.Errorf("reader error = %v", r.err)
	}
}

func TestValueJSONErrors(t *testing.T) {
	for _, in := range []string{`{}`, `{"S":"a","N":"1"}`, `{"S":1}`, `{"L":{"S":"a"}}`, `{"SS":"a"}`, `"a"`, `{"":"a"}`, `null`} {
		var v Value
		if err := json.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("%s decodes as %v", in, v)
		}
	}
	for _, v := range []Value{{}, SS()} {
		if b, err := json.Marshal(v); err == nil {
			t.Errorf("%#v encodes as %s", v, b)
		}
	}
}

// FuzzValue: any answer body decodes or fails without a panic, and a value
// the store could write decodes back to itself.
//
//	go test -run '^$' -fuzz FuzzValue -fuzztime 30s ./shared/store/dynamo
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"S":"a"}`, `{"N":"1.5"}`, `{"SS":["a","b"]}`, `{"L":[{"S":"x"},{"L":[]}]}`, `{"M":{}}`, `{"BOOL":true}`, `{}`, `null`, `{"S":"a","N":"1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v Value
		if json.Unmarshal(b, &v) != nil {
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			return // a type the store only reads, or an empty set
		}
		var back Value
		if err := json.Unmarshal(out, &back); err != nil || !back.Equal(v) {
			t.Fatalf("%s → %s → %v, %v", b, out, back, err)
		}
	})
}
