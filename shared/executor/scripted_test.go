package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

const responsesYAML = `# scripted replies
triage:
  - "not json at all"
  - {confidence: 0.9, summary: disk full, next_step_context: db-1}
  - {error: timeout}
  - {error: "http 500"}
triage:verifier: '{"confidence": 0.8, "summary": "agrees", "next_step_context": ""}'
fan/0: ['{"confidence":1,"summary":"item 0","next_step_context":""}']
approve-deploy:
  - approve
  - {decision: reject, by: oncall-lead, comment: too risky}
  - Rejected
  - maybe
  - {error: timeout}
`

func mustResponses(t *testing.T, src string) *Responses {
	t.Helper()
	r, err := ParseResponses("responses.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResponsesNext(t *testing.T) {
	r := mustResponses(t, responsesYAML)
	if got := r.Steps(); !reflect.DeepEqual(got, []string{"approve-deploy", "fan/0", "triage", "triage:verifier"}) {
		t.Errorf("Steps = %v", got)
	}
	steps := []struct {
		key, text, fault, msg string
	}{
		{key: "triage", text: "not json at all"},
		{key: "triage", text: `{"confidence":0.9,"next_step_context":"db-1","summary":"disk full"}`},
		{key: "triage", fault: fault.NameExecutorTimeout, msg: `step "triage": scripted timeout (responses.yaml:5:5)`},
		{key: "triage", fault: fault.NameExecutorUnavailable, msg: `step "triage": scripted error "http 500" (responses.yaml:6:5)`},
		{key: "triage", fault: fault.NameConfigError, msg: `responses.yaml: step "triage" has no scripted reply left (all 4 used)`},
		{key: "triage:verifier", text: `{"confidence": 0.8, "summary": "agrees", "next_step_context": ""}`},
		{key: "fan/0", text: `{"confidence":1,"summary":"item 0","next_step_context":""}`},
		{key: "fan/1", fault: fault.NameConfigError, msg: `responses.yaml: no scripted replies for step "fan/1"`},
		{key: "approve-deploy", text: "approve"},
		{key: "approve-deploy", fault: fault.NameConfigError, msg: `responses.yaml:11:5: step "approve-deploy": a decision is not a model reply`},
	}
	for i, s := range steps {
		text, err := r.Next(s.key)
		if s.fault != "" {
			if fault.Name(err) != s.fault || err.Error() != s.msg {
				t.Errorf("call %d (%s): err = %v (%s), want %s %q", i, s.key, err, fault.Name(err), s.fault, s.msg)
			}
			continue
		}
		if err != nil || text != s.text {
			t.Errorf("call %d (%s) = %q, %v; want %q", i, s.key, text, err, s.text)
		}
	}
	want := map[string]int{"triage": 4, "triage:verifier": 1, "fan/0": 1, "approve-deploy": 2}
	if got := r.Consumed(); !reflect.DeepEqual(got, want) {
		t.Errorf("Consumed = %v, want %v", got, want)
	}
}

func TestResponsesDecision(t *testing.T) {
	r := mustResponses(t, responsesYAML)
	want := []struct {
		d     Decision
		fault string
	}{
		{d: Decision{Approved: true}},
		{d: Decision{Approved: false, By: "oncall-lead", Comment: "too risky"}},
		{d: Decision{Approved: false}},
		{fault: fault.NameConfigError},
		{fault: fault.NameExecutorTimeout},
		{fault: fault.NameConfigError},
	}
	for i, w := range want {
		d, err := r.Decision("approve-deploy")
		if w.fault != "" {
			if fault.Name(err) != w.fault {
				t.Errorf("decision %d: err = %v, want %s", i, err, w.fault)
			}
			continue
		}
		if err != nil || d != w.d {
			t.Errorf("decision %d = %+v, %v; want %+v", i, d, err, w.d)
		}
	}
	if _, err := r.Decision("triage"); fault.Name(err) != fault.NameConfigError || !strings.Contains(err.Error(), "responses.yaml:3:5") {
		t.Errorf("a model reply read as a decision: err = %v", err)
	}
}

func TestResponsesRestore(t *testing.T) {
	r := mustResponses(t, responsesYAML)
	if err := r.Restore(map[string]int{"triage": 1, "approve-deploy": 2}); err != nil {
		t.Fatal(err)
	}
	if text, _ := r.Next("triage"); !strings.Contains(text, "disk full") {
		t.Errorf("after Restore, triage answered %q, want its second reply", text)
	}
	if d, err := r.Decision("approve-deploy"); err != nil || d.Approved {
		t.Errorf("after Restore, decision = %+v, %v; want the third (Rejected)", d, err)
	}
	if r.Remaining("triage") != 2 || r.Remaining("nope") != 0 {
		t.Errorf("Remaining = %d, %d", r.Remaining("triage"), r.Remaining("nope"))
	}
	if err := r.Restore(map[string]int{"triage": -1}); err == nil {
		t.Error("a negative count was accepted")
	}
	if err := r.Restore(nil); err != nil || len(r.Consumed()) != 0 {
		t.Errorf("Restore(nil) left %v", r.Consumed())
	}
}

// TestResponsesTakeChanged reads the counts that changed since the last
// look: those of the replies taken meanwhile, not those restored, and
// nothing for a failed take.
func TestResponsesTakeChanged(t *testing.T) {
	r := mustResponses(t, responsesYAML)
	if err := r.Restore(map[string]int{"triage": 1}); err != nil {
		t.Fatal(err)
	}
	if got := r.TakeChanged(); got != nil {
		t.Errorf("after Restore: %v, want nothing", got)
	}
	r.Next("triage")
	r.Next("triage")
	r.Next("triage:verifier")
	if got, want := r.TakeChanged(), map[string]int{"triage": 3, "triage:verifier": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("after three replies: %v, want %v", got, want)
	}
	if got := r.TakeChanged(); got != nil {
		t.Errorf("taken again: %v, want nothing", got)
	}
	r.Next("fan/1") // no such step: nothing used
	if got := r.TakeChanged(); got != nil {
		t.Errorf("after a failed take: %v, want nothing", got)
	}
	r.Decision("approve-deploy")
	if got, want := r.TakeChanged(), map[string]int{"approve-deploy": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a decision: %v, want %v", got, want)
	}
	r.Next("triage") // the fourth and last
	r.Restore(map[string]int{"triage": 2})
	if got := r.TakeChanged(); got != nil {
		t.Errorf("a take then Restore: %v, want nothing (Restore's counts are the stored ones)", got)
	}
}

func TestResponsesConcurrentConsumption(t *testing.T) {
	var b strings.Builder
	b.WriteString("step:\n")
	const n = 200
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - reply-%d\n", i)
	}
	r := mustResponses(t, b.String())
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				text, err := r.Next("step")
				if err != nil {
					return
				}
				mu.Lock()
				got = append(got, text)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("consumed %d replies, want %d", len(got), n)
	}
	sort.Strings(got)
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Fatalf("reply %q consumed twice", got[i])
		}
	}
	if r.Consumed()["step"] != n {
		t.Errorf("Consumed = %v", r.Consumed())
	}
}

func TestParseResponsesErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"not a mapping", "- a\n- b\n", "responses.yaml:1:1: want a mapping from step names to lists of replies"},
		{"duplicate step", "a: [x]\nb: [y]\na: [z]\n", `responses.yaml:3:1: step "a" already listed at line 1`},
		{"nested list", "a:\n  - [x, y]\n", "responses.yaml:2:5: want a reply (a string or a mapping), got a list"},
		{"error with extra keys", "a:\n  - {error: timeout, after: 3}\n", "responses.yaml:2:5: an error reply has only the key error"},
		{"empty error", "a:\n  - {error: \"\"}\n", "responses.yaml:2:13: error: want a message"},
		{"bad decision", "a:\n  - {decision: maybe}\n", `responses.yaml:2:16: decision: want approve or reject, got "maybe"`},
		{"decision with unknown key", "a:\n  - {decision: approve, who: reviewer}\n", `responses.yaml:2:5: unknown key "who" in a decision`},
		{"syntax error", "a:\n  - \"unterminated\n", "responses.yaml:2: found unexpected end of stream"},
		{"bad indentation", "a:\n  - x\n - y\n", "responses.yaml:2: did not find expected key"},
		{"empty step name", "\"\": [x]\n", "responses.yaml:1:1: want a step name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseResponses("responses.yaml", []byte(c.src))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("err = %v\nwant prefix %q", err, c.want)
			}
		})
	}
	if r, err := ParseResponses("empty.yaml", nil); err != nil || len(r.Steps()) != 0 {
		t.Errorf("empty file: %v, %v", r, err)
	}
}

