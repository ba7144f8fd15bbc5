package infra

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/secret"
)

func TestPhysicalName(t *testing.T) {
	long := strings.Repeat("a", 80)
	tests := []struct {
		name, pipeline string
		limit          int
		want           string
	}{
		{name: "fits", pipeline: "sre-alert-triage", limit: 80, want: "Stepline-sre-alert-triage"},
		{name: "exactly the limit", pipeline: strings.Repeat("b", 71), limit: 80, want: "Stepline-" + strings.Repeat("b", 71)},
		{name: "cut with a hash", pipeline: long, limit: 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := physicalName("Stepline", tt.pipeline, tt.limit)
			if len(got) > tt.limit {
				t.Errorf("%q is %d characters, over %d", got, len(got), tt.limit)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("physicalName = %q, want %q", got, tt.want)
			}
		})
	}
	a := physicalName("Stepline", long, 80)
	b := physicalName("Stepline", long[:79]+"b", 80)
	if a == b {
		t.Errorf("two long names that differ at the end both became %q", a)
	}
	if a != physicalName("Stepline", long, 80) {
		t.Error("physicalName is not deterministic")
	}
}

func TestConstructID(t *testing.T) {
	for in, want := range map[string]string{
		"sre-alert-triage": "SreAlertTriage",
		"order_intake":     "OrderIntake",
		"a1-b2":            "A1B2",
		"step":             "Step",
	} {
		if got := constructID(in); got != want {
			t.Errorf("constructID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckEnvironmentSize(t *testing.T) {
	pipelines := func(n int) []*plan.Pipeline {
		out := make([]*plan.Pipeline, n)
		for i := range out {
			out[i] = &plan.Pipeline{Name: fmt.Sprintf("pipeline-number-%03d", i)}
		}
		return out
	}
	secrets := func(n int) map[string]secret.Ref {
		out := map[string]secret.Ref{}
		for i := range n {
			out[fmt.Sprintf("API_KEY_%03d", i)] = secret.Ref{Source: secret.SourceSecretsManager, ID: fmt.Sprintf("stepline/team-%03d/api", i)}
		}
		return out
	}
	// The pipelines no longer count: the functions find their state
	// machines by name.
	if err := (&config{pipelines: pipelines(500), secrets: secrets(1)}).checkEnvironmentSize(); err != nil {
		t.Errorf("500 pipelines: %v", err)
	}
	err := (&config{pipelines: pipelines(1), secrets: secrets(200)}).checkEnvironmentSize()
	if err == nil || !strings.Contains(err.Error(), "200 secret mappings need about") {
		t.Errorf("200 secrets: error = %v, want the environment to be too large", err)
	}
}
