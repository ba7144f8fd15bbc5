package llmoutput

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stepline/stepline/shared/fault"
)

// scripted is a Provider that answers from a list, in order, and records
// every request. It is safe for concurrent use.
type scripted struct {
	mu       sync.Mutex
	replies  []Completion
	errs     map[int]error // call index → error to return instead
	requests []Request
	onCall   func(n int)
}

func (s *scripted) Complete(ctx context.Context, req Request) (Completion, error) {
	s.mu.Lock()
	n := len(s.requests)
	msgs := append([]Message(nil), req.Messages...)
	s.requests = append(s.requests, Request{Messages: msgs, Schema: req.Schema})
	s.mu.Unlock()
	if s.onCall != nil {
		s.onCall(n)
	}
	if err := s.errs[n]; err != nil {
		return Completion{}, err
	}
	if n >= len(s.replies) {
		return Completion{}, fmt.Errorf("scripted provider: no reply %d", n)
	}
	return s.replies[n], nil
}

func reply(content string) Completion {
	return Completion{Content: content, FinishReason: FinishStop, Model: "m-1", Provider: "fake", Usage: Usage{InputTokens: 10, OutputTokens: 5}}
}

const goodReply = `{"confidence": 0.9, "summary": "Disk is full", "next_step_context": "clean logs"}`

func TestRunnerSuccessFirstTry(t *testing.T) {
	p := &scripted{replies: []Completion{reply("```json\n" + goodReply + "\n```")}}
	msgs := []Message{{RoleSystem, "You triage alerts."}, {RoleUser, "Disk alert on db-1"}}
	res, err := Complete(context.Background(), p, msgs, ContractSchema())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Attempts != 1 || res.Err() != nil || res.Outcome != Accepted {
		t.Fatalf("result %+v", res)
	}
	if res.Data.Summary != "Disk is full" || res.Data.Model != "m-1" || res.Data.Provider != "fake" || res.Data.RawResponse != p.replies[0].Content {
		t.Errorf("data %+v", res.Data)
	}
	if len(res.Flags) != 1 || res.Flags[0] != "fenced" {
		t.Errorf("flags = %v", res.Flags)
	}
	req := p.requests[0]
	if req.Schema == nil || req.Schema.Name != ContractName || len(req.Schema.JSON) == 0 {
		t.Errorf("request schema = %+v", req.Schema)
	}
	if len(req.Messages) != 2 || !strings.HasPrefix(req.Messages[0].Content, "You triage alerts.\n\n") ||
		!strings.Contains(req.Messages[0].Content, ContractInstruction()) {
		t.Errorf("the instruction was not added to the system message: %+v", req.Messages)
	}
	if msgs[0].Content != "You triage alerts." {
		t.Error("the caller's messages were changed")
	}
}

func TestRunnerReasksWithFeedback(t *testing.T) {
	bad := `{"confidence": 85, "summary": "Disk is full", "next_step_context": ""}`
	p := &scripted{replies: []Completion{reply(bad), reply(goodReply)}}
	res, err := Complete(context.Background(), p, []Message{{RoleUser, "Disk alert"}}, ContractSchema())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Attempts != 2 || res.Data.Confidence != 0.9 {
		t.Fatalf("result %+v", res)
	}
	if res.Usage != (Usage{InputTokens: 20, OutputTokens: 10}) {
		t.Errorf("usage = %+v, want the sum of both calls", res.Usage)
	}
	second := p.requests[1].Messages
	if len(second) != 4 {
		t.Fatalf("second request has %d messages: %+v", len(second), second)
	}
	if second[0].Role != RoleSystem || second[1] != (Message{RoleUser, "Disk alert"}) {
		t.Errorf("conversation start = %+v", second[:2])
	}
	if second[2] != (Message{RoleAssistant, bad}) {
		t.Errorf("third message = %+v, want the rejected reply", second[2])
	}
	want := Parse(bad, ParseOptions{}).Feedback()
	if second[3].Role != RoleUser || second[3].Content != want {
		t.Errorf("fourth message = %+v\nwant feedback %q", second[3], want)
	}
	if len(p.requests[0].Messages) != 2 {
		t.Errorf("the first request changed after the fact: %+v", p.requests[0].Messages)
	}
}

