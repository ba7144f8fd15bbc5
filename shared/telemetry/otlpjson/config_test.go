package otlpjson

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestEndpoint: the specification's path rules.
func TestEndpoint(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string // "" for refused
	}{
		{"nothing: the local collector", nil, "http://localhost:4318/v1/traces"},
		{"base without a path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces"},
		{"base with a slash", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318/"}, "https://collector:4318/v1/traces"},
		{"base with a path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://api.example.com/otlp"}, "https://api.example.com/otlp/v1/traces"},
		{"base with a path and a slash", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://api.example.com/otlp/"}, "https://api.example.com/otlp/v1/traces"},
		{"traces endpoint as it is", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://api.example.com/custom/traces"}, "https://api.example.com/custom/traces"},
		{"traces endpoint without a path", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318"}, "http://collector:4318/"},
		{"traces endpoint wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/v1/traces"}, "http://b:4318/v1/traces"},
		{"query kept", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318?tenant=x"}, "http://a:4318/v1/traces?tenant=x"},
		{"no scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, ""},
		{"grpc scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://collector:4317"}, ""},
		{"no host", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http:///v1/traces"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := FromEnv(env(c.env))
			if cfg.URL != c.want {
				t.Errorf("URL %q, want %q", cfg.URL, c.want)
			}
			if (err != nil) != (c.want == "") {
				t.Errorf("error %v", err)
			}
			if c.want == "" {
				if _, err := New(cfg); err == nil {
					t.Error("New took a refused endpoint")
				}
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	h, err := ParseHeaders(" api-key = a%20b%2Cc , x-tenant=t1,,Authorization=Basic%20dXNlcjpwYXNz=")
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Api-Key": {"a b,c"}, "X-Tenant": {"t1"}, "Authorization": {"Basic dXNlcjpwYXNz="}}
	if len(h) != len(want) {
		t.Errorf("headers %v, want %v", h, want)
	}
	for k, v := range want {
		if h.Get(k) != v[0] {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v[0])
		}
	}

	// Malformed entries are left out and named by position, never by value.
	h, err = ParseHeaders("good=1,sk-secret-value,bad key=sk-other,x=%zzsk-third,y=a%0Ab")
	if h.Get("good") != "1" || len(h) != 1 {
		t.Errorf("kept %v", h)
	}
	for _, want := range []string{"entry 2: not key=value", "entry 3: not a header name", "entry 4 (X)", "entry 5 (Y)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "sk-") {
		t.Errorf("the error shows a value: %v", err)
	}

	// The traces variable replaces the general one.
	c, err := FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=2", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "c=3"}))
	if err != nil || len(c.Headers) != 1 || c.Headers.Get("c") != "3" {
		t.Errorf("headers %v, %v", c.Headers, err)
	}
}

func TestTimeoutAndCompression(t *testing.T) {
	cases := []struct {
		env     map[string]string
		timeout time.Duration
		gzip    bool
		err     string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}, 2500 * time.Millisecond, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "700"}, 700 * time.Millisecond, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, 0, false, `OTEL_EXPORTER_OTLP_TIMEOUT "10s": not a number of milliseconds`},
		{map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "0"}, 0, false, "not a number of milliseconds"},
		{map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "GZIP"}, 0, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none"}, 0, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"}, 0, false, `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION "zstd": not gzip or none`},
	}
	for _, c := range cases {
		cfg, err := FromEnv(env(c.env))
		if cfg.Timeout != c.timeout || cfg.Gzip != c.gzip {
			t.Errorf("%v: timeout %s gzip %v", c.env, cfg.Timeout, cfg.Gzip)
		}
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%v: error %v, want %q", c.env, err, c.err)
		}
		if cfg.URL == "" {
			t.Errorf("%v: a malformed setting lost the endpoint", c.env)
		}
	}
}

// TestTLSFiles: certificate files are read by New, and a missing or
// empty one refused.
func TestTLSFiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("no certificate here"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": filepath.Join(dir, "missing.pem"), "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": "k.pem"}))
	if err != nil || c.CAFile != filepath.Join(dir, "missing.pem") || c.KeyFile != "k.pem" {
		t.Fatalf("%+v, %v", c, err)
	}
	for _, cfg := range []Config{
		{URL: "https://c/v1/traces", CAFile: filepath.Join(dir, "missing.pem")},
		{URL: "https://c/v1/traces", CAFile: empty},
		{URL: "https://c/v1/traces", KeyFile: "k.pem"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) took it", cfg)
		}
	}
}

// TestTLSCertificate: OTEL_EXPORTER_OTLP_CERTIFICATE makes the exporter
// trust a collector whose certificate the system does not.
func TestTLSCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	without := newExporter(t, Config{URL: srv.URL + "/v1/traces", MaxAttempts: 1})
	if err := without.ExportSpans(t.Context(), spans(t, 1)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA file: %v", err)
	}
	c, err := FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_CERTIFICATE": ca}))
	if err != nil {
		t.Fatal(err)
	}
	if err := newExporter(t, c).ExportSpans(t.Context(), spans(t, 1)); err != nil {
		t.Errorf("with the CA file: %v", err)
	}
}
