package store

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	tests := []string{
		``, ` `, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-`, `1e`,
		`-1.25e-10`, `"x"`, `"`, `"\"`, `"\u00e9"`, `"\u00g9"`, `"\u12"`, `"\x"`, `"\/\b\f\n\r\t"`, "\"a\x01\"", "\"\xff\xfe\"",
		`{}`, `{ }`, `{"a":1}`, `{"a" : 1 , "b":[1,2,{}]}`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `[]`, `[ ]`, `[1,]`,
		`[,1]`, `[1 2]`, `[[[]]]`, ` {"a":[true,false,null]} `, "\t[1]\n", `[1]x`, `1 2`, `{"a":1}}`, `[`, `]`,
		deep, "[" + deep + "]", strings.Repeat("[", 10001),
	}
	for _, s := range tests {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.40q) = %v, json.Valid = %v", s, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e-3,"x\u00e9",true,null]}`, `[`, `"\ud800"`, `-0.0E+1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}
