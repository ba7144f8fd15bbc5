package inbound

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 29, 17, 52, 3, 0, time.UTC)

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNormalizeAlertmanager(t *testing.T) {
	tests := []struct {
		name        string
		file        string
		strategy    string
		severity    string
		summary     string
		fingerprint string
		labels      map[string]string // a subset that must be present
		metadata    map[string]any    // a subset that must be present
		noMetadata  []string          // keys that must be absent
	}{
		{
			name: "firing", file: "alertmanager-firing.json",
			severity: "critical", summary: "p99 latency of checkout-api above 2s for 10 minutes",
			fingerprint: "5f1c2a9e7d3b4c10:firing",
			labels:      map[string]string{"service": "checkout-api", "team": "checkout", "namespace": "payments"},
			metadata: map[string]any{
				"status": "firing", "strategy": "most_severe", "alert_status": "firing",
				"external_url": "http://alertmanager.internal:9093", "alert_count": 1, "firing_count": 1,
				"resolved_count": 0, "starts_at": "2026-11-29T17:42:00Z", "receiver": "stepline",
				"group_key": `{}/{team="checkout"}:{alertname="CheckoutLatencyHigh"}`,
			},
			noMetadata: []string{"ends_at"},
		},
		{
			name: "resolved differs from firing by its fingerprint", file: "alertmanager-resolved.json",
			severity: "critical", summary: "p99 latency of checkout-api above 2s for 10 minutes",
			fingerprint: "5f1c2a9e7d3b4c10:resolved",
			metadata: map[string]any{
				"status": "resolved", "alert_status": "resolved",
				"starts_at": "2026-11-29T17:42:00Z", "ends_at": "2026-11-29T18:07:30Z",
			},
		},
		{
			name: "grouped, most severe firing alert", file: "alertmanager-grouped.json",
			severity: "critical", summary: "Pod payments/checkout-api-7d9f8b6c5-x2k4q is crash looping",
			fingerprint: "0c7e5b2a41f9d366:firing",
			labels:      map[string]string{"pod": "checkout-api-7d9f8b6c5-x2k4q", "severity": "critical"},
			metadata: map[string]any{
				"alert_count": 3, "firing_count": 2, "resolved_count": 1, "status": "firing",
				"starts_at":    "2026-11-29T17:33:45.918Z",
				"group_labels": map[string]string{"alertname": "KubePodCrashLooping", "namespace": "payments"},
			},
		},
		{
			name: "grouped, common labels", file: "alertmanager-grouped.json", strategy: "common_labels",
			// No common severity and no common summary: the most severe alert's.
			severity: "critical", summary: "Pod payments/checkout-api-7d9f8b6c5-x2k4q is crash looping",
			fingerprint: `{}/{team="checkout"}:{alertname="KubePodCrashLooping", namespace="payments"}:firing`,
			labels:      map[string]string{"alertname": "KubePodCrashLooping", "team": "checkout"},
			metadata:    map[string]any{"strategy": "common_labels", "starts_at": "2026-11-29T17:20:02.511Z"},
			noMetadata:  []string{"ends_at", "alert_status"},
		},
		{
			name: "firing, common labels", file: "alertmanager-firing.json", strategy: "common_labels",
			severity: "critical", summary: "p99 latency of checkout-api above 2s for 10 minutes",
			fingerprint: `{}/{team="checkout"}:{alertname="CheckoutLatencyHigh"}:firing`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := readEvent(t, tt.file)
			c, err := NormalizeAlertmanager(body, tt.strategy, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if c.Source != "alertmanager" || c.Severity != tt.severity || c.Summary != tt.summary || c.Fingerprint != tt.fingerprint {
				t.Errorf("got source %q severity %q summary %q fingerprint %q\nwant alertmanager %q %q %q",
					c.Source, c.Severity, c.Summary, c.Fingerprint, tt.severity, tt.summary, tt.fingerprint)
			}
			if c.Pipeline != "" {
				t.Errorf("pipeline = %q, want none (no pipeline label)", c.Pipeline)
			}
			for k, v := range tt.labels {
				if c.Labels[k] != v {
					t.Errorf("labels[%s] = %q, want %q", k, c.Labels[k], v)
				}
			}
			for k, v := range tt.metadata {
				if !reflect.DeepEqual(c.Metadata[k], v) {
					t.Errorf("metadata[%s] = %#v, want %#v", k, c.Metadata[k], v)
				}
			}
			for _, k := range tt.noMetadata {
				if v, ok := c.Metadata[k]; ok {
					t.Errorf("metadata[%s] = %#v, want it absent", k, v)
				}
			}
			if !c.ReceivedAt.Equal(testNow) {
				t.Errorf("received_at = %v", c.ReceivedAt)
			}
			var raw, orig any
			_ = json.Unmarshal(c.Raw, &raw)
			_ = json.Unmarshal(body, &orig)
			if !reflect.DeepEqual(raw, orig) {
				t.Error("raw is not the payload")
			}
		})
	}
}

