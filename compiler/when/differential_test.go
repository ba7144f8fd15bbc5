package when

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// differentialDocs are the binding sets ($steps, $vars, $trigger) every
// condition is evaluated against. Each one is named for what it probes.
var differentialDocs = []struct{ name, json string }{
	{"full", `{
		"steps": {
			"triage": {"confidence": 0.9, "summary": "disk full on api", "next_step_context": "", "proceed": true,
				"action": "restart", "services": ["api", "db"], "count": 3, "tags": {"team": "sre"},
				"meta": {"owner": "ops", "entries": [], "level": 2}, "empty": []},
			"first-line-triage": {"confidence": 0.4, "summary": "flaky", "proceed": false},
			"first_line_triage": {"confidence": 0.4, "summary": "flaky", "proceed": false}},
		"vars": {"region": "eu", "threshold": "0.5"},
		"trigger": {"severity": "critical", "labels": {"service": "api", "team": "sre"}}}`},
	{"triage skipped", `{
		"steps": {
			"first-line-triage": {"confidence": 0.4, "summary": "flaky", "proceed": false},
			"first_line_triage": {"confidence": 0.4, "summary": "flaky", "proceed": false}},
		"vars": {"region": "eu", "threshold": "0.5"},
		"trigger": {"severity": "critical", "labels": {"service": "api", "team": "sre"}}}`},
	{"nulls", `{
		"steps": {"triage": {"confidence": null, "summary": null, "action": null, "services": null, "count": null,
			"tags": null, "meta": null, "proceed": null, "empty": null}},
		"vars": {"region": "eu", "threshold": "0.5"},
		"trigger": {"severity": null, "labels": {"service": null}}}`},
	{"wrong types", `{
		"steps": {"triage": {"confidence": "0.9", "summary": ["disk"], "action": 5, "services": "api,db", "count": "3",
			"proceed": "false", "tags": ["team"], "meta": [{"owner": "ops", "entries": [], "level": 2}], "empty": {}}},
		"vars": {"region": "eu", "threshold": "0.5"},
		"trigger": {"severity": 3, "labels": {"service": ["api"]}}}`},
	{"empty values", `{
		"steps": {"triage": {"confidence": 0, "summary": "", "action": "", "services": [], "count": 0, "tags": {},
			"meta": {}, "proceed": false, "empty": []}},
		"vars": {},
		"trigger": {"labels": {}}}`},
	{"nothing", `{"steps": {}, "vars": {}, "trigger": {}}`},
	{"numbers and strings", `{
		"steps": {"triage": {"confidence": 1, "action": "1", "count": 3.0, "services": [1, "api", true, null],
			"summary": "1", "tags": {"1": true}, "proceed": 1,
			"meta": {"owner": 1, "entries": [[], ["api"]], "level": "2"}, "empty": [[]]}},
		"vars": {"region": "eu", "threshold": "0.5"},
		"trigger": {"severity": "warning", "labels": {"service": "db"}}}`},
	{"nested lists", `{
		"steps": {"triage": {"services": [["api"], {"name": "api"}, null], "action": ["restart"], "confidence": [0.9],
			"count": [3], "tags": {"api": null}, "meta": {"owner": null, "entries": [{"k": 1}], "level": 2.5},
			"proceed": [false], "summary": {}, "empty": [0]}},
		"vars": {"region": "eu", "threshold": "0.5"},
		"trigger": {"severity": "warning", "labels": {"service": "db"}}}`},
	{"hyphenated name only", `{
		"steps": {"first-line-triage": {"confidence": 0.6, "summary": "x", "proceed": true},
			"triage": {"action": "restart", "confidence": 0.85}},
		"vars": {"region": "us"},
		"trigger": {"severity": "warning", "labels": {"service": "db"}}}`},
	{"odd keys", `{
		"steps": {"triage": {"odd key": 1, "dot.key": "x", "quote\"'key": true, "pct%": "p",
			"ü": "u", "{x}": 1, "and": "kw", "function": 2},
			"fan/3": {"summary": "branch"}},
		"vars": {"region": "eu", "threshold": "0.5"},
		"trigger": {"severity": "warning", "labels": {"service": "db"}}}`},
	{"unicode", `{
		"steps": {"triage": {"action": "Restart", "summary": "héllo 😀 wörld", "services": ["é", "😀"], "confidence": 0.75,
			"count": -1, "tags": {"é": 1}}},
		"vars": {"region": "eu", "threshold": "0.5"},
		"trigger": {"severity": "warning", "labels": {"service": "db"}}}`},
}

