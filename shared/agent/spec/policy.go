package spec

import (
	"fmt"
	"regexp"
	"sync"
	"unicode/utf8"
)

// Tool-policy effects and defaults.
const (
	Allow = "allow"
	Deny  = "deny"
)

// MaxPolicyInputBytes bounds the JSON arguments an input_regex is matched
// against. A call whose arguments are longer is decided without reading
// them, failing closed: a deny rule with an input_regex that matches the
// call's server, tool and agent denies it, and an allow rule with one
// does not allow it.
const MaxPolicyInputBytes = 1 << 20

// DefaultDenyReason is the reason given for a call no rule matched under
// default: deny.
const DefaultDenyReason = "denied by the tool policy's default"

// Decide applies the policy to one tool call of agent on server's tool
// with the JSON arguments input: the first rule whose every field matches
// decides, else Default ("" counts as allow). Server is compared exactly;
// Tool and Agent are globs (see MatchGlob); InputRegex is an RE2 search
// in input. reason is the deciding rule's reason, DefaultDenyReason for a
// default denial, or a note when the input was too long to match. A
// pattern that does not compile never matches (the project loader refuses
// such a policy before any step runs).
func (p Policy) Decide(agent, server, tool string, input []byte) (allow bool, reason string) {
	for _, r := range p.Rules {
		if !r.matchesCall(agent, server, tool) {
			continue
		}
		if r.InputRegex != "" {
			if len(input) > MaxPolicyInputBytes {
				if r.Effect == Deny {
					return false, fmt.Sprintf("%s (the arguments, %d bytes, are over the %d bytes a policy reads)", denyReason(r), len(input), MaxPolicyInputBytes)
				}
				continue
			}
			re, err := compileCached(r.InputRegex)
			if err != nil || !re.Match(input) {
				continue
			}
		}
		if r.Effect == Deny {
			return false, denyReason(r)
		}
		return true, r.Reason
	}
	if p.Default == Deny {
		return false, DefaultDenyReason
	}
	return true, ""
}

func denyReason(r Rule) string {
	if r.Reason != "" {
		return r.Reason
	}
	return "denied by the tool policy"
}

// MayAllow reports whether some call of agent on server's tool can be
// allowed: whether the policy, read in order, reaches an allow rule (or an
// allowing default) before a deny rule that matches every input. Rules
// with an input_regex decide only some calls, so an allow rule with one
// counts as allowing and a deny rule with one is passed over. With tool
// "" the question is asked of the server's tools in general: a rule's
// tool glob is taken to match some tool, so only a deny rule without a
// tool glob (or with "*") and without input_regex shuts the server.
func (p Policy) MayAllow(agent, server, tool string) bool {
	for _, r := range p.Rules {
		if r.Server != "" && r.Server != server {
			continue
		}
		if r.Agent != "" && !MatchGlob(r.Agent, agent) {
			continue
		}
		if tool != "" && r.Tool != "" && !MatchGlob(r.Tool, tool) {
			continue
		}
		if r.Effect == Allow {
			return true
		}
		if r.InputRegex != "" || (tool == "" && r.Tool != "" && r.Tool != "*") {
			continue
		}
		return false
	}
	return p.Default != Deny
}

func (r Rule) matchesCall(agent, server, tool string) bool {
	if r.Server != "" && r.Server != server {
		return false
	}
	if r.Tool != "" && !MatchGlob(r.Tool, tool) {
		return false
	}
	if r.Agent != "" && !MatchGlob(r.Agent, agent) {
		return false
	}
	return true
}

// regexps caches the compiled input_regex patterns: they come from the
// project file, so the set is small and fixed for the life of a process.
var regexps sync.Map // string → *regexp.Regexp or error

func compileCached(pattern string) (*regexp.Regexp, error) {
	if v, ok := regexps.Load(pattern); ok {
		if re, ok := v.(*regexp.Regexp); ok {
			return re, nil
		}
		return nil, v.(error)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		regexps.Store(pattern, err)
		return nil, err
	}
	regexps.Store(pattern, re)
	return re, nil
}

// MatchGlob reports whether name matches the glob pattern, as the
// reference gateway's fnmatch does on Linux: * matches any run of
// characters (also none, also a /), ? any one character, [abc] one of the
// set, [a-z] one in the range, [!abc] or [^abc] one not in the set.
// Matching is case-sensitive. A pattern CheckGlob refuses matches nothing.
func MatchGlob(pattern, name string) bool {
	if CheckGlob(pattern) != nil {
		return false
	}
	return matchGlob(pattern, name)
}

// CheckGlob reports what is wrong with a glob pattern: a [ without its ]
// (a ] right after [ or [! is a member, so [] is never closed), a range
// written backwards, text that is not UTF-8.
func CheckGlob(pattern string) error {
	if !utf8.ValidString(pattern) {
		return fmt.Errorf("glob %q is not valid UTF-8", pattern)
	}
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '[' {
			continue
		}
		_, n, err := parseClass(pattern[i:])
		if err != nil {
			return fmt.Errorf("glob %q: %v", pattern, err)
		}
		i += n - 1
	}
	return nil
}

// matchGlob matches with one backtracking point, the last *: linear in
// practice, at worst len(pattern)×len(name).
func matchGlob(pattern, name string) bool {
	p, n := 0, 0
	starP, starN := -1, 0
	for n < len(name) {
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				starP, starN = p, n
				p++
				continue
			case '?':
				_, w := utf8.DecodeRuneInString(name[n:])
				p, n = p+1, n+w
				continue
			case '[':
				cl, w, _ := parseClass(pattern[p:])
				r, rw := utf8.DecodeRuneInString(name[n:])
				if cl.has(r) {
					p, n = p+w, n+rw
					continue
				}
			default:
				if c == name[n] {
					p, n = p+1, n+1
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		_, w := utf8.DecodeRuneInString(name[starN:])
		starN += w
		p, n = starP+1, starN
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// class is a parsed [...] set.
type class struct {
	negate bool
	ranges [][2]rune
}

func (c class) has(r rune) bool {
	in := false
	for _, rg := range c.ranges {
		if rg[0] <= r && r <= rg[1] {
			in = true
			break
		}
	}
	return in != c.negate
}

// parseClass reads the set at the start of s (s[0] is '[') and returns it
// with the bytes it takes. A ] right after [ or [! is a member.
func parseClass(s string) (class, int, error) {
	var c class
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		c.negate = true
		i++
	}
	first := true
	for i < len(s) {
		if s[i] == ']' && !first {
			return c, i + 1, nil
		}
		first = false
		lo, w := utf8.DecodeRuneInString(s[i:])
		i += w
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			hi, w = utf8.DecodeRuneInString(s[i+1:])
			i += 1 + w
			if hi < lo {
				return c, 0, fmt.Errorf("range %c-%c is backwards", lo, hi)
			}
		}
		c.ranges = append(c.ranges, [2]rune{lo, hi})
	}
	return c, 0, fmt.Errorf("[ is not closed with ]")
}
