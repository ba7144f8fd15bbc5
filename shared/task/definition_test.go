package task

import "testing"

func TestJSONataLiteral(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{`{% 'plain' %}`, "plain", true},
		{`{% 'it\u0027s "quoted"\n\\ done' %}`, "it's \"quoted\"\n\\ done", true},
		{`{% '' %}`, "", true},
		{`{% $states.input %}`, "", false},
		{`{% 'a' & 'b' %}`, "", false},
		{`{% 'unterminated\' %}`, "", false},
		{`plain text`, "", false},
	}
	for _, tc := range tests {
		got, ok := jsonataLiteral(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("jsonataLiteral(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
