package mcp

import (
	"testing"
	"time"

	"github.com/stepline/stepline/shared/agent"
)

// TestPolicySeesWhatTheToolGets: an input_regex is matched against the
// arguments the tool is sent, so JSON escapes and repeated keys in the
// model's arguments cannot carry a word past it.
func TestPolicySeesWhatTheToolGets(t *testing.T) {
	ts := newTestServer(t)
	tools := &Client{}
	defer tools.Close()
	deny := agent.Rule{Effect: agent.Deny, Tool: "ech*", InputRegex: `(?i)\b(delete|drop|truncate)\b`, Reason: "mutating"}
	// An allow rule that reads one key's value, then a default deny.
	allowSelect := agent.Rule{Effect: agent.Allow, Tool: "echo", InputRegex: `^\{"text":"select [^"]*"\}$`}
	cases := []struct {
		name   string
		rule   agent.Rule
		deflt  string
		args   string
		denied bool
		echo   string // what the tool answered, when run
	}{
		{"a plain word is denied", deny, agent.Allow, `{"text": "drop table users"}`, true, ""},
		{"an escaped letter is denied", deny, agent.Allow, `{"text": "\u0064rop table users"}`, true, ""},
		{"escaped capitals are denied", deny, agent.Allow, `{"text": "DR\u004FP table"}`, true, ""},
		{"a word escaped whole is denied", deny, agent.Allow, `{"text": "\u0074\u0072\u0075\u006e\u0063\u0061\u0074\u0065 t"}`, true, ""},
		{"arguments as a JSON string are read the same", deny, agent.Allow, `"{\"text\": \"\\u0064elete x\"}"`, true, ""},
		{"a harmless call runs with its value", deny, agent.Allow, `{"text": "select \u0031 <a&b>"}`, false, "echo: select 1 <a&b>"},
		{"the allow rule's value runs", allowSelect, agent.Deny, `{"text": "select 1"}`, false, "echo: select 1"},
		{"a repeated key cannot pass the allow rule", allowSelect, agent.Deny, `{"text": "select 1", "text": "drop table users"}`, true, ""},
		{"a repeated key's last value is what the policy reads", allowSelect, agent.Deny, `{"text": "drop table users", "text": "select 2"}`, false, "echo: select 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := testAgent(ts.URL)
			a.Policy = agent.Policy{Default: tc.deflt, Rules: []agent.Rule{tc.rule}}
			m := &scriptModel{turns: []func(agent.ModelRequest) agent.ModelReply{call("tools__echo", tc.args), answer(goodAnswer)}}
			c, err := run(t, newLoop(a, m, tools), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Trace) < 2 {
				t.Fatalf("trace: %+v", c.Trace)
			}
			ev := c.Trace[1]
			switch {
			case tc.denied && ev.Type != agent.EventToolDenied:
				t.Errorf("not denied: %+v", ev)
			case !tc.denied && (ev.Type != agent.EventToolResult || ev.IsError || ev.Content != tc.echo):
				t.Errorf("got %+v, want the tool to answer %q", ev, tc.echo)
			}
		})
	}
}