func TestNormalizeAlertmanagerDetails(t *testing.T) {
	t.Run("pipeline label routes explicitly", func(t *testing.T) {
		c, err := NormalizeAlertmanager([]byte(`{"status":"firing","alerts":[{"status":"firing","labels":{"alertname":"X","pipeline":"disk-cleanup","severity":"warning"},"annotations":{"description":"disk 91% full"}}]}`), "", testNow)
		if err != nil {
			t.Fatal(err)
		}
		if c.Pipeline != "disk-cleanup" || c.Summary != "disk 91% full" {
			t.Errorf("pipeline %q summary %q", c.Pipeline, c.Summary)
		}
		if !strings.HasSuffix(c.Fingerprint, ":firing") || len(c.Fingerprint) != len("0123456789abcdef:firing") {
			t.Errorf("fingerprint without an alert fingerprint = %q, want a label hash", c.Fingerprint)
		}
	})
	t.Run("label hash is stable and label-sensitive", func(t *testing.T) {
		a := labelHash(map[string]string{"a": "1", "b": "2"})
		b := labelHash(map[string]string{"b": "2", "a": "1"})
		c := labelHash(map[string]string{"a": "1", "b": "3"})
		if a != b || a == c {
			t.Errorf("hashes %s %s %s", a, b, c)
		}
	})
	t.Run("resolved alerts lose to firing ones", func(t *testing.T) {
		c, err := NormalizeAlertmanager([]byte(`{"alerts":[
			{"status":"resolved","labels":{"severity":"critical"},"fingerprint":"aa"},
			{"status":"firing","labels":{"severity":"info"},"fingerprint":"bb"},
			{"status":"firing","labels":{"severity":"info"},"fingerprint":"cc"}]}`), "most_severe", testNow)
		if err != nil {
			t.Fatal(err)
		}
		if c.Fingerprint != "bb:firing" || c.Metadata["status"] != "firing" {
			t.Errorf("fingerprint %q status %v, want the first firing alert", c.Fingerprint, c.Metadata["status"])
		}
	})
	t.Run("alert status defaults to the group's", func(t *testing.T) {
		c, err := NormalizeAlertmanager([]byte(`{"status":"resolved","alerts":[{"labels":{},"fingerprint":"aa"}]}`), "", testNow)
		if err != nil {
			t.Fatal(err)
		}
		if c.Fingerprint != "aa:resolved" {
			t.Errorf("fingerprint %q", c.Fingerprint)
		}
	})
}

