package awsrest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeS3 keeps objects by path (path-style: /bucket/key) and checks
// every request's S3 signature.
func fakeS3(t *testing.T) (*httptest.Server, map[string]string) {
	t.Helper()
	var mu sync.Mutex
	objects := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := checkSigned(r, body, "s3", true, "x-amz-content-sha256"); err != nil {
			t.Error(err)
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<Error><Code>SignatureDoesNotMatch</Code></Error>`)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodPut:
			if r.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
			}
			objects[r.URL.EscapedPath()] = string(body)
			w.Header().Set("ETag", `"e"`)
		case http.MethodGet:
			v, ok := objects[r.URL.EscapedPath()]
			if !ok {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
				return
			}
			io.WriteString(w, v)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, objects
}

func TestS3PutGet(t *testing.T) {
	srv, objects := fakeS3(t)
	s, err := NewS3(testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.PutObject(ctx, "artifacts", "run-1/fan 0/report.md", []byte("# Report\nall good"), "text/plain; charset=utf-8"); err != nil {
		t.Fatal(err)
	}
	if objects["/artifacts/run-1/fan%200/report.md"] != "# Report\nall good" {
		t.Errorf("objects = %v", objects)
	}
	got, err := s.GetObject(ctx, "artifacts", "run-1/fan 0/report.md", 0)
	if err != nil || string(got) != "# Report\nall good" {
		t.Fatalf("GetObject = %q, %v", got, err)
	}
	_, err = s.GetObject(ctx, "artifacts", "missing", 0)
	if !IsNoSuchKey(err) || !strings.Contains(err.Error(), "The specified key does not exist.") {
		t.Errorf("missing object: err = %v", err)
	}
	if _, err := s.GetObject(ctx, "artifacts", "run-1/fan 0/report.md", 5); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("object beyond the bound: err = %v", err)
	}
	for _, c := range []struct{ bucket, key string }{{"Bad_Bucket", "k"}, {"ab", "k"}, {"a..b", "k"}, {"-ab", "k"}, {"artifacts", ""}, {"artifacts", strings.Repeat("k", 1025)}} {
		if err := s.PutObject(ctx, c.bucket, c.key, nil, ""); err == nil {
			t.Errorf("PutObject(%q, %d-byte key): no error", c.bucket, len(c.key))
		}
	}
}

// roundTrip answers every request with 200 and records its URL.
type roundTrip struct{ urls []string }

func (r *roundTrip) RoundTrip(req *http.Request) (*http.Response, error) {
	r.urls = append(r.urls, req.URL.String())
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(nil)), Request: req}, nil
}

func TestS3Addressing(t *testing.T) {
	cases := []struct {
		name     string
		endpoint string
		bucket   string
		want     string
	}{
		{"virtual-hosted on the regional endpoint", "", "artifacts", "https://artifacts.s3.eu-west-1.amazonaws.com/run/step/k.md"},
		{"path style for a bucket with dots", "", "my.artifacts", "https://s3.eu-west-1.amazonaws.com/my.artifacts/run/step/k.md"},
		{"path style on a configured endpoint", "http://127.0.0.1:4566", "artifacts", "http://127.0.0.1:4566/artifacts/run/step/k.md"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := &roundTrip{}
			cfg := testConfig(c.endpoint)
			cfg.HTTPClient = &http.Client{Transport: rt}
			s, err := NewS3(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetObject(context.Background(), c.bucket, "run/step/k.md", 0); err != nil {
				t.Fatal(err)
			}
			if len(rt.urls) != 1 || rt.urls[0] != c.want {
				t.Errorf("requests %v, want %s", rt.urls, c.want)
			}
		})
	}
}
