package local

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/store"
)

// trustProject is the agent project of agentProjectFiles with a
// grounding judge.
func trustProject(t *testing.T) *project.Project {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"agents/grounding-judge/agent.yaml": "name: grounding-judge\nmodel: anthropic/claude-haiku-4-5\n",
		"agents/grounding-judge/soul.md":    "You judge claims against a trace.\n",
	}
	for k, v := range agentProjectFiles {
		files[k] = v
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := project.Load(filepath.Join(dir, "stepline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// investigation is an agent step (timeout_seconds timeout: over 900 it
// runs as agent_turns Tasks) with the trust blocks given, then a report.
func investigation(timeout int, trust string) string {
	return `name: trust
steps:
  - name: investigate
    executor: anthropic
    executor_config: {agent: investigator}
    prompt_template: "Why is {{ labels.service }} failing?"
    timeout_seconds: ` + strconv.Itoa(timeout) + `
    confidence_threshold: 0.7
` + trust + `  - name: report
    executor: scripted
    prompt_template: "Report: {{ steps.investigate.summary }}"
`
}

// The investigator calls one tool and answers 0.86.
const trustLoopReplies = `
investigate:
  - {tool_calls: [{name: grafana.query, arguments: {expr: pool}}]}
  - '{"confidence": 0.86, "summary": "the pool is exhausted", "next_step_context": "raise it"}'
tool_results:
  grafana.query: ['{"pool": "10/10 in use"}']
report: ['{"confidence": 0.9, "summary": "reported", "next_step_context": ""}']
`

func judged(g string) string {
	return "investigate:grounding: ['{\"confidence\": " + g + ", \"summary\": \"judged\", \"next_step_context\": \"\", \"reasoning\": {\"claims\": [{\"claim\": \"pool\", \"supported\": true}]}}']\n"
}

const poolCheck = `    deterministic_checks:
      - {name: pool, type: webhook, url: "https://automation.invalid/pool", payload: {claim: "{{ output.summary }}"}, expect: "response.body.max < 50"}
`

// TestTrustScenarios runs pipelines with a grounding judge and
// deterministic checks through the compiled state machine in the local
// engine, and checks each run's status, the investigate step's status,
// its combined trust and the signals of its trust report.
func TestTrustScenarios(t *testing.T) {
	proj := trustProject(t)
	tests := []struct {
		name      string
		timeout   int
		trust     string
		replies   string
		status    store.RunStatus
		step      string // the investigate step's final status
		combined  float64
		policy    string
		g, d      string // the signals as "null" or their value
		wantRecs  int    // records of investigate
		checkNote string // a check's outcome, "name outcome"
		threshold string // confidence_threshold when not 0.7
	}{
		{name: "G enforced escalates below the threshold", timeout: 120, trust: "    grounding: {enforce: true}\n", replies: judged("0.6"),
			status: store.RunEscalated, step: "escalated", combined: 0.6, policy: store.PolicyTrustVector, g: "0.6", d: "null", wantRecs: 1},
		{name: "G enforced at the threshold completes", timeout: 120, trust: "    grounding: {enforce: true}\n", replies: judged("0.7"),
			status: store.RunCompleted, step: "completed", combined: 0.7, policy: store.PolicyTrustVector, g: "0.7", d: "null", wantRecs: 1},
		{name: "G in shadow is recorded only", timeout: 120, trust: "    grounding: {}\n", replies: judged("0.1"),
			status: store.RunCompleted, step: "completed", combined: 0.86, policy: store.PolicyLegacyConfidence, g: "0.1", d: "null", wantRecs: 1},
		{name: "G soft-failed: the judge's call fails", timeout: 120, trust: "    grounding: {enforce: true}\n", replies: "investigate:grounding: [{error: \"http 503\"}]\n",
			status: store.RunCompleted, step: "completed", combined: 0.86, policy: store.PolicyLegacyConfidence, g: "null", d: "null", wantRecs: 1},
		{name: "D passed", timeout: 120, trust: poolCheck, replies: "investigate:check:pool: ['{\"max\": 10}']\n",
			status: store.RunCompleted, step: "completed", combined: 0.86, policy: store.PolicyTrustVector, g: "null", d: "true", wantRecs: 1, checkNote: "pool passed"},
		{name: "D failed at the boundary", timeout: 120, trust: poolCheck, replies: "investigate:check:pool: ['{\"max\": 50}']\n",
			status: store.RunEscalated, step: "escalated", combined: 0, policy: store.PolicyTrustVector, g: "null", d: "false", wantRecs: 1, checkNote: "pool failed"},
		{name: "D errored: fails closed", timeout: 120, trust: poolCheck, replies: "investigate:check:pool: [{error: timeout}]\n",
			status: store.RunEscalated, step: "escalated", combined: 0, policy: store.PolicyTrustVector, g: "null", d: "false", wantRecs: 1, checkNote: "pool error"},
		{name: "veto, G and D together", timeout: 120,
			threshold: "0.5",
			trust:     "    verifier: {executor: scripted, mode: independent, combination_strategy: veto, veto_floor: 0.6, trigger: {always: true}}\n    grounding: {enforce: true}\n" + poolCheck,
			replies:   "investigate:verifier: ['{\"confidence\": 0.55, \"summary\": \"doubtful\", \"next_step_context\": \"\"}']\n" + judged("0.52") + "investigate:check:pool: ['{\"max\": 10}']\n",
			status:    store.RunCompleted, step: "completed", combined: 0.52, policy: store.PolicyTrustVector, g: "0.52", d: "true", wantRecs: 1},
		{name: "a human check approved", timeout: 120, trust: poolCheck + "      - {name: signoff, type: human}\n",
			replies: "investigate:check:pool: ['{\"max\": 10}']\ninvestigate:check:signoff: [{decision: approve, by: lead}]\n",
			status:  store.RunCompleted, step: "completed", combined: 0.86, policy: store.PolicyTrustVector, g: "null", d: "true", wantRecs: 1, checkNote: "signoff passed"},
		{name: "a human check rejected", timeout: 120, trust: "    deterministic_checks: [{name: signoff, type: human}]\n",
			replies: "investigate:check:signoff: [{decision: reject, by: lead}]\n",
			status:  store.RunEscalated, step: "escalated", combined: 0, policy: store.PolicyTrustVector, g: "null", d: "false", wantRecs: 1, checkNote: "signoff failed"},
		{name: "past one invocation: G and D after the last Task", timeout: 1800, trust: "    grounding: {enforce: true}\n" + poolCheck + "      - {name: signoff, type: human}\n",
			replies: judged("0.8") + "investigate:check:pool: ['{\"max\": 10}']\ninvestigate:check:signoff: [approve]\n",
			status:  store.RunCompleted, step: "completed", combined: 0.8, policy: store.PolicyTrustVector, g: "0.8", d: "true", wantRecs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := investigation(tt.timeout, tt.trust)
			if tt.threshold != "" {
				src = strings.Replace(src, "confidence_threshold: 0.7", "confidence_threshold: "+tt.threshold, 1)
			}
			o, steps, _ := runScenarioIn(t, proj, src, trustLoopReplies+tt.replies, "")
			if o.Status != tt.status {
				t.Fatalf("run %s (%s), want %s", o.Status, o.Reason, tt.status)
			}
			var recs []store.StepRecord
			for _, s := range steps {
				if s.Name == "investigate" {
					recs = append(recs, s)
				}
			}
			if len(recs) != tt.wantRecs {
				t.Fatalf("%d records of investigate, want %d", len(recs), tt.wantRecs)
			}
			rec := recs[len(recs)-1]
			rep := rec.Trust
			if string(rec.Status) != tt.step || rep == nil {
				t.Fatalf("investigate %s, report %v", rec.Status, rep)
			}
			if rep.CombinedTrust != tt.combined || rep.Gate.Policy != tt.policy || rep.Gate.Decision != tt.step {
				t.Errorf("combined %v policy %s decision %s, want %v %s %s", rep.CombinedTrust, rep.Gate.Policy, rep.Gate.Decision, tt.combined, tt.policy, tt.step)
			}
			if got := signal(rep.Signals.G); got != tt.g {
				t.Errorf("G %s, want %s", got, tt.g)
			}
			d := "null"
			if rep.Signals.D != nil {
				d = strconv.FormatBool(*rep.Signals.D)
			}
			if d != tt.d || rep.Signals.C != nil || rep.Signals.S != 0.86 {
				t.Errorf("D %s C %v S %v, want D %s, C null, S 0.86", d, rep.Signals.C, rep.Signals.S, tt.d)
			}
			if tt.checkNote != "" {
				name, outcome, _ := strings.Cut(tt.checkNote, " ")
				found := false
				for _, c := range rep.DeterministicChecks {
					if c.Name == name {
						found = c.Outcome == outcome
					}
				}
				if !found {
					t.Errorf("check %s is not %s: %+v", name, outcome, rep.DeterministicChecks)
				}
			}
			if *rec.EffectiveConfidence != rep.Signals.SAfterV {
				t.Errorf("effective confidence %v, S after V %v", *rec.EffectiveConfidence, rep.Signals.SAfterV)
			}
		})
	}
}

func signal(v *float64) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
