package cron

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	s, err := Parse("*/20 9-11 * jan,JUL mon-fri,7")
	if err != nil {
		t.Fatal(err)
	}
	picked := func(set []bool) (out []int) {
		for v, ok := range set {
			if ok {
				out = append(out, v)
			}
		}
		return out
	}
	check := func(name string, got, want []int) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s = %v, want %v", name, got, want)
			}
		}
	}
	check("minutes", picked(s.Sets[0]), []int{0, 20, 40})
	check("hours", picked(s.Sets[1]), []int{9, 10, 11})
	check("months", picked(s.Sets[3]), []int{1, 7})
	check("weekdays", picked(s.Sets[4]), []int{0, 1, 2, 3, 4, 5}) // 7 folds into Sunday
	if s.Text[4] != "mon-fri,7" {
		t.Errorf("text %q", s.Text[4])
	}
	for _, c := range []struct{ expr, want string }{
		{"* * *", "has 3 fields"},
		{"60 * * * *", `minute field "60": 60 is outside 0-59`},
		{"5/2 * * * *", "a step needs * or a range"},
		{"*/0 * * * *", "must be a positive number"},
		{"10-5 * * * *", "backwards"},
		{"1,,2 * * * *", "empty list item"},
		{"* * * foo *", `"foo" is not a number`},
	} {
		if _, err := Parse(c.expr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want %q", c.expr, err, c.want)
		}
	}
}