// differentialCases pairs conditions with the Jinja result worked out by
// hand for each document above (T or F, in document order). The
// documented deviations from Jinja are marked where they apply.
var differentialCases = []struct{ when, want string }{
	{`steps.triage.action == "restart"`, "TFFFFFFFTFF"},
	{`steps.triage.action != "restart"`, "FTTTTTTTFTT"},
	{`steps.triage.confidence > 0.8`, "TFFFFFTFTFF"},
	{`not steps.triage.confidence > 0.8`, "FFFFTFFFFFT"},
	{`steps.triage.confidence <= 0.8 or steps.triage.proceed`, "TFFFTFTFFFT"},
	{`steps.triage.proceed or steps.triage.confidence <= 0.8`, "TFFTTFTTFFT"},
	{`steps.triage.proceed`, "TFFTFFTTFFF"},
	{`not steps.triage.proceed`, "FTTFTTFFTTT"},
	{`steps.triage is defined`, "TFTTTFTTTTT"},
	{`steps.triage.summary is defined`, "TFTTTFTTFFT"},
	{`steps.triage.summary is not defined`, "FTFFFTFFTTF"},
	{`steps.triage.summary is undefined`, "FTFFFTFFTTF"},
	{`steps.triage.summary is none`, "FFTFFFFFFFF"},
	{`steps.triage.summary is not none`, "TTFTTTTTTTT"},
	{`steps.triage.summary == none`, "FFTFFFFFFFF"},
	{`steps.triage.meta.entries is defined`, "TFFFFFTTFFF"},
	{`steps.triage.meta.entries == []`, "TFFFFFFFFFF"},
	{`steps.triage.meta.level >= 2`, "TFFFFFFTFFF"},
	{`"api" in steps.triage.services`, "TFFTFFTFFFF"},
	{`"api" not in steps.triage.services`, "FTFFTTFTTTT"},
	{`steps.triage.action in ["restart", "reboot"]`, "TFFFFFFFTFF"},
	{`steps.triage.action not in ["restart", "reboot"]`, "FTTTTTTTFTT"},
	{`steps.triage.action in "restart now"`, "TFFFTFFFTFF"},
	{`steps.triage.action not in "restart now"`, "FFFFFFTFFFT"},
	{`"team" in steps.triage.tags`, "TFFTFFFFFFF"},
	{`steps.triage.count == 3`, "TFFFFFTFFFF"},
	// Ties: a comparison and its negation where the value equals the
	// constant (full: level 2, count 3; numbers: count 3.0; unicode:
	// confidence 0.75), so a boundary moved in the lowering is caught.
	{`steps.triage.meta.level < 2`, "FFFFFFFFFFF"},
	{`not steps.triage.meta.level < 2`, "TFFFFFFTFFF"},
	{`steps.triage.count <= 3`, "TFFFTFTFFFT"},
	{`not steps.triage.count < 3`, "TFFFFFTFFFF"},
	{`steps.triage.confidence >= 0.75`, "TFFFFFTFTFT"},
	{`not steps.triage.confidence > 0.75`, "FFFFTFFFFFT"},
	{`not (steps.triage.count >= 3)`, "FFFFTFFFFFT"},
	{`not (steps.triage.count != 3)`, "TFFFFFTFFFF"},
	{`not steps.triage.meta.level <= 2`, "FFFFFFFTFFF"},
	{`not steps.triage.count >= 3`, "FFFFTFFFFFT"},
	// Both sides missing: Jinja's ChainableUndefined says equal; here a
	// missing value equals nothing (documents 1, 5, 8, 9).
	{`steps.triage.count == steps.triage.count`, "TFTTTFTTFFT"},
	{`steps.triage.empty == steps.triage.empty`, "TFTTTFTTFFF"},
	{`steps.triage.services == ["api", "db"]`, "TFFFFFFFFFF"},
	{`steps.first_line_triage.proceed == false`, "TTFFFFFFFFF"},
	{`steps["first-line-triage"].proceed == false`, "TTFFFFFFFFF"},
	{`steps['first-line-triage'].summary == "x"`, "FFFFFFFFTFF"},
	{`service == "api"`, "TTFFFFFFFFF"},
	{`labels.team == "sre"`, "TTFFFFFFFFF"},
	{`severity in ["critical", "warning"]`, "TTFFFFTTTTT"},
	{`severity > "a"`, "TTFFFFTTTTT"},
	{`region == "eu" and steps.triage.proceed`, "TFFTFFTTFFF"},
	{`vars.threshold == "0.5"`, "TTTTFFTTFTT"},
	{`steps.triage["odd key"] == 1`, "FFFFFFFFFTF"},
	{`steps.triage["dot.key"] == "x"`, "FFFFFFFFFTF"},
	{`steps.triage["pct%"] is defined`, "FFFFFFFFFTF"},
	{`steps.triage["{x}"] == 1`, "FFFFFFFFFTF"},
	{`steps.triage["quote\"'key"]`, "FFFFFFFFFTF"},
	{`steps.triage["ü"] == "u"`, "FFFFFFFFFTF"},
	{`steps.triage.and == "kw" and steps.triage.function == 2`, "FFFFFFFFFTF"},
	{`steps["fan/3"].summary == "branch"`, "FFFFFFFFFTF"},
	{`"😀" in steps.triage.summary`, "FFFFFFFFFFT"},
	{`steps.triage.action < steps.triage.summary`, "FFFFFFFFFFT"},
	{`not (steps.triage.action == "restart" or steps.triage.count > 2)`, "FFFFTFFFFFT"},
	{`steps.triage.meta.owner == "ops"`, "TFFFFFFFFFF"},
	{`none in steps.triage.services`, "FFFFFFTTFFF"},
	{`["api"] in steps.triage.services`, "FFFFFFFTFFF"},
	{`steps.triage.tags.team is defined or steps.triage.action == "restart"`, "TFFFFFFFTFF"},
	{`steps.triage.services`, "TFFTFFTTFFT"},
	{`steps.triage.tags`, "TFFTFFTTFFT"},
	{`steps.triage.empty`, "FFFFFFTTFFF"},
	{`steps.triage.confidence >= steps.first_line_triage.confidence`, "TFFFFFFFFFF"},
	{`steps.triage.action in steps.triage.summary`, "FFFFTFTFFFF"},
	{`true and 1 == 1.0 and [1, [2]] == [1, [2]] and "a" in ["a"] and none is none`, "TTTTTTTTTTT"},
	{`steps.triage.entries == [] or [] in steps.triage.meta.entries`, "FFFFFFTFFFF"},
	{`steps.triage.meta.entries != [] and steps.triage.meta.entries`, "FFFFFFTTFFF"},
	{`steps.triage.meta.level < 3 and steps.triage.meta.level > 1`, "TFFFFFFTFFF"},
	{`not (steps.triage.meta.level < 3 and steps.triage.meta.level > 1)`, "FFFFFFFFFFF"},
	{`steps.triage.count > -2 and steps.triage.count < 2e0`, "FFFFTFFFFFT"},
	{`steps.triage.services == steps.triage.services and steps.triage.tags != steps.triage.meta`, "TFFTFFTTFFT"},
}