func TestRunnerGivesUp(t *testing.T) {
	cases := []struct {
		name       string
		maxRetries int
		calls      int
	}{
		{"default retries", DefaultMaxRetries, 3},
		{"no retry", 0, 1},
		{"five retries", 5, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var replies []Completion
			for i := 0; i < 10; i++ {
				replies = append(replies, reply(fmt.Sprintf(`{"confidence": %d, "summary": "try %d", "next_step_context": ""}`, 50+i, i)))
			}
			p := &scripted{replies: replies}
			schema := ContractSchema()
			schema.MaxRetries = c.maxRetries
			res, err := Complete(context.Background(), p, []Message{{RoleUser, "q"}}, schema)
			if err != nil {
				t.Fatal(err)
			}
			if res.Success || res.Attempts != c.calls || len(p.requests) != c.calls {
				t.Fatalf("success %v after %d attempts (%d calls), want failure after %d", res.Success, res.Attempts, len(p.requests), c.calls)
			}
			if res.RawContent != replies[c.calls-1].Content {
				t.Errorf("RawContent = %q, want the last reply", res.RawContent)
			}
			if len(res.ValidationErrors) != 1 || res.ValidationErrors[0].Code != CodeOutOfRange || res.Feedback == "" {
				t.Errorf("errors %v feedback %q", res.ValidationErrors, res.Feedback)
			}
			var inv *fault.InvalidOutput
			if err := res.Err(); !errors.As(err, &inv) || fault.Name(err) != fault.NameInvalidOutput {
				t.Fatalf("Err() = %T %v, want *fault.InvalidOutput", err, err)
			}
			if c.calls > 1 && !strings.Contains(inv.Msg, fmt.Sprintf("after %d attempts", c.calls)) {
				t.Errorf("message %q does not count the attempts", inv.Msg)
			}
			if last := p.requests[c.calls-1].Messages; len(last) != 2+2*(c.calls-1) {
				t.Errorf("last request has %d messages, want %d", len(last), 2+2*(c.calls-1))
			}
		})
	}
}

func TestRunnerStopsOnRefusal(t *testing.T) {
	cases := []struct {
		name string
		c    Completion
		code string
	}{
		{"prose refusal", reply("I'm sorry, but I can't help with that."), CodeRefusal},
		{"provider refusal", Completion{Refusal: "policy", FinishReason: FinishStop}, CodeRefusal},
		{"content filter", Completion{Content: `{"confidence": 0.9`, FinishReason: "content_filter"}, CodeContentFilter},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &scripted{replies: []Completion{c.c, reply(goodReply)}}
			res, err := Complete(context.Background(), p, []Message{{RoleUser, "q"}}, ContractSchema())
			if err != nil {
				t.Fatal(err)
			}
			if res.Success || res.Attempts != 1 || res.Outcome != Refused {
				t.Fatalf("result %+v, want a refusal after one call", res)
			}
			if res.ValidationErrors[0].Code != c.code {
				t.Errorf("code = %s, want %s", res.ValidationErrors[0].Code, c.code)
			}
			var mr *fault.ModelRefused
			if !errors.As(res.Err(), &mr) || fault.IsRetryable(res.Err()) {
				t.Errorf("Err() = %T %v, want a non-retryable *fault.ModelRefused", res.Err(), res.Err())
			}
		})
	}
}

func TestRunnerReasksTruncated(t *testing.T) {
	cut := Completion{Content: goodReply, FinishReason: "length"}
	p := &scripted{replies: []Completion{cut, reply("")}}
	schema := ContractSchema()
	schema.MaxRetries = 1
	res, err := Complete(context.Background(), p, []Message{{RoleUser, "q"}}, schema)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || res.Attempts != 2 {
		t.Fatalf("result %+v", res)
	}
	fb := p.requests[1].Messages[2:]
	if fb[0].Content != goodReply || !strings.Contains(fb[1].Content, "more briefly") {
		t.Errorf("truncation feedback = %+v", fb)
	}
	if res.Outcome != Rejected || res.ValidationErrors[0].Code != CodeNoJSON {
		t.Errorf("the empty second reply: %s %v", res.Outcome, res.ValidationErrors)
	}
}

