package webui

import (
	"encoding/xml"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/store"
)

// loopMachine: a → check; check loops back to a or goes on to done; a's
// failures go to failed.
const loopMachine = `{
  "QueryLanguage": "JSONata", "StartAt": "a",
  "States": {
    "a": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Next": "check",
          "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "failed"}]},
    "check": {"Type": "Choice", "Choices": [{"Condition": "{% $x < 3 %}", "Next": "a"}], "Default": "done"},
    "done": {"Type": "Succeed"},
    "failed": {"Type": "Fail", "Error": "E"}
  }
}`

type svgNode struct {
	State     string `xml:"data-state,attr"`
	Class     string `xml:"class,attr"`
	Transform string `xml:"transform,attr"`
	Title     string `xml:"title"`
}

type svgDoc struct {
	Nodes []svgNode `xml:"g"`
	Paths []struct {
		Class string `xml:"class,attr"`
		Title string `xml:"title"`
	} `xml:"path"`
}

// parseSVG reads the graph back as XML: it must be well formed.
func parseSVG(t *testing.T, svg string) (svgDoc, map[string][2]int) {
	t.Helper()
	var d svgDoc
	if err := xml.Unmarshal([]byte(svg), &d); err != nil {
		t.Fatalf("the graph is not well-formed XML: %v\n%s", err, svg)
	}
	pos := map[string][2]int{}
	re := regexp.MustCompile(`translate\((\d+) (\d+)\)`)
	for _, n := range d.Nodes {
		m := re.FindStringSubmatch(n.Transform)
		if m == nil {
			continue
		}
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[2])
		pos[n.State] = [2]int{x, y}
	}
	return d, pos
}

func TestGraphLayers(t *testing.T) {
	sm, err := asl.Parse([]byte(loopMachine))
	if err != nil {
		t.Fatal(err)
	}
	svg := string(drawGraph(sm, nil))
	d, pos := parseSVG(t, svg)
	if len(pos) != 4 {
		t.Fatalf("%d states drawn, want 4: %v", len(pos), pos)
	}
	// Each forward edge goes down a layer; the loop back does not push
	// a down.
	if !(pos["a"][1] < pos["check"][1] && pos["check"][1] < pos["done"][1]) {
		t.Errorf("layers: a %v, check %v, done %v", pos["a"], pos["check"], pos["done"])
	}
	if pos["failed"][1] != pos["check"][1] {
		t.Errorf("failed sits at %v, want a's next layer as check %v", pos["failed"], pos["check"])
	}
	var back, catch int
	for _, p := range d.Paths {
		if strings.Contains(p.Class, "back") {
			back++
			if !strings.Contains(p.Title, "$x &lt; 3") && !strings.Contains(p.Title, "$x < 3") {
				t.Errorf("the loop's label %q", p.Title)
			}
		}
		if strings.Contains(p.Class, "catch") {
			catch++
		}
	}
	if back != 1 || catch != 1 {
		t.Errorf("%d back edges, %d catches; want 1 and 1", back, catch)
	}
}

func TestGraphColours(t *testing.T) {
	sm, err := asl.Parse([]byte(loopMachine))
	if err != nil {
		t.Fatal(err)
	}
	c := 0.42
	facts := factsOf(
		[]store.StepRecord{{Name: "a", Attempt: 1, Status: store.StepFailed}, {Name: "a", Attempt: 2, Status: store.StepEscalated, EffectiveConfidence: &c}},
		[]store.HistoryEvent{{Type: "StateEntered", State: "a"}, {Type: "StateExited", State: "a"}, {Type: "StateEntered", State: "check"}},
	)
	d, _ := parseSVG(t, string(drawGraph(sm, facts)))
	want := map[string]string{"a": "s-escalated", "check": "s-active", "done": "s-none", "failed": "s-none"}
	for _, n := range d.Nodes {
		if w, ok := want[n.State]; ok && !strings.Contains(n.Class, w) {
			t.Errorf("state %s: class %q, want %s", n.State, n.Class, w)
		}
		if n.State == "a" && !strings.Contains(n.Title, "confidence 0.42, attempt 2") {
			t.Errorf("a's tooltip %q", n.Title)
		}
	}
}

// TestGraphOfExample: an example pipeline's machine draws every state,
// names escaped, within a sane size.
func TestGraphOfExample(t *testing.T) {
	_, sm, ds, err := gate.CompileFile("../../pipelines/sre-alert-triage.yaml", settings.Defaults{})
	if err != nil || sm == nil {
		t.Fatalf("compile: %v %v", err, ds)
	}
	svg := string(drawGraph(sm, nil))
	d, pos := parseSVG(t, svg)
	n := 0
	for name := range sm.States.All() {
		if !strings.HasPrefix(name, rerunPrefix) {
			n++
		}
		if _, drawn := pos[name]; drawn == strings.HasPrefix(name, rerunPrefix) {
			t.Errorf("state %q drawn: %v", name, drawn)
		}
	}
	if len(d.Nodes) != n {
		t.Errorf("%d nodes drawn, the machine has %d top-level states besides the rerun's", len(d.Nodes), n)
	}
	// In a rerun they are drawn.
	facts := factsOf(nil, []store.HistoryEvent{{Type: "StateEntered", State: "Rerun: go to step"}})
	if _, pos := parseSVG(t, string(drawGraph(sm, facts))); pos["Rerun: go to step"] == ([2]int{}) {
		t.Errorf("a rerun's graph lacks the state it entered")
	}
	if _, ok := pos["approve-remediation"]; !ok {
		t.Errorf("no node for approve-remediation")
	}
	if len(svg) > 40<<10 {
		t.Errorf("the graph is %d bytes", len(svg))
	}
}

func TestGraphEscapesNames(t *testing.T) {
	sm, err := asl.Parse([]byte(`{"QueryLanguage": "JSONata", "StartAt": "<b>x</b>", "States": {"<b>x</b>": {"Type": "Succeed"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	svg := string(drawGraph(sm, nil))
	if strings.Contains(svg, "<b>") || !strings.Contains(svg, "&lt;b&gt;x&lt;/b&gt;") {
		t.Errorf("names not escaped: %s", svg)
	}
}
