package steprun

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/stepline/stepline/shared/awsrest"
)

// TestS3Artifacts puts and gets artifacts through the real S3 client
// against a server that speaks S3's REST protocol for objects.
func TestS3Artifacts(t *testing.T) {
	var mu sync.Mutex
	objects := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=k/") || !strings.Contains(r.Header.Get("Authorization"), "/us-east-1/s3/aws4_request") {
			t.Errorf("request not signed for S3: Authorization %q", r.Header.Get("Authorization"))
		}
		switch r.Method {
		case http.MethodPut:
			if ct := r.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			b, _ := io.ReadAll(r.Body)
			objects[r.URL.Path] = string(b)
			w.Header().Set("ETag", `"e"`)
		case http.MethodGet:
			v, ok := objects[r.URL.Path]
			if !ok {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
				return
			}
			io.WriteString(w, v)
		}
	}))
	defer srv.Close()
	client, err := awsrest.NewS3(aws.Config{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("k", "s", ""),
		RetryMaxAttempts: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	store := S3{Client: client, Bucket: "artifacts"}
	ctx := context.Background()
	ref, err := store.Put(ctx, "run-1", "fan/0", "report.md", "# Report\nall good")
	if err != nil {
		t.Fatal(err)
	}
	if ref != "s3://artifacts/run-1/fan_0/report.md" {
		t.Errorf("ref = %q", ref)
	}
	if r, err := store.Ref("run-1", "fan/0", "report.md"); r != ref || err != nil {
		t.Errorf("Ref = %q, %v; want Put's reference %q", r, err, ref)
	}
	if _, ok := objects["/artifacts/run-1/fan_0/report.md"]; !ok {
		t.Errorf("objects: %v", objects)
	}
	got, err := store.Get(ctx, ref)
	if err != nil || got != "# Report\nall good" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if _, err := store.Get(ctx, "s3://artifacts/run-1/x/missing"); !errors.Is(err, ErrArtifactNotFound) {
		t.Errorf("missing artifact: %v", err)
	}
	if _, err := store.Get(ctx, "s3://other-bucket/k"); !errors.Is(err, ErrArtifactNotFound) || !strings.Contains(err.Error(), "other-bucket") {
		t.Errorf("foreign ref: %v", err)
	}
	big := strings.Repeat("x", maxArtifactBytes+1)
	ref, err = store.Put(ctx, "run-1", "s", "big.txt", big)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := store.Get(ctx, ref); !errors.Is(err, awsrest.ErrBodyTooLarge) || got != "" {
		t.Errorf("artifact beyond the bound: %d bytes, %v; want an error, not a truncated artifact", len(got), err)
	}
}
