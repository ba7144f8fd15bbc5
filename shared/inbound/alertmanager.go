package inbound

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Alertmanager grouping strategies.
const (
	StrategyMostSevere   = "most_severe"   // the context describes the most severe alert (default)
	StrategyCommonLabels = "common_labels" // the context describes the group
)

// Alert statuses of an Alertmanager payload.
const (
	statusFiring   = "firing"
	statusResolved = "resolved"
)

// amPayload is an Alertmanager webhook body (version 4).
type amPayload struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []amAlert         `json:"alerts"`
}

type amAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt"`
	EndsAt       string            `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`

	starts, ends time.Time // parsed; zero when unset
}

// SeverityRank orders severities for strategy most_severe: critical 0,
// warning 1, info 2, anything else 3. Case is ignored.
func SeverityRank(s string) int {
	switch strings.ToLower(s) {
	case "critical":
		return 0
	case "warning":
		return 1
	case "info":
		return 2
	}
	return 3
}

// NormalizeAlertmanager normalizes an Alertmanager webhook payload. strategy
// is StrategyMostSevere (also for "") or StrategyCommonLabels. Errors wrap
// ErrBadRequest and say what is wrong with the payload.
func NormalizeAlertmanager(body []byte, strategy string, now time.Time) (Context, error) {
	const op = "normalize alertmanager payload"
	switch strategy {
	case "":
		strategy = StrategyMostSevere
	case StrategyMostSevere, StrategyCommonLabels:
	default:
		return Context{}, badRequest(op, "unknown strategy %q: use %q or %q", strategy, StrategyMostSevere, StrategyCommonLabels)
	}
	raw, err := compactObject(body)
	if err != nil {
		return Context{}, badRequest(op, "%s", err)
	}
	var p amPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return Context{}, badRequest(op, "%s", jsonProblem(err))
	}
	if len(p.Alerts) == 0 {
		return Context{}, badRequest(op, "alerts is empty or missing")
	}
	if p.Status != "" && p.Status != statusFiring && p.Status != statusResolved {
		return Context{}, badRequest(op, "status %q is neither %q nor %q", p.Status, statusFiring, statusResolved)
	}
	firing := 0
	for i := range p.Alerts {
		a := &p.Alerts[i]
		if a.Status == "" {
			a.Status = p.Status
		}
		switch a.Status {
		case statusFiring:
			firing++
		case statusResolved:
		case "":
			return Context{}, badRequest(op, "alerts[%d] has no status", i)
		default:
			return Context{}, badRequest(op, "alerts[%d].status %q is neither %q nor %q", i, a.Status, statusFiring, statusResolved)
		}
		if a.starts, err = amTime(a.StartsAt); err != nil {
			return Context{}, badRequest(op, "alerts[%d].startsAt: %s", i, err)
		}
		if a.ends, err = amTime(a.EndsAt); err != nil {
			return Context{}, badRequest(op, "alerts[%d].endsAt: %s", i, err)
		}
	}
	status := p.Status
	if status == "" {
		status = statusResolved
		if firing > 0 {
			status = statusFiring
		}
	}

	top := mostSevere(p.Alerts)
	c := Context{
		Source:     SourceAlertmanager,
		Raw:        raw,
		ReceivedAt: now.UTC(),
	}
	md := map[string]any{
		"status":             status,
		"strategy":           strategy,
		"receiver":           p.Receiver,
		"group_key":          p.GroupKey,
		"group_labels":       orEmpty(p.GroupLabels),
		"common_labels":      orEmpty(p.CommonLabels),
		"common_annotations": orEmpty(p.CommonAnnotations),
		"external_url":       p.ExternalURL,
		"alert_count":        len(p.Alerts),
		"firing_count":       firing,
		"resolved_count":     len(p.Alerts) - firing,
		"truncated_alerts":   p.TruncatedAlerts,
	}
	if p.Version != "" {
		md["version"] = p.Version
	}

	switch strategy {
	case StrategyMostSevere:
		a := p.Alerts[top]
		c.Labels = clone(a.Labels)
		c.Severity = a.Labels["severity"]
		c.Summary = summaryOf(a.Annotations)
		c.Fingerprint = cmp.Or(a.Fingerprint, labelHash(a.Labels)) + ":" + a.Status
		md["alert_status"] = a.Status
		md["alert_fingerprint"] = a.Fingerprint
		md["annotations"] = orEmpty(a.Annotations)
		md["generator_url"] = a.GeneratorURL
		setTime(md, "starts_at", a.starts)
		setTime(md, "ends_at", a.ends)
	case StrategyCommonLabels:
		c.Labels = clone(p.CommonLabels)
		c.Severity = p.CommonLabels["severity"]
		if c.Severity == "" {
			c.Severity = p.Alerts[top].Labels["severity"]
		}
		c.Summary = summaryOf(p.CommonAnnotations)
		if c.Summary == "" {
			c.Summary = summaryOf(p.Alerts[top].Annotations)
		}
		c.Fingerprint = cmp.Or(p.GroupKey, groupHash(p)) + ":" + status
		var starts, ends time.Time
		for _, a := range p.Alerts {
			if !a.starts.IsZero() && (starts.IsZero() || a.starts.Before(starts)) {
				starts = a.starts
			}
			if a.ends.After(ends) {
				ends = a.ends
			}
		}
		setTime(md, "starts_at", starts)
		if firing == 0 {
			setTime(md, "ends_at", ends)
		}
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Pipeline = c.Labels["pipeline"]
	c.Metadata = md
	return c, nil
}

