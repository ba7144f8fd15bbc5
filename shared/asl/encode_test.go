package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// encodeStateTo is the reference appendState is checked against: it writes a state with enc, "Type" first and its other fields
// in the order its struct declares them, and a newline after it. Nothing
// is written when it fails.
func encodeStateTo(enc *json.Encoder, st State) error {
	switch v := st.(type) {
	case *Pass:
		type alias Pass
		return enc.Encode(struct {
			Type string
			*alias
		}{v.Type(), (*alias)(v)})
	case *Task:
		type alias Task
		return enc.Encode(struct {
			Type string
			*alias
		}{v.Type(), (*alias)(v)})
	case *Choice:
		type alias Choice
		return enc.Encode(struct {
			Type string
			*alias
		}{v.Type(), (*alias)(v)})
	case *Parallel:
		type alias Parallel
		return enc.Encode(struct {
			Type string
			*alias
		}{v.Type(), (*alias)(v)})
	case *Map:
		type alias Map
		return enc.Encode(struct {
			Type string
			*alias
		}{v.Type(), (*alias)(v)})
	case *Wait:
		type alias Wait
		return enc.Encode(struct {
			Type string
			*alias
		}{v.Type(), (*alias)(v)})
	case *Succeed:
		type alias Succeed
		return enc.Encode(struct {
			Type string
			*alias
		}{v.Type(), (*alias)(v)})
	case *Fail:
		type alias Fail
		return enc.Encode(struct {
			Type string
			*alias
		}{v.Type(), (*alias)(v)})
	case nil:
		return errors.New("nil state")
	}
	return fmt.Errorf("unsupported state type %T", st)
}

// sameState checks appendState against encoding/json on st and, for a
// Parallel or a Map, on every state inside it.
func sameState(t *testing.T, name string, st State) {
	t.Helper()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	wantErr := encodeStateTo(enc, st)
	got, err := appendState(nil, st)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("state %q: appendState error %v, encoding/json's %v", name, err, wantErr)
	}
	if err != nil {
		return
	}
	if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
		t.Fatalf("state %q: appendState wrote\n%s\nencoding/json\n%s", name, got, w)
	}
	var inner []States
	switch v := st.(type) {
	case *Parallel:
		for _, b := range v.Branches {
			inner = append(inner, b.States)
		}
	case *Map:
		inner = append(inner, v.ItemProcessor.States)
	}
	for _, s := range inner {
		for n, st := range s.All() {
			sameState(t, n, st)
		}
	}
}

