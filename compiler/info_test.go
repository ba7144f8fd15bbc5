package compiler

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
)

const infoPipeline = `name: p
steps:
  - name: discover
    executor: scripted
    prompt_template: "find"
  - name: check
    executor: scripted
    when: steps.discover.count > 0 and steps.discover is defined
    prompt_template: "{{ steps.discover.output }}"
  - fan_out:
      name: each
      over: steps.discover.services
      executor: scripted
      prompt_template: "{{ item }} after {{ steps['check'].output }}"
`

// TestCheckInfo: Check records the when:, over: and template references
// it parsed, which Lower lowers from.
func TestCheckInfo(t *testing.T) {
	f, ds := Load("p.yaml", []byte(infoPipeline))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	if f.info == nil {
		t.Fatal("Check recorded no info")
	}
	steps := f.Pipeline.Steps
	if e, ok := f.info.when[steps[1]]; !ok || e.String() != "steps.discover.count > 0 and steps.discover is defined" {
		t.Errorf("when of check: %v, %v", e, ok)
	}
	if _, ok := f.info.when[steps[0]]; ok {
		t.Error("a step without when: has a parsed when:")
	}
	g := steps[2].(*pipeline.FanOut)
	if e, ok := f.info.over[g]; !ok || e.String() != "steps.discover.services" {
		t.Errorf("over of each: %v, %v", e, ok)
	}
	scan := f.info.template(g.PromptTemplate)
	if len(scan.refs) != 1 || scan.refs[0].name != "check" || scan.dynamic {
		t.Errorf("template scan of each: %+v", scan)
	}
	if scan := f.info.template("find"); len(scan.refs) != 0 {
		t.Errorf("a text without tags has references: %+v", scan)
	}
}

// TestLowerTwice: Lower rewrites a copy of what Check parsed, so lowering
// the same file again gives the same definition.
func TestLowerTwice(t *testing.T) {
	f, ds := Load("p.yaml", []byte(infoPipeline))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var defs [][]byte
	for range 2 {
		sm, ds := Lower(f)
		if sm == nil {
			t.Fatal(ds)
		}
		def, err := Marshal(sm)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, def)
	}
	if !bytes.Equal(defs[0], defs[1]) {
		t.Errorf("the second Lower differs:\n%s\n---\n%s", defs[0], defs[1])
	}
	if !bytes.Contains(defs[0], []byte("$step_discover.count > 0")) {
		t.Errorf("when: not lowered from the step's variable:\n%s", defs[0])
	}
}

// TestLowerUnchecked: Lower refuses a file Check has not seen, rather than
// lowering without its results.
func TestLowerUnchecked(t *testing.T) {
	f, ds := Parse("p.yaml", []byte(infoPipeline))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	sm, ds := Lower(f)
	if sm != nil || !strings.Contains(ds.String(), "Lower needs a checked file") {
		t.Errorf("Lower of an unchecked file: %v\n%s", sm != nil, ds)
	}
}
