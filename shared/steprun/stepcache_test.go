package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// resetSeqSteps empties the decoded-step cache for a test and again after it.
func resetSeqSteps(t *testing.T) {
	t.Helper()
	clearSeqSteps := func() {
		seqSteps.mu.Lock()
		clear(seqSteps.m)
		seqSteps.mu.Unlock()
	}
	clearSeqSteps()
	t.Cleanup(clearSeqSteps)
}

func cachedSteps() int {
	seqSteps.mu.RLock()
	defer seqSteps.mu.RUnlock()
	return len(seqSteps.m)
}

// freshStep decodes text as the handler did before the cache.
func freshStep(t *testing.T, text string) *pipeline.Step {
	t.Helper()
	st, err := decodeStep[pipeline.Step](&task.Request{Mode: task.ModeStep, Step: json.RawMessage(text)})
	if err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return st
}

// TestDecodeSeqStep pins that the cache changes nothing a step Task
// reads: every text decodes to what json.Unmarshal makes of it; a step
// that holds nothing handed on is decoded once and shared, any other is
// decoded for every Task; an error is decodeStep's and is not kept.
func TestDecodeSeqStep(t *testing.T) {
	resetSeqSteps(t)
	plain := `{"confidence_threshold":0.75,"executor":"scripted","name":"s1","on_abort":"notify","on_failure":{"policy":"abort"},"on_low_confidence":"escalate","prompt_template":"{{ steps.s0.summary }}"}`
	cases := []struct {
		name   string
		text   string
		shared bool
	}{
		{"plain", plain, true},
		{"executor_config", `{"name":"s","executor":"scripted","executor_config":{"model":"{{ vars.m }}","n":[1,{"a":"b"}]}}`, true},
		{"retry", `{"name":"s","executor":"scripted","retry":{"max_attempts":2}}`, true},
		{"no name", `{"executor":"scripted"}`, false},
		{"empty executor_config", `{"name":"s","executor":"scripted","executor_config":{}}`, false},
		{"verifier", `{"name":"s","executor":"scripted","verifier":{"executor":"scripted","trigger":{"always":true}}}`, false},
		{"loop", `{"name":"s","executor":"scripted","loop_until":{"confidence":0.9,"max_iterations":2}}`, false},
		{"agent", `{"name":"s","executor":"scripted","agent":{}}`, false},
		{"grounding", `{"name":"s","executor":"scripted","grounding":{"agent":"judge"}}`, false},
		{"checks", `{"name":"s","executor":"scripted","deterministic_checks":[{"name":"c","type":"human"}]}`, false},
		{"calibration", `{"name":"s","executor":"scripted","calibration":{"bin_width":0.1,"n_min":5}}`, false},
		{"failure webhook", `{"name":"s","executor":"scripted","on_failure":{"policy":"abort","webhook":{"url":"https://example.com"}}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := &task.Request{Mode: task.ModeStep, Step: json.RawMessage(c.text)}
			first, err := decodeSeqStep(req)
			if err != nil {
				t.Fatal(err)
			}
			// The same text in another buffer, as the next Task brings it.
			again, err := decodeSeqStep(&task.Request{Mode: task.ModeStep, Step: json.RawMessage([]byte(c.text))})
			if err != nil {
				t.Fatal(err)
			}
			if want := freshStep(t, c.text); !reflect.DeepEqual(first, want) || !reflect.DeepEqual(again, want) {
				t.Errorf("decoded %+v and %+v, json.Unmarshal %+v", first, again, want)
			}
			if got := first == again; got != c.shared {
				t.Errorf("shared = %v, want %v", got, c.shared)
			}
		})
	}

	bad := &task.Request{Mode: task.ModeStep, Step: json.RawMessage(`{"name":"s","timeout_seconds":"ten"}`)}
	n := cachedSteps()
	_, want := decodeStep[pipeline.Step](bad)
	for range 2 {
		if _, err := decodeSeqStep(bad); err == nil || err.Error() != want.Error() || reflect.TypeOf(err) != reflect.TypeOf(want) {
			t.Errorf("err = %v, want %v", err, want)
		}
	}
	if cachedSteps() != n {
		t.Errorf("a step that did not decode was kept")
	}
}

// TestSeqStepsBound pins the cache's bound: it grows to maxCachedSteps
// texts and is emptied when one more comes.
func TestSeqStepsBound(t *testing.T) {
	resetSeqSteps(t)
	add := func(i int) {
		t.Helper()
		text := fmt.Sprintf(`{"name":"s%d","executor":"scripted"}`, i)
		if _, err := decodeSeqStep(&task.Request{Mode: task.ModeStep, Step: json.RawMessage(text)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range maxCachedSteps - 1 {
		add(i)
	}
	if n := cachedSteps(); n != maxCachedSteps-1 {
		t.Fatalf("below the bound: %d steps kept, want %d", n, maxCachedSteps-1)
	}
	add(maxCachedSteps - 1)
	if n := cachedSteps(); n != maxCachedSteps {
		t.Fatalf("at the bound: %d steps kept, want %d", n, maxCachedSteps)
	}
	add(maxCachedSteps)
	if n := cachedSteps(); n != 1 {
		t.Fatalf("above the bound: %d steps kept, want 1 (emptied, then the new one)", n)
	}
}

// TestSharedStepUnchanged runs shared steps through the handler and
// checks that nothing changed the decoded step the next Task gets.
func TestSharedStepUnchanged(t *testing.T) {
	resetSeqSteps(t)
	e := newEnv(t, `s: ['{"confidence": 0.9, "summary": "ok", "next_step_context": "", "artifacts": {"a": "x"}}', '{"confidence": 0.2, "summary": "low", "next_step_context": ""}']`)
	st := seqStep("s", "{{ run_id }} {{ current_step }}")
	st.ExecutorConfig = map[string]any{"model": "{{ pipeline_name }}", "list": []any{"{{ run_id }}", map[string]any{"k": "v"}}}
	req := newRequest(t, task.ModeStep, st)
	want := freshStep(t, string(req.Step))
	for i, status := range []string{task.StatusCompleted, task.StatusEscalated} {
		req.Attempt = i + 1
		resp, err := e.h.Respond(context.Background(), req)
		if err != nil || resp.Status != status {
			t.Fatalf("Task %d: %v %v, want %s", i+1, resp.Status, err, status)
		}
		got, err := decodeSeqStep(&req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after Task %d the shared step is %+v, want %+v", i+1, got, want)
		}
	}
	calls := e.prov.Calls()
	if len(calls) != 2 || calls[0].Config["model"] != "demo" || calls[1].Config["model"] != "demo" {
		t.Errorf("executor calls %+v, want the rendered config each time", calls)
	}
}

// TestBindingsSize checks that a step's bindings never outgrow the map
// they are made in: bindingsSize bounds their entries in every scope.
func TestBindingsSize(t *testing.T) {
	h := &Handler{}
	full := task.Request{Pipeline: task.Pipeline{Include: []string{"a.b", "c", "d.e.f"}, Vars: map[string]string{"v1": "1", "v2": "2"}}}
	trig := map[string]any{"team": "t", "labels": map[string]any{}, "a": map[string]any{"b": 1}, "c": 2, "d": map[string]any{"e": map[string]any{"f": 3}}}
	for _, c := range []struct {
		name string
		req  task.Request
		trig map[string]any
		sc   scope
	}{
		{"plain", task.Request{}, map[string]any{}, scope{current: "s"}},
		{"team, include, vars", full, trig, scope{current: "s"}},
		{"loop", full, trig, scope{current: "s", loop: map[string]any{}}},
		{"fan-out item", full, trig, scope{current: "s", item: &fanItem{as: "x", value: 1}}},
		{"failure", full, trig, scope{current: "s", failure: map[string]any{}}},
	} {
		b := h.bindings(context.Background(), &c.req, c.trig, c.sc)
		if n, max := len(b), bindingsSize(&c.req, c.sc); n > max {
			t.Errorf("%s: %d bindings, made for %d", c.name, n, max)
		}
	}
}

// TestPromptHash pins promptHash to store.PromptHash, cached or not, and
// its cache's bound: it grows to maxCachedTemplates templates and is
// emptied when one more comes.
func TestPromptHash(t *testing.T) {
	clearHashes := func() {
		promptHashes.mu.Lock()
		clear(promptHashes.m)
		promptHashes.mu.Unlock()
	}
	clearHashes()
	t.Cleanup(clearHashes)
	size := func() int {
		promptHashes.mu.RLock()
		defer promptHashes.mu.RUnlock()
		return len(promptHashes.m)
	}
	for _, src := range []string{"", "  ", "{{ steps.s0.summary }}", "a\r\nb", "a\nb", "start"} {
		for range 2 { // computed, then cached
			if got, want := promptHash(src), store.PromptHash(src); got != want {
				t.Errorf("promptHash(%q) = %q, want %q", src, got, want)
			}
		}
	}
	clearHashes()
	for i := range maxCachedTemplates - 1 {
		promptHash(fmt.Sprint("p", i))
	}
	if n := size(); n != maxCachedTemplates-1 {
		t.Fatalf("below the bound: %d kept", n)
	}
	promptHash("at")
	if n := size(); n != maxCachedTemplates {
		t.Fatalf("at the bound: %d kept", n)
	}
	promptHash("above")
	if n := size(); n != 1 || promptHash("above") != store.PromptHash("above") {
		t.Fatalf("above the bound: %d kept, want 1", n)
	}
}