// TestAppendStateMatchesEncodingJSON: every state of the test data's
// definitions, and states holding the values that decide the encoding
// (escapes, numbers at the exponent bounds, nil and empty slices and
// maps, values of types json.Unmarshal does not produce), is written
// byte for byte as encoding/json writes it.
func TestAppendStateMatchesEncodingJSON(t *testing.T) {
	var files []string
	for _, g := range []string{"testdata/*.json", "../../compiler/testdata/*.asl.json", "../../compiler/testdata/*/*.asl.json"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := slowDecode(b)
		if err != nil {
			continue
		}
		for name, st := range m.States.All() {
			sameState(t, name, st)
			n++
		}
	}
	if n < 20 {
		t.Fatalf("only %d states in the test data", n)
	}
	var all strings.Builder
	for r := rune(0); r < 0x80; r++ {
		all.WriteRune(r)
	}
	all.WriteString("é\u2028\u2029\xff\xc3 <>&%{}")
	numbers := []any{0.0, math.Copysign(0, -1), 1.0, -1.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789012345678901234.0, 5e-324, math.MaxFloat64, 0.1, 1e-10}
	odd := []any{3, int64(-4), []string{"a"}, map[string]string{"b": "<c>"}, json.RawMessage(`{ "x" : [1, 2] }`), json.Number("12"), struct{ A int }{1}}
	cases := map[string]State{
		"escapes":   &Pass{Comment: all.String(), Output: map[string]any{all.String(): all.String(), "": []any{}}, Assign: map[string]any{"z": nil, "a": map[string]any{}}, Next: "N"},
		"numbers":   &Pass{Output: numbers, End: true},
		"odd types": &Succeed{Output: odd},
		"task": &Task{Resource: "r", Arguments: "{% 1 %}", TimeoutSeconds: 30.0, HeartbeatSeconds: "{% 5 %}", Credentials: map[string]any{},
			Retry: []Retrier{{ErrorEquals: nil}, {ErrorEquals: []string{}, IntervalSeconds: 2, MaxAttempts: Attempts(0), BackoffRate: 1.5, MaxDelaySeconds: 9, JitterStrategy: JitterFull, Comment: "c"}},
			Catch: []Catcher{{ErrorEquals: nil, Next: ""}, {ErrorEquals: []string{"a", "b"}, Output: false, Assign: map[string]any{"v": 1.0}, Next: "N", Comment: "c"}}, End: true},
		"task, empty slices": &Task{Resource: "", Retry: []Retrier{}, Catch: []Catcher{}, Assign: map[string]any{}},
		"choice, nil":        &Choice{},
		"choice":             &Choice{Choices: []ChoiceRule{{}, {Comment: "c", Condition: true, Output: "o", Assign: map[string]any{"a": "b"}, Next: "N"}}, Default: "D", Output: 1.0, Assign: map[string]any{"x": 2.0}},
		"parallel, nil":      &Parallel{},
		"parallel": &Parallel{Arguments: []any{}, Branches: []Branch{{}, {Comment: "b", StartAt: "S", States: mustStates(t, "S", &Succeed{Output: "x"})}},
			Retry: []Retrier{{ErrorEquals: []string{StatesALL}}}, Next: "N"},
		"map, empty config": &Map{ItemProcessor: ItemProcessor{ProcessorConfig: &ProcessorConfig{}, StartAt: "M", States: mustStates(t, "M", &Pass{End: true})}},
		"map": &Map{Items: "{% $x %}", ItemSelector: map[string]any{"a": 1.0}, MaxConcurrency: 2.0, Output: nil,
			ItemProcessor: ItemProcessor{ProcessorConfig: &ProcessorConfig{Mode: ModeInline, ExecutionType: "STANDARD"}}, Catch: []Catcher{{ErrorEquals: []string{"e"}, Next: "N"}}, End: true},
		"map, no config":    &Map{},
		"wait":              &Wait{Seconds: 1.0, Timestamp: "t", Output: "o", Assign: map[string]any{"a": 1.0}, Next: "N", End: true},
		"wait, empty":       &Wait{},
		"succeed":           &Succeed{Comment: "c", QueryLanguage: JSONata},
		"fail":              &Fail{Comment: "c", QueryLanguage: JSONata, Error: "E", Cause: "C"},
		"fail, empty":       &Fail{},
		"NaN":               &Pass{Output: math.NaN()},
		"infinite backoff":  &Task{Retry: []Retrier{{BackoffRate: math.Inf(1)}}},
		"unsupported value": &Pass{Output: map[string]any{"c": make(chan int)}},
	}
	for name, st := range cases {
		t.Run(name, func(t *testing.T) { sameState(t, name, st) })
	}
	if _, err := appendState(nil, nil); err == nil || err.Error() != "nil state" {
		t.Errorf("nil state: %v", err)
	}
}

func mustStates(t *testing.T, name string, st State) States {
	t.Helper()
	var s States
	if err := s.Add(name, st); err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzAppendState checks appendState against encoding/json on every
// state of any definition Decode reads, and on any string and number.
func FuzzAppendState(f *testing.F) {
	if b, err := os.ReadFile("testdata/all_states.asl.json"); err == nil {
		f.Add(b, "x", 1.0)
	}
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Output":{"b":[1e21,"\u2028"],"a":null},"End":true}}}`), "\x00\u2029\xff", 1e-7)
	f.Fuzz(func(t *testing.T, data []byte, s string, x float64) {
		sameState(t, "fuzz", &Pass{Comment: s, Output: []any{s, x, map[string]any{s: x}}})
		m, err := Decode(data)
		if err != nil {
			return
		}
		for name, st := range m.States.All() {
			sameState(t, name, st)
		}
	})
}