func TestRunnerEmptyReplyIsReplayable(t *testing.T) {
	p := &scripted{replies: []Completion{reply("  "), reply(goodReply)}}
	res, err := Complete(context.Background(), p, []Message{{RoleUser, "q"}}, ContractSchema())
	if err != nil || !res.Success {
		t.Fatalf("%v %+v", err, res)
	}
	if got := p.requests[1].Messages[2]; got != (Message{RoleAssistant, "(empty reply)"}) {
		t.Errorf("replayed empty reply = %+v", got)
	}
}

func TestRunnerTransportErrors(t *testing.T) {
	limited := &fault.RateLimited{Msg: "http 429"}
	p := &scripted{replies: []Completion{reply("nonsense"), reply(goodReply)}, errs: map[int]error{1: limited}}
	res, err := Complete(context.Background(), p, []Message{{RoleUser, "q"}}, ContractSchema())
	if err != limited {
		t.Fatalf("err = %v, want the provider's error as is", err)
	}
	if res.Attempts != 2 || len(p.requests) != 2 || res.Success {
		t.Errorf("result %+v after %d calls", res, len(p.requests))
	}

	unavailable := &fault.ExecutorUnavailable{Msg: "connection reset"}
	p = &scripted{errs: map[int]error{0: unavailable}}
	res, err = Complete(context.Background(), p, nil, ContractSchema())
	if err != unavailable || res.Attempts != 1 || len(p.requests) != 1 {
		t.Errorf("err %v attempts %d calls %d: a transport error is not re-asked", err, res.Attempts, len(p.requests))
	}
}

func TestRunnerContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &scripted{replies: []Completion{reply(goodReply)}}
	if _, err := Complete(ctx, p, nil, ContractSchema()); !errors.Is(err, context.Canceled) || len(p.requests) != 0 {
		t.Errorf("err %v after %d calls, want context.Canceled before any call", err, len(p.requests))
	}

	ctx, cancel = context.WithCancel(context.Background())
	p = &scripted{replies: []Completion{reply("no json"), reply(goodReply)}, onCall: func(int) { cancel() }}
	res, err := Complete(ctx, p, nil, ContractSchema())
	if !errors.Is(err, context.Canceled) || res.Attempts != 1 {
		t.Errorf("err %v attempts %d, want context.Canceled after the first call", err, res.Attempts)
	}

	ctx, cancel = context.WithCancel(context.Background())
	blocking := providerFunc(func(ctx context.Context, _ Request) (Completion, error) {
		cancel()
		<-ctx.Done()
		return Completion{}, ctx.Err()
	})
	if _, err := Complete(ctx, blocking, nil, ContractSchema()); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the provider's context error", err)
	}
}

type providerFunc func(context.Context, Request) (Completion, error)

func (f providerFunc) Complete(ctx context.Context, r Request) (Completion, error) { return f(ctx, r) }

