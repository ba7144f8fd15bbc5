package yamlread

import (
	"fmt"
	"testing"

	"go.yaml.in/yaml/v3"
)

func node(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

func reader(got *[]string) *Reader {
	return &Reader{Report: func(n *yaml.Node, warning bool, msg string) {
		*got = append(*got, fmt.Sprintf("%d:%d %v %s", n.Line, n.Column, warning, msg))
	}}
}

// TestInt reads whole numbers at, inside and past each end of a range.
func TestInt(t *testing.T) {
	tests := []struct {
		src  string
		want int
		msg  string
	}{
		{"0", 0, "1:1 false n: 0 is out of range: 1..10"},
		{"1", 1, ""},
		{"10", 10, ""},
		{"11", 0, "1:1 false n: 11 is out of range: 1..10"},
		{"1_0", 10, ""},
		{"0x0a", 10, ""},
		{"2.0", 2, ""},
		{"2.5", 0, "1:1 false n: want a whole number, got 2.5"},
		{"1e30", 0, "1:1 false n: 1e30 is out of range: 1..10"},
		{"99999999999999999999", 0, "1:1 false n: 99999999999999999999 is out of range: 1..10"},
		{".inf", 0, "1:1 false n: must be a finite number, not .inf"},
		{"'5'", 0, "1:1 false n: want a whole number, got a string"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			var got []string
			v, ok := reader(&got).Int(node(t, tt.src), "n", 1, 10)
			msg := ""
			if len(got) > 0 {
				msg = got[0]
			}
			if v != tt.want || ok != (tt.msg == "") || msg != tt.msg || len(got) > 1 {
				t.Errorf("Int(%s) = %d, %v, %v; want %d, %q", tt.src, v, ok, got, tt.want, tt.msg)
			}
		})
	}
}

func TestFloat(t *testing.T) {
	tests := []struct {
		src  string
		want float64
		msg  string
	}{
		{"-0.1", 0, "1:1 false x: -0.1 is out of range: 0..1"},
		{"0", 0, ""},
		{"1", 1, ""},
		{"1.0001", 0, "1:1 false x: 1.0001 is out of range: 0..1"},
		{".nan", 0, "1:1 false x: must be a finite number, not .nan"},
		{"true", 0, "1:1 false x: want a number, got a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			var got []string
			v, ok := reader(&got).Float(node(t, tt.src), "x", 0, 1)
			msg := ""
			if len(got) > 0 {
				msg = got[0]
			}
			if v != tt.want || ok != (tt.msg == "") || msg != tt.msg {
				t.Errorf("Float(%s) = %g, %v, %v; want %g, %q", tt.src, v, ok, got, tt.want, tt.msg)
			}
		})
	}
}

func TestMappingAndStrings(t *testing.T) {
	var got []string
	r := reader(&got)
	es, ok := r.Mapping(node(t, "a: 1\nb: &x [s, t]\na: 2\nc: *x\n"), "m")
	if !ok || len(es) != 3 || es[2].Key != "c" {
		t.Errorf("entries %+v", es)
	}
	if want := []string{`3:1 false m: key "a" is written twice (first at 1:1)`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reports %v, want %v", got, want)
	}
	got = nil
	ss, at, ok := r.Strings(es[2].Value, "c")
	if !ok || fmt.Sprint(ss) != "[s t]" || at[1].Column != 11 {
		t.Errorf("Strings through an alias = %v %v", ss, ok)
	}
	if _, ok := r.Mapping(node(t, "[1]"), "m"); ok || fmt.Sprint(got) != "[1:1 false m: want a mapping, got a list]" {
		t.Errorf("a list as a mapping: %v", got)
	}
	got = nil
	if _, ok := r.NonEmpty(node(t, "'  '"), "s"); ok || fmt.Sprint(got) != "[1:1 false s: must not be empty]" {
		t.Errorf("blank string: %v", got)
	}
	if !IsNull(node(t, "~")) || IsNull(node(t, "0")) || Kind(node(t, "{}")) != "a mapping" {
		t.Error("IsNull or Kind")
	}
}