// mostSevere returns the index of the alert the most_severe strategy
// describes: a firing alert when there is one, of the lowest severity
// rank, the earliest on a tie.
func mostSevere(alerts []amAlert) int {
	best := 0
	key := func(a amAlert) (int, int) {
		f := 1
		if a.Status == statusFiring {
			f = 0
		}
		return f, SeverityRank(a.Labels["severity"])
	}
	bf, br := key(alerts[0])
	for i := 1; i < len(alerts); i++ {
		f, r := key(alerts[i])
		if f < bf || (f == bf && r < br) {
			best, bf, br = i, f, r
		}
	}
	return best
}

// amTime parses an Alertmanager time. Alertmanager writes the zero time
// for "not set" (the endsAt of a firing alert); both it and "" are unset.
func amTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", s)
	}
	if t.Year() <= 1 {
		return time.Time{}, nil
	}
	return t.UTC(), nil
}

func setTime(md map[string]any, key string, t time.Time) {
	if !t.IsZero() {
		md[key] = t.Format(time.RFC3339Nano)
	}
}

func summaryOf(annotations map[string]string) string {
	if s := annotations["summary"]; s != "" {
		return s
	}
	return annotations["description"]
}

// labelHash stands in for a missing alert fingerprint: the first 16 hex
// digits of SHA-256 over the sorted label pairs.
func labelHash(labels map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(h, "%s=%q\n", k, labels[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// groupHash stands in for a missing group key: the common labels, or,
// when there are none, the alerts' fingerprints.
func groupHash(p amPayload) string {
	if len(p.CommonLabels) > 0 {
		return labelHash(p.CommonLabels)
	}
	fps := make([]string, len(p.Alerts))
	for i, a := range p.Alerts {
		fps[i] = cmp.Or(a.Fingerprint, labelHash(a.Labels))
	}
	slices.Sort(fps)
	sum := sha256.Sum256([]byte(strings.Join(fps, "\n")))
	return hex.EncodeToString(sum[:])[:16]
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// compactObject checks that body is one JSON object and returns it
// compacted.
func compactObject(body []byte) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("the body is empty")
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("the payload must be a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, fmt.Errorf("%s", jsonProblem(err))
	}
	return buf.Bytes(), nil
}