func TestDifferentialTable(t *testing.T) {
	bindings := make([]map[string]any, len(differentialDocs))
	for i, d := range differentialDocs {
		bindings[i] = decodeDoc(t, d.json)
	}
	exprs := make([]Expr, len(differentialCases))
	lowered := make([]string, len(differentialCases))
	for i, c := range differentialCases {
		if len(c.want) != len(differentialDocs) {
			t.Fatalf("%s: want has %d results for %d documents", c.when, len(c.want), len(differentialDocs))
		}
		e, err := Parse(c.when)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.when, err)
		}
		j, err := JSONata(e, testScope)
		if err != nil {
			t.Fatalf("JSONata(%q): %v", c.when, err)
		}
		exprs[i], lowered[i] = e, j
	}
	// The hand-written results and the oracle agree: checked without node.
	for i, c := range differentialCases {
		for d := range differentialDocs {
			want := c.want[d] == 'T'
			if got := oracle(exprs[i], oracleEnv(testScope, bindings[d])); got != want {
				t.Errorf("oracle: %s on %q = %v, hand-written %v", c.when, differentialDocs[d].name, got, want)
			}
		}
	}
	ref := evalReference(t, lowered, bindings)
	for i, c := range differentialCases {
		goRow := evalGo(lowered[i], bindings)
		for d := range differentialDocs {
			want := c.want[d] == 'T'
			checkCell(t, c.when, lowered[i], differentialDocs[d].name, want, ref[i][d], goRow[d])
		}
	}
}

