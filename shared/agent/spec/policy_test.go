package spec

import (
	"strings"
	"testing"
)

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		name, pattern, s string
		want             bool
	}{
		{"literal", "query_loki", "query_loki", true},
		{"literal differs", "query_loki", "query_lokii", false},
		{"case-sensitive", "Query", "query", false},
		{"star matches all", "*", "anything", true},
		{"star matches none", "jira_*", "jira_", true},
		{"star prefix", "jira_*", "jira_delete_issue", true},
		{"star prefix miss", "jira_*", "confluence_get", false},
		{"star crosses slash", "a*c", "a/b/c", true},
		{"two stars backtrack", "*_delete_*", "jira_delete_issue", true},
		{"two stars miss", "*_delete_*", "jira_get_issue", false},
		{"question one char", "get_?", "get_x", true},
		{"question no char", "get_?", "get_", false},
		{"question one rune", "?", "é", true},
		{"set member", "[ab]x", "bx", true},
		{"set non-member", "[ab]x", "cx", false},
		{"range below", "v[2-4]", "v1", false},
		{"range low end", "v[2-4]", "v2", true},
		{"range high end", "v[2-4]", "v4", true},
		{"range above", "v[2-4]", "v5", false},
		{"negated set bang", "[!a]*", "bcd", true},
		{"negated set caret", "[^a]*", "abc", false},
		{"close bracket member", "[]]", "]", true},
		{"bad pattern matches nothing", "[a", "[a", false},
		{"empty pattern matches empty", "", "", true},
		{"empty pattern rejects text", "", "x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchGlob(tt.pattern, tt.s); got != tt.want {
				t.Errorf("MatchGlob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}

func TestCheckGlob(t *testing.T) {
	tests := []struct {
		name, pattern, want string
	}{
		{"plain", "execute_*", ""},
		{"set", "[a-c]?", ""},
		{"unclosed set", "jira_[abc", `glob "jira_[abc": [ is not closed with ]`},
		{"only bracket", "[", `glob "[": [ is not closed with ]`},
		{"brackets alone", "[]", `glob "[]": [ is not closed with ]`},
		{"backwards range", "[z-a]", `glob "[z-a]": range z-a is backwards`},
		{"one-rune range", "[a-a]", ""},
		{"not utf-8", "\xff", `glob "\xff" is not valid UTF-8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := CheckGlob(tt.pattern); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckGlob(%q) = %q, want %q", tt.pattern, got, tt.want)
			}
		})
	}
}

func TestPolicyDecide(t *testing.T) {
	policy := Policy{
		Default: Deny,
		Rules: []Rule{
			{Effect: Deny, Server: "atlassian", Tool: "jira_delete_issue", Reason: "destructive Jira operations are operator-only"},
			{Effect: Deny, Tool: "execute_*", InputRegex: `(?i)delete|drop`, Reason: "mutating queries blocked"},
			{Effect: Allow, Server: "grafana"},
			{Effect: Deny, Agent: "experimental-*", Reason: "experimental agents run toolless"},
			{Effect: Allow, Server: "atlassian", Agent: "sre-*"},
			{Effect: Allow, Server: "db", Tool: "execute_*"},
		},
	}
	tests := []struct {
		name, agent, server, tool, input string
		allow                            bool
		reason                           string
	}{
		{"first rule denies", "sre-triage", "atlassian", "jira_delete_issue", `{}`, false, "destructive Jira operations are operator-only"},
		{"server must equal", "sre-triage", "atlassian2", "jira_delete_issue", `{}`, false, DefaultDenyReason},
		{"input regex denies", "sre-triage", "db", "execute_sql", `{"q":"DROP TABLE x"}`, false, "mutating queries blocked"},
		{"input regex passes", "sre-triage", "db", "execute_sql", `{"q":"select 1"}`, true, ""},
		{"allow server", "experimental-x", "grafana", "query_loki", `{}`, true, ""},
		{"agent glob denies", "experimental-x", "atlassian", "jira_get_issue", `{}`, false, "experimental agents run toolless"},
		{"agent glob allows", "sre-investigator", "atlassian", "jira_get_issue", `{}`, true, ""},
		{"default denies", "judge", "atlassian", "jira_get_issue", `{}`, false, DefaultDenyReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allow, reason := policy.Decide(tt.agent, tt.server, tt.tool, []byte(tt.input))
			if allow != tt.allow || reason != tt.reason {
				t.Errorf("Decide = %v, %q; want %v, %q", allow, reason, tt.allow, tt.reason)
			}
		})
	}
}

func TestPolicyDefaults(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		allow  bool
	}{
		{"empty default allows", Policy{}, true},
		{"allow default", Policy{Default: Allow}, true},
		{"deny default", Policy{Default: Deny}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if allow, _ := tt.policy.Decide("a", "s", "t", nil); allow != tt.allow {
				t.Errorf("Decide = %v, want %v", allow, tt.allow)
			}
		})
	}
}

// TestPolicyInputBound decides calls whose arguments are just within, at and
// past MaxPolicyInputBytes: past it, a deny rule with an input_regex denies
// (padding the arguments cannot slip a call past it) and an allow rule with
// one does not allow.
func TestPolicyInputBound(t *testing.T) {
	deny := Policy{Default: Allow, Rules: []Rule{{Effect: Deny, InputRegex: "DROP", Reason: "no drops"}}}
	allow := Policy{Default: Deny, Rules: []Rule{{Effect: Allow, InputRegex: "select"}}}
	sized := func(n int, word string) []byte {
		return []byte(word + strings.Repeat(" ", n-len(word)))
	}
	tests := []struct {
		name   string
		policy Policy
		input  []byte
		allow  bool
		reason string
	}{
		{"deny rule, below bound, no match", deny, sized(MaxPolicyInputBytes-1, "select"), true, ""},
		{"deny rule, at bound, no match", deny, sized(MaxPolicyInputBytes, "select"), true, ""},
		{"deny rule, at bound, match", deny, sized(MaxPolicyInputBytes, "DROP"), false, "no drops"},
		{"deny rule, above bound", deny, sized(MaxPolicyInputBytes+1, "select"), false, "no drops (the arguments, 1048577 bytes, are over the 1048576 bytes a policy reads)"},
		{"allow rule, at bound", allow, sized(MaxPolicyInputBytes, "select"), true, ""},
		{"allow rule, above bound", allow, sized(MaxPolicyInputBytes+1, "select"), false, DefaultDenyReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allow, reason := tt.policy.Decide("a", "s", "t", tt.input)
			if allow != tt.allow || reason != tt.reason {
				t.Errorf("Decide = %v, %q; want %v, %q", allow, reason, tt.allow, tt.reason)
			}
		})
	}
}

func TestPolicyMayAllow(t *testing.T) {
	tests := []struct {
		name                string
		policy              Policy
		agent, server, tool string
		want                bool
	}{
		{"default allow", Policy{Default: Allow}, "a", "s", "", true},
		{"default deny, no rules", Policy{Default: Deny}, "a", "s", "", false},
		{"allow rule for the server", Policy{Default: Deny, Rules: []Rule{{Effect: Allow, Server: "s"}}}, "a", "s", "", true},
		{"allow rule for another server", Policy{Default: Deny, Rules: []Rule{{Effect: Allow, Server: "t"}}}, "a", "s", "", false},
		{"allow rule for another agent", Policy{Default: Deny, Rules: []Rule{{Effect: Allow, Agent: "b*"}}}, "a", "s", "", false},
		{"deny all before allow", Policy{Default: Deny, Rules: []Rule{{Effect: Deny, Server: "s"}, {Effect: Allow, Server: "s"}}}, "a", "s", "", false},
		{"deny one tool before allow", Policy{Default: Deny, Rules: []Rule{{Effect: Deny, Server: "s", Tool: "x"}, {Effect: Allow, Server: "s"}}}, "a", "s", "", true},
		{"deny star tool before allow", Policy{Default: Deny, Rules: []Rule{{Effect: Deny, Tool: "*"}, {Effect: Allow, Server: "s"}}}, "a", "s", "", false},
		{"deny by input before allow", Policy{Default: Deny, Rules: []Rule{{Effect: Deny, InputRegex: "x"}, {Effect: Allow}}}, "a", "s", "", true},
		{"named tool denied", Policy{Default: Allow, Rules: []Rule{{Effect: Deny, Tool: "x*"}}}, "a", "s", "xy", false},
		{"named tool passes deny", Policy{Default: Allow, Rules: []Rule{{Effect: Deny, Tool: "x*"}}}, "a", "s", "yx", true},
		{"deny all under default allow", Policy{Default: Allow, Rules: []Rule{{Effect: Deny}}}, "a", "s", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.MayAllow(tt.agent, tt.server, tt.tool); got != tt.want {
				t.Errorf("MayAllow = %v, want %v", got, tt.want)
			}
		})
	}
}