func TestNormalizeAlertmanagerErrors(t *testing.T) {
	tests := []struct {
		name, body, strategy, want string
	}{
		{"empty body", ``, "", "the body is empty"},
		{"not an object", `[{"status":"firing"}]`, "", "must be a JSON object"},
		{"malformed", `{"alerts": [}`, "", "malformed JSON"},
		{"no alerts", `{"status":"firing","alerts":[]}`, "", "alerts is empty or missing"},
		{"alerts missing", `{"status":"firing"}`, "", "alerts is empty or missing"},
		{"unknown strategy", `{"alerts":[{"status":"firing"}]}`, "loudest", `unknown strategy "loudest"`},
		{"bad group status", `{"status":"pending","alerts":[{"status":"firing"}]}`, "", `status "pending"`},
		{"bad alert status", `{"alerts":[{"status":"silenced"}]}`, "", `alerts[0].status "silenced"`},
		{"no status at all", `{"alerts":[{"labels":{}}]}`, "", "alerts[0] has no status"},
		{"label not a string", `{"alerts":[{"status":"firing","labels":{"severity":3}}]}`, "", "alerts.labels must be a string, not a number"},
		{"bad time", `{"alerts":[{"status":"firing","startsAt":"yesterday"}]}`, "", `alerts[0].startsAt: "yesterday" is not an RFC 3339 time`},
		{"alerts not a list", `{"alerts":{"status":"firing"}}`, "", "alerts must be an array, not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NormalizeAlertmanager([]byte(tt.body), tt.strategy, testNow)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrBadRequest) || HTTPStatus(err) != 400 {
				t.Errorf("error %v is not a bad request", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestNormalizeGeneric(t *testing.T) {
	c, err := NormalizeGeneric(readEvent(t, "generic-order.json"), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "generic" || c.Pipeline != "" || c.Fingerprint != "order-1042" || c.Labels["event"] != "order.created" {
		t.Errorf("got %+v", c)
	}
	if c.Summary != "Order 1042 from Acme Industrial: 3 lines, EUR 3,116.40" || c.Metadata["order_id"] != "1042" {
		t.Errorf("summary %q metadata %v", c.Summary, c.Metadata)
	}
	lines, _ := c.Metadata["lines"].([]any)
	if len(lines) != 3 {
		t.Errorf("metadata.lines = %v", c.Metadata["lines"])
	}

	tests := []struct {
		name, body string
		check      func(t *testing.T, c Context)
		wantErr    string
	}{
		{name: "empty object", body: `{}`, check: func(t *testing.T, c Context) {
			if c.Source != "generic" || c.Fingerprint != "" || len(c.Labels) != 0 || c.Metadata == nil {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "explicit pipeline and source", body: `{"pipeline":"order-intake","source":"telegram"}`, check: func(t *testing.T, c Context) {
			if c.Pipeline != "order-intake" || c.Source != "telegram" {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "numeric idempotency key keeps every digit", body: `{"idempotency_key": 12345678901234567890}`, check: func(t *testing.T, c Context) {
			if c.Fingerprint != "12345678901234567890" {
				t.Errorf("fingerprint %q", c.Fingerprint)
			}
		}},
		{name: "labels and severity", body: `{"event":"deploy.finished","severity":"info","labels":{"env":"prod","replicas":3,"canary":true}}`, check: func(t *testing.T, c Context) {
			want := map[string]string{"env": "prod", "replicas": "3", "canary": "true", "event": "deploy.finished"}
			if !reflect.DeepEqual(c.Labels, want) || c.Severity != "info" {
				t.Errorf("labels %v severity %q", c.Labels, c.Severity)
			}
		}},
		{name: "null data", body: `{"data":null,"idempotency_key":null}`, check: func(t *testing.T, c Context) {
			if len(c.Metadata) != 0 || c.Fingerprint != "" {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "data not an object", body: `{"data":[1,2]}`, wantErr: "data must be an object"},
		{name: "boolean key", body: `{"idempotency_key":true}`, wantErr: "idempotency_key must be a string or a number"},
		{name: "object key", body: `{"idempotency_key":{"a":1}}`, wantErr: "idempotency_key must be a string or a number"},
		{name: "nested label", body: `{"labels":{"a":{"b":1}}}`, wantErr: "labels.a must be a string, number or boolean"},
		{name: "summary not a string", body: `{"summary":42}`, wantErr: "summary must be a string, not a number"},
		{name: "not an object", body: `"order.created"`, wantErr: "must be a JSON object"},
		{name: "truncated", body: `{"event":"order.cr`, wantErr: "malformed JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NormalizeGeneric([]byte(tt.body), testNow)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want a bad request saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestContextJSON(t *testing.T) {
	c, err := NormalizeAlertmanager(readEvent(t, "alertmanager-firing.json"), "", testNow)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	want := []string{"fingerprint", "labels", "metadata", "pipeline", "raw", "received_at", "severity", "source", "summary", "team"}
	if len(keys) != len(want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %s", k, b)
		}
	}
	if string(m["team"]) != "null" || string(m["received_at"]) != `"2026-11-29T17:52:03Z"` {
		t.Errorf("team %s received_at %s", m["team"], m["received_at"])
	}
	c.Team = "checkout"
	b, _ = json.Marshal(c)
	var back Context
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Team != "checkout" || back.Fingerprint != c.Fingerprint || !back.ReceivedAt.Equal(c.ReceivedAt) || back.Labels["service"] != "checkout-api" {
		t.Errorf("round trip: %+v", back)
	}
	empty, _ := json.Marshal(Context{})
	if !strings.Contains(string(empty), `"labels":{}`) || !strings.Contains(string(empty), `"raw":null`) || !strings.Contains(string(empty), `"metadata":{}`) {
		t.Errorf("empty context encodes as %s", empty)
	}
}

// TestAWSSamples checks that the AWS-shaped samples carry payloads the
// normalizers accept: the API Gateway request's body and query, and the
// EventBridge event's detail.
func TestAWSSamples(t *testing.T) {
	var req struct {
		RawQueryString string            `json:"rawQueryString"`
		Headers        map[string]string `json:"headers"`
		Body           string            `json:"body"`
	}
	if err := json.Unmarshal(readEvent(t, "apigw-webhook-alertmanager.json"), &req); err != nil {
		t.Fatal(err)
	}
	q, err := url.ParseQuery(req.RawQueryString)
	if err != nil {
		t.Fatal(err)
	}
	if q.Get("source") != "alertmanager" || BearerToken(req.Headers["authorization"]) == "" {
		t.Errorf("query %v headers %v", q, req.Headers)
	}
	c, err := NormalizeAlertmanager([]byte(req.Body), q.Get("strategy"), testNow)
	if err != nil || c.Fingerprint != "5f1c2a9e7d3b4c10:firing" {
		t.Errorf("API Gateway body: %+v %v", c, err)
	}

	var ev struct {
		DetailType string          `json:"detail-type"`
		Detail     json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(readEvent(t, "eventbridge-order-created.json"), &ev); err != nil {
		t.Fatal(err)
	}
	c, err = NormalizeGeneric(ev.Detail, testNow)
	if err != nil || c.Labels["event"] != ev.DetailType || c.Fingerprint != "order-1042" {
		t.Errorf("EventBridge detail: %+v %v", c, err)
	}
}