// checkCell asserts that both engines returned the boolean want.
func checkCell(t *testing.T, when, lowered, doc string, want bool, ref, got cell) {
	t.Helper()
	rb, rok := ref.boolean()
	gb, gok := got.boolean()
	if rok && gok && rb == want && gb == want {
		return
	}
	t.Errorf("%s\n  on %q: want %v; jsonata@%s: %v; jsonata-go: %v\n  lowered: %s",
		when, doc, want, referenceVersion, ref, got, lowered)
}

// TestDifferentialRandom lowers conditions built at random from the
// grammar and checks both engines against the oracle on every document.
func TestDifferentialRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	bindings := make([]map[string]any, len(differentialDocs))
	envs := make([]map[string]ovalue, len(differentialDocs))
	for i, d := range differentialDocs {
		bindings[i] = decodeDoc(t, d.json)
		envs[i] = oracleEnv(testScope, bindings[i])
	}
	g := exprGen{rnd: rand.New(rand.NewPCG(4, 2))}
	const n = 400
	srcs := make([]string, 0, n)
	exprs := make([]Expr, 0, n)
	lowered := make([]string, 0, n)
	for len(srcs) < n {
		src := g.cond(3)
		e, err := Parse(src)
		if err != nil {
			continue // statically invalid (e.g. ordering against a list literal)
		}
		j, err := JSONata(e, testScope)
		if err != nil {
			t.Fatalf("JSONata(%q): %v", src, err)
		}
		srcs, exprs, lowered = append(srcs, src), append(exprs, e), append(lowered, j)
	}
	ref := evalReference(t, lowered, bindings)
	for i := range srcs {
		goRow := evalGo(lowered[i], bindings)
		for d := range differentialDocs {
			checkCell(t, srcs[i], lowered[i], differentialDocs[d].name, oracle(exprs[i], envs[d]), ref[i][d], goRow[d])
		}
	}
}

// exprGen writes random conditions over the paths and literals the
// documents exercise.
type exprGen struct{ rnd *rand.Rand }

var genPaths = []string{
	"steps.triage", "steps.triage.action", "steps.triage.confidence", "steps.triage.services",
	"steps.triage.count", "steps.triage.tags", "steps.triage.tags.team", "steps.triage.meta",
	"steps.triage.meta.entries", "steps.triage.meta.level", "steps.triage.meta.owner", "steps.triage.proceed",
	"steps.triage.summary", "steps.triage.empty", "steps.missing.x", `steps["first-line-triage"].proceed`,
	"steps.first_line_triage.confidence", "service", "severity", "labels", "labels.team", "vars.threshold",
	"region", `steps.triage["odd key"]`, "steps.triage.meta.entries.k",
}

var genLiterals = []string{
	`"restart"`, `"api"`, `"1"`, `""`, `"team"`, `"a"`, "0", "1", "2", "3", "0.85", "-1",
	"true", "false", "none", "[]", `["api", "db"]`, `[1, "api", none]`, `[[]]`, `["api"]`, `[3]`,
}

func (g exprGen) pick(list []string) string { return list[g.rnd.IntN(len(list))] }

func (g exprGen) value() string {
	if g.rnd.IntN(3) == 0 {
		return g.pick(genLiterals)
	}
	return g.pick(genPaths)
}

func (g exprGen) cond(depth int) string {
	if depth > 0 {
		switch g.rnd.IntN(6) {
		case 0:
			return g.cond(depth-1) + " and " + g.cond(depth-1)
		case 1:
			return g.cond(depth-1) + " or " + g.cond(depth-1)
		case 2:
			return "not (" + g.cond(depth-1) + ")"
		case 3:
			return "(" + g.cond(depth-1) + " or " + g.cond(depth-1) + ") and " + g.cond(depth-1)
		}
	}
	switch g.rnd.IntN(5) {
	case 0:
		return g.pick(genPaths)
	case 1:
		tests := []string{"is defined", "is not defined", "is none", "is not none"}
		return g.pick(genPaths) + " " + g.pick(tests)
	}
	ops := []string{"==", "!=", "<", "<=", ">", ">=", "in", "not in"}
	return strings.Join([]string{g.value(), g.pick(ops), g.value()}, " ")
}
