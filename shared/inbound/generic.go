package inbound

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// genericPayload is the generic webhook body. severity and labels are
// extensions beyond the reference format, so that generic events can be
// routed by trigger.match as finely as alerts.
type genericPayload struct {
	Pipeline       string          `json:"pipeline"`
	Event          string          `json:"event"`
	Source         string          `json:"source"`
	Summary        string          `json:"summary"`
	Severity       string          `json:"severity"`
	IdempotencyKey json.RawMessage `json:"idempotency_key"`
	Labels         map[string]any  `json:"labels"`
	Data           json.RawMessage `json:"data"`
}

// NormalizeGeneric normalizes a generic webhook body:
//
//	{"pipeline": "order-intake", "event": "order.created", "source": "shop",
//	 "summary": "...", "idempotency_key": "order-1042", "data": {...}}
//
// Every field is optional. source defaults to "generic"; event becomes the
// label "event"; idempotency_key (a string or a number) the fingerprint;
// data (an object) the metadata. A named pipeline is chosen by name,
// without trigger.match. Errors wrap ErrBadRequest.
func NormalizeGeneric(body []byte, now time.Time) (Context, error) {
	return normalizeGeneric("normalize generic payload", body, now, SourceGeneric)
}

func normalizeGeneric(op string, body []byte, now time.Time, defaultSource string) (Context, error) {
	raw, err := compactObject(body)
	if err != nil {
		return Context{}, badRequest(op, "%s", err)
	}
	var p genericPayload
	if err := decodeNumbers(raw, &p); err != nil {
		return Context{}, badRequest(op, "%s", jsonProblem(err))
	}
	c := Context{
		Source:     p.Source,
		Pipeline:   p.Pipeline,
		Severity:   p.Severity,
		Summary:    p.Summary,
		Labels:     make(map[string]string, len(p.Labels)+1),
		Raw:        raw,
		Metadata:   map[string]any{},
		ReceivedAt: now.UTC(),
	}
	if c.Source == "" {
		c.Source = defaultSource
	}
	for k, v := range p.Labels {
		s, ok := scalarString(v)
		if !ok {
			return Context{}, badRequest(op, "labels.%s must be a string, number or boolean", k)
		}
		c.Labels[k] = s
	}
	if p.Event != "" {
		c.Labels["event"] = p.Event
	}
	if k := bytes.TrimSpace(p.IdempotencyKey); len(k) > 0 && string(k) != "null" {
		var v any
		if err := decodeNumbers(k, &v); err != nil {
			return Context{}, badRequest(op, "idempotency_key: %s", jsonProblem(err))
		}
		s, ok := scalarString(v)
		if _, isBool := v.(bool); !ok || isBool {
			return Context{}, badRequest(op, "idempotency_key must be a string or a number")
		}
		c.Fingerprint = s
	}
	if d := bytes.TrimSpace(p.Data); len(d) > 0 && string(d) != "null" {
		if d[0] != '{' {
			return Context{}, badRequest(op, "data must be an object")
		}
		if err := decodeNumbers(d, &c.Metadata); err != nil {
			return Context{}, badRequest(op, "data: %s", jsonProblem(err))
		}
	}
	return c, nil
}

// scalarString writes a JSON scalar as a label value.
func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// decodeNumbers decodes JSON keeping numbers exact (as json.Number), so
// that a 20-digit order number survives the trip into the trigger.
func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}
