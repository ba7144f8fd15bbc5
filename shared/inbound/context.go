package inbound

import (
	"encoding/json"
	"time"
)

// Sources a webhook may name.
const (
	SourceAlertmanager = "alertmanager"
	SourceGeneric      = "generic"
	SourceManual       = "manual" // the default source of a manual run
)

// Context is a normalized event: the run's trigger. Every field is always
// encoded; team is null when the sender has no team, so that templates test
// it as false.
type Context struct {
	Source      string            `json:"source"`
	Pipeline    string            `json:"pipeline"` // the pipeline the event named, "" when routed by trigger.match
	Severity    string            `json:"severity"`
	Labels      map[string]string `json:"labels"`
	Summary     string            `json:"summary"`
	Fingerprint string            `json:"fingerprint"` // "" disables dedup
	Team        string            `json:"team"`
	Raw         json.RawMessage   `json:"raw"`      // the payload as received
	Metadata    map[string]any    `json:"metadata"` // source-specific facts
	ReceivedAt  time.Time         `json:"received_at"`
}

// contextJSON is Context's wire form.
type contextJSON struct {
	Source      string            `json:"source"`
	Pipeline    string            `json:"pipeline"`
	Severity    string            `json:"severity"`
	Labels      map[string]string `json:"labels"`
	Summary     string            `json:"summary"`
	Fingerprint string            `json:"fingerprint"`
	Team        *string           `json:"team"`
	Raw         json.RawMessage   `json:"raw"`
	Metadata    map[string]any    `json:"metadata"`
	ReceivedAt  time.Time         `json:"received_at"`
}

// MarshalJSON encodes c with empty maps as {}, a missing payload as null and
// an empty team as null.
func (c Context) MarshalJSON() ([]byte, error) {
	w := contextJSON{
		Source: c.Source, Pipeline: c.Pipeline, Severity: c.Severity, Labels: c.Labels,
		Summary: c.Summary, Fingerprint: c.Fingerprint, Raw: c.Raw, Metadata: c.Metadata,
		ReceivedAt: c.ReceivedAt.UTC(),
	}
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	if w.Metadata == nil {
		w.Metadata = map[string]any{}
	}
	if len(w.Raw) == 0 || !json.Valid(w.Raw) {
		w.Raw = json.RawMessage("null")
	}
	if c.Team != "" {
		w.Team = &c.Team
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (c *Context) UnmarshalJSON(b []byte) error {
	var w contextJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = Context{
		Source: w.Source, Pipeline: w.Pipeline, Severity: w.Severity, Labels: w.Labels,
		Summary: w.Summary, Fingerprint: w.Fingerprint, Raw: w.Raw, Metadata: w.Metadata,
		ReceivedAt: w.ReceivedAt,
	}
	if string(c.Raw) == "null" {
		c.Raw = nil
	}
	if w.Team != nil {
		c.Team = *w.Team
	}
	return nil
}

// field returns the value trigger.match compares for key: source,
// severity, summary and pipeline are the context's own fields, any other
// key is a label. ok is false for a label the event does not carry.
func (c Context) field(key string) (string, bool) {
	switch key {
	case "source":
		return c.Source, true
	case "severity":
		return c.Severity, true
	case "summary":
		return c.Summary, true
	case "pipeline":
		return c.Pipeline, true
	}
	v, ok := c.Labels[key]
	return v, ok
}
