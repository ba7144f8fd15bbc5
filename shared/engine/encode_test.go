package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// sameAsEncodingJSON fails unless encodeJSON(v) is byte for byte what
// json.Marshal(v) gives, errors included.
func sameAsEncodingJSON(t *testing.T, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, err := encodeJSON(v)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("encodeJSON(%#v) error %v, encoding/json error %v", v, err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeJSON(%#v)\n got %s\nwant %s", v, got, want)
	}
}

func TestEncodeJSONMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"null", nil},
		{"booleans", []any{true, false}},
		{"integers", []any{0.0, math.Copysign(0, -1), 1.0, -42.0, 1e20, 123456789012345678.0}},
		{"fractions", []any{0.1, -2.5, 1.0 / 3, 0.000001, 123.456e-3}},
		{"exponents", []any{1e21, 1e-7, -3.2e-9, 5e300, math.SmallestNonzeroFloat64, math.MaxFloat64}},
		{"go integers", []any{3, int64(-7)}},
		{"plain string", "hello"},
		{"escapes", "quote \" backslash \\ newline \n tab \t cr \r bs \b ff \f nul \x00 unit \x1f"},
		{"HTML", "<script>a && b</script>"},
		{"unicode", "é ü 漢字 🎉"},
		{"line separators", "a\u2028b\u2029c"},
		{"invalid UTF-8", "a\xffb\xc3(c"},
		{"empty containers", map[string]any{"o": map[string]any{}, "a": []any{}}},
		{"nil containers", map[string]any{"o": map[string]any(nil), "a": []any(nil)}},
		{"key order and escaping", map[string]any{"b": 1.0, "a": 2.0, "<k>": 3.0, "A": 4.0, "é": 5.0, "": 6.0}},
		{"nested", map[string]any{"steps": map[string]any{"s1": map[string]any{"summary": "done", "confidence": 0.9,
			"flags": []any{"x", nil, true, map[string]any{"deep": []any{1.5}}}}}}},
		{"raw JSON", map[string]any{"raw": json.RawMessage(`{"a": [1, 2]}`)}},
		{"struct falls back", map[string]any{"s": struct {
			A int `json:"a"`
		}{1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { sameAsEncodingJSON(t, tt.v) })
	}
}

func TestEncodeJSONRejectsWhatEncodingJSONRejects(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"NaN", math.NaN()},
		{"infinity", map[string]any{"x": []any{math.Inf(-1)}}},
		{"channel", map[string]any{"c": make(chan int)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { sameAsEncodingJSON(t, tt.v) })
	}
}

// FuzzEncodeJSON compares encodeJSON with encoding/json on every JSON
// document the fuzzer finds, decoded to plain values.
func FuzzEncodeJSON(f *testing.F) {
	for _, s := range []string{`null`, `{"a":[1,2.5,"x"],"b":{"c":true}}`, `"\u2028<&>\ud800"`, `[1e300,-1e-300,0.1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		sameAsEncodingJSON(t, v)
	})
}

// fill sets every exported field of the struct v points to, recursively,
// to a value that is not empty; depth bounds the paths' children.
func fill(t *testing.T, v reflect.Value, depth int) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString("s<" + sf.Name + ">\u2028")
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Interface:
			f.Set(reflect.ValueOf(map[string]any{"k": []any{1.5, "x&y", nil, true}, sf.Name: map[string]any{}}))
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]any{"b": 2.0, "a": "v"}))
		case reflect.Slice:
			if f.Type().Elem() == reflect.TypeFor[*path]() {
				if depth > 0 {
					c := &path{}
					fill(t, reflect.ValueOf(c).Elem(), depth-1)
					f.Set(reflect.ValueOf([]*path{c, nil}))
				}
				continue
			}
			if f.Type() == reflect.TypeFor[json.RawMessage]() {
				f.SetBytes([]byte(` {"raw": [1, 2]} `))
				continue
			}
			s := reflect.MakeSlice(f.Type(), 2, 2)
			for j := 0; j < 2; j++ {
				switch e := s.Index(j); e.Kind() {
				case reflect.Int:
					e.SetInt(int64(j + 3))
				case reflect.Bool:
					e.SetBool(j == 0)
				case reflect.Interface:
					e.Set(reflect.ValueOf(map[string]any{"item": float64(j)}))
				}
			}
			f.Set(s)
		case reflect.Struct:
			if f.Type() == reflect.TypeFor[time.Time]() {
				f.Set(reflect.ValueOf(time.Date(2026, 3, 1, 12, i, 5, 123456789, time.UTC)))
				continue
			}
			t.Fatalf("field %s: unexpected struct %s", sf.Name, f.Type())
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			fill(t, p.Elem(), depth)
			f.Set(p)
		default:
			t.Fatalf("field %s: unexpected kind %s", sf.Name, f.Kind())
		}
	}
}

func TestSnapshotEncoding(t *testing.T) {
	full := &snapshot{}
	fill(t, reflect.ValueOf(full).Elem(), 2)
	scheduled := &snapshot{V: snapshotVersion, RunID: "r", Status: StatusRunning, Root: &path{State: "A", Phase: phaseTask,
		Input: map[string]any{"a": 1.0}, Task: &taskCall{Resource: "res", Payload: map[string]any{"p": "<x>"}}}}
	enc, err := encodeJSON(scheduled.Root.Task.Payload)
	if err != nil {
		t.Fatal(err)
	}
	scheduled.Root.Task.encoded = enc
	tests := []struct {
		name string
		s    *snapshot
	}{
		{"empty", &snapshot{}},
		{"empty root", &snapshot{Root: &path{}}},
		{"every field set", full},
		{"a task scheduled", scheduled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.s.encode(0)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encode\n got %s\nwant %s", got, want)
			}
		})
	}
}