func TestRunnerOptions(t *testing.T) {
	p := &scripted{replies: []Completion{reply(goodReply)}}
	msgs := []Message{{RoleUser, "q"}}
	r := Runner{SkipInstruction: true}
	if _, err := r.Complete(context.Background(), p, msgs, ContractSchema()); err != nil {
		t.Fatal(err)
	}
	if got := p.requests[0].Messages; len(got) != 1 || got[0] != msgs[0] {
		t.Errorf("SkipInstruction changed the messages: %+v", got)
	}

	p = &scripted{replies: []Completion{reply(goodReply)}}
	if _, err := Complete(context.Background(), p, msgs, ContractSchema()); err != nil {
		t.Fatal(err)
	}
	if got := p.requests[0].Messages; len(got) != 2 || got[0].Role != RoleSystem || got[0].Content != ContractInstruction() {
		t.Errorf("no system message was added: %+v", got)
	}

	small := Runner{Limits: ParseOptions{MaxBytes: 16}}
	p = &scripted{replies: []Completion{reply(goodReply)}}
	schema := ContractSchema()
	schema.MaxRetries = 0
	res, _ := small.Complete(context.Background(), p, msgs, schema)
	if res.Success || res.ValidationErrors[0].Code != CodeTooLarge {
		t.Errorf("limits not applied: %+v", res)
	}

	var cfg *fault.ConfigError
	if _, err := Complete(context.Background(), p, msgs, &OutputSchema{}); !errors.As(err, &cfg) {
		t.Errorf("a zero schema: %v, want *fault.ConfigError", err)
	}
	if _, err := Complete(context.Background(), nil, msgs, ContractSchema()); !errors.As(err, &cfg) {
		t.Errorf("a nil provider: %v, want *fault.ConfigError", err)
	}
	if err := (RunResult{}).Err(); !errors.As(err, new(*fault.InvalidOutput)) {
		t.Errorf("an empty result: %v", err)
	}
}

// TestRunnerBuiltinSchema runs a built-in schema through the one path:
// the contract's Runner, re-asking for a field of the built-in's own.
func TestRunnerBuiltinSchema(t *testing.T) {
	p := &scripted{replies: []Completion{
		reply(`{"confidence": 0.8, "summary": "A CLI change", "next_step_context": "", "task_type": "coding", "complexity": "simple", "tools_needed": [], "approach": "x"}`),
		reply(`{"confidence": 0.8, "summary": "A CLI change", "next_step_context": "", "task_type": "code", "complexity": "simple", "tools_needed": ["go"], "approach": "Write it"}`),
	}}
	res, err := Complete(context.Background(), p, []Message{{RoleUser, "Add a flag to the CLI"}}, TaskAnalysisSchema())
	if err != nil {
		t.Fatal(err)
	}
	ta, rerr := ReadTaskAnalysis(&res.Data)
	if !res.Success || res.Attempts != 2 || rerr != nil || ta.TaskType != "code" || ta.ToolsNeeded[0] != "go" || res.Data.Model != "m-1" {
		t.Fatalf("result %+v, %+v %v", res, ta, rerr)
	}
	if s := p.requests[0].Schema; s == nil || s.Name != "task_analysis" || !strings.Contains(string(s.JSON), `"task_type"`) {
		t.Errorf("request schema %+v", s)
	}
	if sys := p.requests[0].Messages[0]; sys.Role != RoleSystem || !strings.Contains(sys.Content, "(task_analysis)") || !strings.Contains(sys.Content, `"next_step_context"`) {
		t.Errorf("instruction %+v", sys)
	}
	if fb := p.requests[1].Messages[3].Content; !strings.Contains(fb, "task_type") || !strings.Contains(fb, "[invalid_value]") {
		t.Errorf("feedback = %q", fb)
	}
}

// TestRunnerConcurrent shares one Runner and one schema across goroutines
// (run with -race).
func TestRunnerConcurrent(t *testing.T) {
	var r Runner
	schema := TaskAnalysisSchema()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := &scripted{replies: []Completion{
				reply(`{"confidence": 1, "summary": "s", "next_step_context": "", "task_type": "nope"}`),
				reply(fmt.Sprintf(`{"confidence": 1, "summary": "s", "next_step_context": "", "task_type": "question", "complexity": "simple", "tools_needed": ["t%d"], "approach": "a"}`, i)),
			}}
			res, err := r.Complete(context.Background(), p, []Message{{RoleUser, "q"}}, schema)
			tools, _ := res.Data.Extra.Get("tools_needed")
			switch {
			case err != nil:
				errs <- err
			case !res.Success || string(tools) != fmt.Sprintf(`["t%d"]`, i):
				errs <- fmt.Errorf("goroutine %d: %+v", i, res)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
