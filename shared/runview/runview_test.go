package runview

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		query         string
		limit, offset int
		err           error
	}{
		{"", DefaultLimit, 0, nil},
		{"limit=1", 1, 0, nil},
		{"limit=0", 0, 0, ErrQuery},
		{fmt.Sprintf("limit=%d", MaxLimit), MaxLimit, 0, nil},
		{fmt.Sprintf("limit=%d", MaxLimit+1), 0, 0, ErrQuery},
		{"limit=ten", 0, 0, ErrQuery},
		{"offset=0", DefaultLimit, 0, nil},
		{"offset=-1", 0, 0, ErrQuery},
		{fmt.Sprintf("offset=%d", store.MaxRunOffset), DefaultLimit, store.MaxRunOffset, nil},
		{fmt.Sprintf("offset=%d", store.MaxRunOffset+1), 0, 0, ErrQuery},
		{"stage=production&status=completed&pipeline=p&team=t", DefaultLimit, 0, nil},
		{"stage=prod", 0, 0, store.ErrInvalid},
		{"status=done", 0, 0, store.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			f, err := Filter(q)
			if !errors.Is(err, tt.err) || (err == nil && (f.Limit != tt.limit || f.Offset != tt.offset)) {
				t.Fatalf("Filter(%s) = %+v, %v", tt.query, f, err)
			}
		})
	}
}

func TestViews(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	run := Run(store.Run{ID: "r", Pipeline: "p", Status: store.RunRunning, StartedAt: at})
	if run["pipeline_name"] != "p" || run["triggered_at"] != at || run["completed_at"] != nil || run["id"] != "r" {
		t.Errorf("run view %v", run)
	}
	if _, ok := run["completed_at"]; !ok {
		t.Error("completed_at left out of a running run")
	}
	step := Step(store.StepRecord{Name: "a", Output: []byte(`{"confidence":1}`), FinishedAt: at})
	if string(step["parsed_output"].(json.RawMessage)) != `{"confidence":1}` || step["executed_at"] != at {
		t.Errorf("step view %v", step)
	}
}

func TestStepTrust(t *testing.T) {
	g, d := 0.5, false
	step := Step(store.StepRecord{Name: "a", Output: []byte(`{"confidence":1,"artifacts":{"log":"x"}}`),
		Trust: &store.TrustReport{Signals: store.TrustSignals{G: &g, D: &d, VMode: "critic"}}})
	if step["grounding_score"] != 0.5 || step["deterministic_passed"] != false || step["verifier_mode"] != "critic" ||
		string(step["artifacts"].(json.RawMessage)) != `{"log":"x"}` {
		t.Errorf("step view %v", step)
	}
	plain := Step(store.StepRecord{Name: "b"})
	for _, k := range []string{"grounding_score", "deterministic_passed", "verifier_mode"} {
		if v, ok := plain[k]; !ok || v != nil {
			t.Errorf("%s = %v, %v; want null", k, v, ok)
		}
	}
}
