package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/agent"
)

// TestArgumentsNotJSON: a model reply whose call arguments are not JSON
// (a Model that passes the provider's text through) is answered with a
// tool error, and the conversation and its trace still encode, the
// arguments kept as a JSON string of the text.
func TestArgumentsNotJSON(t *testing.T) {
	ts := newTestServer(t)
	tools := &Client{}
	defer tools.Close()
	for _, tc := range []struct{ args, kept string }{
		{`{"text": "x"`, `{"text": "x"`},
		{`{"text": "x"} trailing`, `{"text": "x"} trailing`},
		{"\xff\xfe", "\uFFFD\uFFFD"}, // each invalid byte one U+FFFD
	} {
		args := tc.args
		m := &scriptModel{turns: []func(agent.ModelRequest) agent.ModelReply{call("tools__echo", args), answer(goodAnswer)}}
		c, err := run(t, newLoop(testAgent(ts.URL), m, tools), time.Minute)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("%q: the conversation does not encode: %v", args, err)
		}
		var back agent.Conversation
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if r := lastResult(t, c); !r.IsError || !strings.Contains(r.Content, "want a JSON object") {
			t.Errorf("%q: result %+v", args, r)
		}
		var kept string
		if err := json.Unmarshal(c.Trace[0].Arguments, &kept); err != nil || kept != tc.kept {
			t.Errorf("%q: trace arguments %s", args, c.Trace[0].Arguments)
		}
	}
}