func TestLoadResponses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "replies.yaml")
	if err := os.WriteFile(path, []byte("a: [\"x\"]\nb: {error: boom\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadResponses(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":") {
		t.Errorf("err = %v, want a position in %s", err, path)
	}
	if _, err := LoadResponses(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
}

// TestScriptedStandsInForEveryExecutor checks that with Deps.Responses,
// model, webhook and notify steps are answered offline.
func TestScriptedStandsInForEveryExecutor(t *testing.T) {
	replies := mustResponses(t, `
g: ['{"confidence":0.7,"summary":"g","next_step_context":""}']
a: ["raw anthropic reply"]
b: [{error: timeout}]
w: ['{"confidence":0.6,"summary":"from the hook","next_step_context":"n"}', "plain body"]
n: ["ok"]
s: ["scripted"]
`)
	srv := newServer(t, answer(500, "must not be called"))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client(), Responses: replies, Secrets: secretNone()})
	ctx := context.Background()
	complete := func(call Call) (llmoutput.Completion, error) {
		t.Helper()
		return provider(t, reg, call).Complete(ctx, request())
	}

	c, err := complete(Call{Executor: Gateway, Step: "g", Config: map[string]any{"base_url": srv.URL, "model": "gpt-4o", "api_key": "${UNSET}"}})
	if err != nil || c.Content != `{"confidence":0.7,"summary":"g","next_step_context":""}` || c.Provider != Scripted || c.FinishReason != llmoutput.FinishStop {
		t.Errorf("gateway: %+v, %v", c, err)
	}
	if c, err := complete(Call{Executor: Anthropic, Step: "a", Config: map[string]any{"model": "m", "api_key": "k"}}); err != nil || c.Content != "raw anthropic reply" {
		t.Errorf("anthropic: %+v, %v", c, err)
	}
	_, err = complete(Call{Executor: Bedrock, Step: "b", Config: map[string]any{"model": "m"}})
	assertFault(t, err, fault.NameExecutorTimeout, `step "b"`)

	if c, err := complete(Call{Executor: Webhook, Step: "w", Config: map[string]any{"url": srv.URL}}); err != nil || answerOf(t, c)["summary"] != "from the hook" {
		t.Errorf("webhook, LLMOutput body: %+v, %v", c, err)
	}
	if c, err := complete(Call{Executor: Webhook, Step: "w", Config: map[string]any{"url": srv.URL}}); err != nil || answerOf(t, c)["summary"] != "Webhook delivered: HTTP 200" || answerOf(t, c)["next_step_context"] != "plain body" {
		t.Errorf("webhook, plain body: %+v, %v", c, err)
	}
	if c, err := complete(Call{Executor: Notify, Step: "n", Stage: StageTesting, Config: map[string]any{"url": srv.URL}}); err != nil || answerOf(t, c)["muted"] != true {
		t.Errorf("notify, testing: %+v, %v", c, err)
	}
	if replies.Remaining("n") != 1 {
		t.Error("a muted notification consumed a reply")
	}
	if c, err := complete(Call{Executor: Notify, Step: "n", Stage: StageProduction, Config: map[string]any{"url": srv.URL}}); err != nil || answerOf(t, c)["summary"] != "Notification delivered: HTTP 200" {
		t.Errorf("notify, production: %+v, %v", c, err)
	}
	if c, err := complete(Call{Executor: Scripted, Step: "s"}); err != nil || c.Content != "scripted" {
		t.Errorf("scripted: %+v, %v", c, err)
	}
	_, err = complete(Call{Executor: Scripted, Step: "s"})
	assertFault(t, err, fault.NameConfigError, `step "s" has no scripted reply left`)

	if len(srv.seen()) != 0 {
		t.Errorf("%d requests reached the network", len(srv.seen()))
	}

	// A bad config is still a bad config offline.
	_, err = reg.Provider(Call{Executor: Gateway, Step: "g", Config: map[string]any{"model": "gpt-4o", "temperature": 7}})
	assertFault(t, err, fault.NameConfigError, "executor_config.temperature: must be between 0 and 2, got 7")
}

func TestScriptedExecutorNeedsResponses(t *testing.T) {
	reg, _ := newRegistry(t, Deps{})
	_, err := reg.Provider(Call{Executor: Scripted, Step: "s"})
	assertFault(t, err, fault.NameConfigError, "no scripted replies")
}

func TestScriptedReplyWithUsage(t *testing.T) {
	rs, err := ParseResponses("r.yaml", []byte("draft:\n  - {reply: '{\"confidence\": 0.9, \"summary\": \"x\", \"next_step_context\": \"\"}', input_tokens: 1200, output_tokens: 300}\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(Deps{Responses: rs})
	p, err := reg.Provider(Call{Executor: Scripted, Step: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Complete(context.Background(), llmoutput.Request{})
	if err != nil || c.Usage.InputTokens != 1200 || c.Usage.OutputTokens != 300 || !strings.Contains(c.Content, `"summary": "x"`) {
		t.Fatalf("completion %+v, %v", c, err)
	}
	for _, bad := range []struct{ src, want string }{
		{"a: [{reply: x, tokens: 3}]\n", `r.yaml:1:5: unknown key "tokens" in a reply`},
		{"a: [{reply: x, input_tokens: -1}]\n", "r.yaml:1:30: input_tokens: want a whole number of tokens"},
		{"a: [{reply: [x]}]\n", "r.yaml:1:13: reply: want the model's raw reply as a string"},
	} {
		if _, err := ParseResponses("r.yaml", []byte(bad.src)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.src, err, bad.want)
		}
	}
}
