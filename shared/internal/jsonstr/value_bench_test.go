package jsonstr

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// benchValue is a step's Task payload as the engine holds it: decoded
// JSON, a few small objects.
func benchValue(b *testing.B) any {
	var v any
	err := json.Unmarshal([]byte(`{"attempt":1,"mode":"step","pipeline":{"config":"1550c1a26b68","name":"bench","run_ended_error":true,"stage":"testing"},
	"run":{"execution":"arn:aws:states:local:000000000000:execution:bench:run-1","id":"run-1","parent_run_id":"","started_at":"2026-12-03T14:40:21.123456789Z"},
	"step":{"confidence_threshold":0.75,"executor":"scripted","name":"s1","on_abort":"notify","on_failure":{"policy":"abort"},"on_low_confidence":"escalate","prompt_template":"{{ steps.s0.summary }}"},
	"steps":{"s0":{"confidence":0.9,"next_step_context":"go on","summary":"done"}},"trigger":{},"usage":{"cost_usd":0,"input_tokens":0,"output_tokens":0}}`), &v)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkAppendValue encodes a step's Task payload as the engine does.
func BenchmarkAppendValue(b *testing.B) {
	v := benchValue(b)
	other := func([]byte, any) ([]byte, error) { return nil, errors.New("other") }
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = AppendValue(dst[:0], v, true, other); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSortMembers pins sortMembers to byte order on each side of
// maxInsertionSort, and AppendValue to encoding/json on objects of 0 to
// 40 members (past the stack array of 16 too).
func TestSortMembers(t *testing.T) {
	for _, n := range []int{0, 1, 2, maxInsertionSort - 1, maxInsertionSort, maxInsertionSort + 1, 16, 17, 40, 200} {
		ms := make([]member, n)
		m := make(map[string]any, n)
		for i := range ms {
			// Keys in a scrambled order, sharing prefixes, some non-ASCII.
			k := fmt.Sprintf("k%d\u00e9%d", (i*7919)%(n+1), i%3)
			ms[i] = member{k, float64(i)}
			m[k] = float64(i)
		}
		sortMembers(ms)
		if !slices.IsSortedFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) }) {
			t.Errorf("%d members: not sorted: %v", n, ms)
		}
		got, err := AppendValue(nil, m, true, nil)
		want, _ := json.Marshal(m)
		if err != nil || string(got) != string(want) {
			t.Errorf("%d members: %s (%v), encoding/json %s", n, got, err, want)
		}
	}
}
