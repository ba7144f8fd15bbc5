package task

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestTriggerBindings(t *testing.T) {
	var trig map[string]any
	_ = json.Unmarshal([]byte(`{"team":"sre","service":"checkout","labels":{"env":"prod"},
		"alert":{"labels":{"cluster":"eu-1"},"name":"disk"},"severity":"page"}`), &trig)
	p := Pipeline{
		Include: []string{"service", "alert.labels.cluster", "missing", "alert.nope"},
		Vars:    map[string]string{"severity": "from-vars", "owner": "ops"},
	}
	b := map[string]any{"service": "preset"}
	p.TriggerBindings(b, trig)
	want := map[string]any{
		"labels":   map[string]any{"env": "prod"},
		"team":     "sre",
		"service":  "checkout",                                                                  // an include wins over what was bound before
		"cluster":  "eu-1",                                                                      // a dotted path under its leaf name
		"alert":    map[string]any{"labels": map[string]any{"cluster": "eu-1"}, "name": "disk"}, // and its root readable
		"severity": "from-vars",                                                                 // vars win
		"owner":    "ops",
	}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("bindings\n got %v\nwant %v", b, want)
	}

	empty := map[string]any{}
	Pipeline{}.TriggerBindings(empty, map[string]any{})
	if !reflect.DeepEqual(empty, map[string]any{"labels": map[string]any{}}) {
		t.Errorf("no trigger: %v, want only empty labels", empty)
	}
}
