package local

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/telemetry"
)

// TestFanOutTrace: each fan-out item is a span "branch <group>" whose
// step is the item's record name and which carries its index; the join
// closes the group.
func TestFanOutTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	defer telemetry.Install(telemetry.NewProvider("stepline-test", sdktrace.WithSyncer(exp)))()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeText(t, path, "name: fan\nsteps:\n  - fan_out: {name: f, over: '[1, 2]', executor: scripted}\n")
	replies := filepath.Join(dir, "replies.yaml")
	writeText(t, replies, "f/0: ["+reply(0.9, "one", "")+"]\nf/1: ["+reply(0.8, "two", "")+"]\n")
	r := openScripted(t, dir)
	o, err := r.Run(context.Background(), path, json.RawMessage(`{}`), "", WithResponses(replies))
	if err != nil || o.Status != store.RunCompleted {
		t.Fatalf("run: %+v, %v", o, err)
	}
	var names []string
	items := map[string]int64{}
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
		a := attrs(s)
		if i, ok := a[telemetry.Item]; ok {
			items[a[telemetry.Step].AsString()] = i.AsInt64()
		}
	}
	sort.Strings(names)
	if got := strings.Join(names, ", "); got != "branch f, branch f, chat scripted, chat scripted, join f, run fan" {
		t.Errorf("spans %s", got)
	}
	if len(items) != 2 || items["f/0"] != 0 || items["f/1"] != 1 {
		t.Errorf("items (step → index) %v, want f/0 → 0, f/1 → 1", items)
	}
}
