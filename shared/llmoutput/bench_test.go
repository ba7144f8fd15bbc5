package llmoutput

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchReply renders a realistic answer of about size bytes: the contract
// fields, reasoning, an artifact, and a list of findings that grows with
// size. repaired renders it as a model that needs every syntax repair
// would: single quotes, unquoted keys, trailing commas, comments, Python
// literals, a string confidence, inside a fence with prose around it.
func benchReply(size int, repaired bool) string {
	var b strings.Builder
	q := func(s string) string {
		if repaired {
			return "'" + s + "'"
		}
		return `"` + s + `"`
	}
	key := func(k string) string {
		if repaired {
			return k
		}
		return `"` + k + `"`
	}
	tc := ""
	if repaired {
		tc = ","
		b.WriteString("I checked every host in the cluster. Here is the result:\n\n```json\n")
	}
	conf := "0.87"
	if repaired {
		conf = q("0.87")
	}
	yes := "true"
	if repaired {
		yes = "True"
	}
	fmt.Fprintf(&b, "{\n  %s: %s,\n  %s: %s,\n  %s: %s,\n  %s: %s,\n",
		key("confidence"), conf,
		key("summary"), q("Three of twelve hosts exceed the disk threshold; rotated logs account for most of the growth"),
		key("next_step_context"), q("Clean rotated logs on db-1, db-4 and web-7, then re-check usage"),
		key("proceed"), yes)
	fmt.Fprintf(&b, "  %s: {%s: [%s, %s%s], %s: [%s%s], %s: [%s%s]%s},\n",
		key("reasoning"),
		key("supports"), q("df reports 91%, 93% and 95% on the three hosts"), q("/var/log grew 40 GB in a week"), tc,
		key("contradicts"), q("inode usage is normal"), tc,
		key("assumptions"), q("log rotation runs nightly"), tc, tc)
	report := strings.Repeat("host db-1: /var/log/postgresql 38 GB, rotated files older than 7 days 31 GB\\n", 12)
	fmt.Fprintf(&b, "  %s: {%s: %s%s},\n", key("artifacts"), q("report.md"), q(report), tc)
	fmt.Fprintf(&b, "  %s: [\n", key("findings"))
	var items []string
	for i, n := 0, b.Len(); n < size-200; i++ {
		item := ""
		if repaired && i%10 == 0 {
			item = "    // next batch of hosts\n"
		}
		item += fmt.Sprintf("    {%s: %s, %s: %s, %s: %d.%d, %s: %s, %s: %s}",
			key("host"), q(fmt.Sprintf("host-%04d.prod.internal", i)),
			key("metric"), q("disk_used_percent"),
			key("value"), 40+i%60, i%10,
			key("ok"), map[bool]string{true: yes, false: "false"}[i%7 != 0],
			key("note"), q("usage within the expected weekly growth band"))
		items = append(items, item)
		n += len(item) + 2
	}
	b.WriteString(strings.Join(items, ",\n"))
	b.WriteString(tc + "\n")
	fmt.Fprintf(&b, "  ],\n  %s: %s%s\n}", key("ticket"), q("OPS-4121"), tc)
	if repaired {
		b.WriteString("\n```\n\nTell me if you want the other hosts cleaned too.")
	}
	return b.String()
}

func benchmarkParse(b *testing.B, size int, repaired bool) {
	raw := benchReply(size, repaired)
	if res := Parse(raw, ParseOptions{}); !res.OK || (len(res.Flags) == 0) == repaired {
		b.Fatalf("the benchmark reply is %s with flags %v: %v", res.Outcome, res.Flags, res.Errors)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(raw, ParseOptions{})
	}
}

// go test ./shared/llmoutput -run '^$' -bench Parse -benchmem
func BenchmarkParse(b *testing.B) {
	for _, c := range []struct {
		name     string
		size     int
		repaired bool
	}{
		{"clean-4KB", 4 << 10, false},
		{"repairs-4KB", 4 << 10, true},
		{"clean-64KB", 64 << 10, false},
		{"clean-256KB", 256 << 10, false},
		{"clean-1MiB", 1<<20 - 64, false},
		{"repairs-64KB", 64 << 10, true},
		{"repairs-256KB", 256 << 10, true},
		{"repairs-1MiB", 1<<20 - 64, true},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkParse(b, c.size, c.repaired) })
	}
}

// BenchmarkCheckTaskAnalysis measures a built-in answer: Parse, then its
// own fields.
func BenchmarkCheckTaskAnalysis(b *testing.B) {
	s := TaskAnalysisSchema()
	raw := `{"confidence": 0.8, "summary": "A fix", "next_step_context": "", "task_type": "code", "complexity": "moderate", "tools_needed": ["git", "go"], "approach": "Write a failing test, then the fix"}`
	b.ReportAllocs()
	for b.Loop() {
		s.Check(raw, ParseOptions{})
	}
}

// TestLinearTime guards against quadratic behaviour on hostile input: each
// reply is 1 MiB of one pathological pattern and must be judged in well
// under a second (a quadratic scan would take minutes).
func TestLinearTime(t *testing.T) {
	const n = 1<<20 - 16
	fill := func(unit string) string { return strings.Repeat(unit, n/len(unit)) }
	cases := map[string]string{
		"open braces":              fill("{"),
		"open brackets":            fill("[ "),
		"brace pairs":              fill("{}"),
		"quotes":                   fill(`"`),
		"backslashes":              fill(`\`),
		"backslash quotes":         `{"a": "` + fill(`\"`),
		"stray prose braces":       fill("{ see "),
		"unclosed strings":         fill(`{"a`),
		"comments":                 "{" + fill("/* c */"),
		"keys":                     "{" + fill(`"k": 1, `) + "}",
		"duplicate keys":           "{" + fill(`"k": 1, `) + `"k": 2}`,
		"think tags":               "<think>" + fill("</thin"),
		"closing think tag":        fill("a </thin") + "</think>",
		"fences":                   fill("```\n"),
		"many small objects":       fill(`{"a":1} `),
		"nested envelopes":         fill(`{"a":`),
		"placeholder answers":      fill(`{"confidence":0,"summary":"...","next_step_context":""} `),
		"different answers":        fill(`{"confidence":0,"summary":"a","next_step_context":""} {"confidence":1,"summary":"b","next_step_context":""} `),
		"zero-width edges":         fill("\u200b") + "{}",
		"deep arrays":              fill("[") + fill("]"),
		"long string":              `{"confidence": 0.5, "summary": "` + fill("x") + `", "next_step_context": ""}`,
		"long escaped string":      `{"confidence": 0.5, "summary": "` + fill(`\n`) + `", "next_step_context": ""}`,
		"single-quoted string":     `{'confidence': 0.5, 'summary': '` + fill("x") + `', 'next_step_context': ''}`,
		"broken object of objects": `{"x" ` + fill("{} ") + "}",
		"broken nested objects":    `{"x" ` + fill(`{"y" {} `) + "}",
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			res := Parse(raw, ParseOptions{})
			task := TaskAnalysisSchema()
			task.Check(raw, ParseOptions{})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v (%s)", d, res.Outcome)
			}
			if res.OK == (len(res.Errors) > 0) {
				t.Errorf("verdict %s with %d errors", res.Outcome, len(res.Errors))
			}
		})
	}
}
