package settings

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/stepline/stepline/shared/pipeline"
)

// DeliveryConfig is a webhook or notify step's executor_config, read.
type DeliveryConfig struct {
	URL         string
	Method      string
	Headers     map[string]string
	ContentType string
	// Payload is the structured body: a mapping or a list (for notify
	// also a string, sent as it is); nil when there is none.
	Payload any
}

// ReadWebhook reads a webhook executor_config; its issues are r's.
func ReadWebhook(r *Reader) DeliveryConfig {
	return readDelivery(r, pipeline.ExecWebhook)
}

// ReadNotify reads a notify executor_config; its issues are r's.
func ReadNotify(r *Reader) DeliveryConfig {
	return readDelivery(r, pipeline.ExecNotify)
}

func readDelivery(r *Reader, executor string) DeliveryConfig {
	c := DeliveryConfig{ContentType: "application/json"}
	c.URL = r.url("url", true)
	c.Method = r.method("method")
	c.Headers = r.headers("headers")
	ctKnown := true
	if ct := strings.TrimSpace(r.str("content_type", false)); ct != "" {
		if _, _, err := mime.ParseMediaType(ct); err != nil && !r.pending(ct) {
			r.fail("content_type", "%q is not a media type", ct)
			ctKnown = false
		}
		ctKnown = ctKnown && !r.pending(ct)
		c.ContentType = ct
	}
	r.Seconds("timeout_seconds")
	readPayload(r, executor, &c, ctKnown)
	return c
}

// readPayload reads executor_config.payload into c and checks that it can
// be sent: a structured payload needs a body (not GET) and a content type
// it can be encoded as (checked when ctKnown).
func readPayload(r *Reader, executor string, c *DeliveryConfig, ctKnown bool) {
	v := r.Get("payload")
	switch x := v.(type) {
	case nil:
		if executor == pipeline.ExecNotify && c.Method != http.MethodGet {
			c.Payload = map[string]any{} // notify always posts a body: {} by default
		}
		return
	case string:
		if executor != pipeline.ExecNotify {
			r.fail("payload", "want a mapping or a list, got a string (a text body is the prompt_template)")
			return
		}
		c.Payload = x
	case []any:
		c.Payload = x
	default:
		m, ok := stringMap(v)
		if !ok {
			want := "a mapping or a list"
			if executor == pipeline.ExecNotify {
				want = "a mapping, a list or a string"
			}
			r.fail("payload", "want %s, got %s", want, TypeName(v))
			return
		}
		c.Payload = m
	}
	if c.Method == http.MethodGet {
		r.fail("payload", "a GET request has no body: use POST, PUT, PATCH or DELETE, or drop payload")
		return
	}
	if ctKnown {
		if _, is := EncodePayload(c.Payload, c.ContentType); is != nil {
			r.issues = append(r.issues, is)
		}
	}
}

// EncodePayload encodes a payload for its content type: a string as it
// is; a mapping or a list as JSON, or a mapping of scalars as form fields
// for application/x-www-form-urlencoded. A problem is returned as the
// issue of the payload key it concerns; it never quotes a value, which
// may hold a resolved secret.
func EncodePayload(payload any, contentType string) ([]byte, *ConfigIssue) {
	if s, ok := payload.(string); ok {
		return []byte(s), nil
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "application/x-www-form-urlencoded":
		m, ok := payload.(map[string]any)
		if !ok {
			return nil, &ConfigIssue{Key: "payload", Msg: "form fields need a mapping, got " + TypeName(payload)}
		}
		form := url.Values{}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch v := m[k].(type) {
			case string:
				form.Set(k, v)
			case bool:
				form.Set(k, strconv.FormatBool(v))
			case nil:
				form.Set(k, "")
			default:
				f, ok := Number(v)
				if !ok {
					return nil, &ConfigIssue{Key: "payload." + k, Msg: "form fields must be scalars"}
				}
				form.Set(k, strconv.FormatFloat(f, 'f', -1, 64))
			}
		}
		return []byte(form.Encode()), nil
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, &ConfigIssue{Key: "payload", Msg: "cannot be encoded as JSON: " + err.Error()}
		}
		return b, nil
	}
	return nil, &ConfigIssue{Key: "payload", Msg: fmt.Sprintf("a mapping or a list cannot be sent as %q: use application/json (the default) or application/x-www-form-urlencoded", mt)}
}
