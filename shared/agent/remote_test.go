package agent

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/llmoutput"
)

// remoteReplies answers each turn with the next reply, as a remote
// runtime that runs its own tools does.
type remoteReplies struct{ replies []ModelReply }

func (m *remoteReplies) Turn(context.Context, ModelRequest) (ModelReply, error) {
	r := m.replies[0]
	m.replies = m.replies[1:]
	return r, nil
}

// TestRemoteTrace: a reply's own trace takes the place of the loop's
// text event, numbered after the events before it, its denials and cut
// results flagged; the runtime's agent version is the conversation's.
func TestRemoteTrace(t *testing.T) {
	m := &remoteReplies{replies: []ModelReply{
		{Text: "not an answer", Model: "m", Provider: "p", AgentVersion: "v-remote-1", Trace: []Event{
			{Type: EventToolCall, Iteration: 1, ID: "call_1_1", Name: "grafana.query"},
			{Type: EventToolResult, Iteration: 1, ID: "call_1_1", Name: "grafana.query", Content: "cut", Truncated: true},
			{Type: EventText, Iteration: 2, Content: "not an answer"},
		}},
		{Text: `{"confidence": 0.8, "summary": "s", "next_step_context": ""}`, Model: "m", Provider: "p", AgentVersion: "v-remote-2", Trace: []Event{
			{Type: EventToolCall, Iteration: 1, ID: "call_1_1", Name: "jira.delete"},
			{Type: EventToolDenied, Iteration: 1, ID: "call_1_1", Name: "jira.delete", Reason: "read only"},
			{Type: EventText, Content: "the answer"},
		}},
	}}
	a := &Resolved{Profile: Profile{Name: "sre"}, Remote: &Remote{Runtime: RuntimeGateway, URL: "ws://x"}}
	l := &Loop{Agent: a, Model: m, Runner: &llmoutput.Runner{}, Schema: llmoutput.ContractSchema()}
	c, err := l.Run(context.Background(), "investigate", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var its []int
	for _, ev := range c.Trace {
		its = append(its, ev.Iteration)
	}
	if want := []int{1, 1, 2, 3, 3, 3}; !reflect.DeepEqual(its, want) || len(c.Trace) != 6 {
		t.Errorf("iterations %v, want %v (trace %+v)", its, want, c.Trace)
	}
	if c.Version != "v-remote-2" || c.Iterations != 2 {
		t.Errorf("version %q iterations %d", c.Version, c.Iterations)
	}
	if !reflect.DeepEqual(c.Flags, []string{FlagToolResultTruncated, FlagToolDenied}) {
		t.Errorf("flags %v", c.Flags)
	}
}
