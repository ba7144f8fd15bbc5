package compiler

import "testing"

func TestErrorSummary(t *testing.T) {
	d := func(msg string) Diagnostic { return Diagnostic{Msg: msg} }
	tests := []struct {
		list Diagnostics
		want string
	}{
		{nil, "no errors"},
		{Diagnostics{d("a")}, d("a").String()},
		{Diagnostics{d("a"), d("b")}, d("a").String() + " (and 1 more error)"},
		{Diagnostics{d("a"), d("b"), d("c")}, d("a").String() + " (and 2 more errors)"},
	}
	for _, tt := range tests {
		if got := (&Error{List: tt.list}).Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
