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
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestS3Artifacts puts and gets artifacts through the real S3 client
// against a server that speaks S3's REST protocol for objects.
func TestS3Artifacts(t *testing.T) {
	var mu sync.Mutex
	objects := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodPut:
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
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("k", "s", ""),
	})
	store := S3{Client: client, Bucket: "artifacts"}
	ctx := context.Background()
	ref, err := store.Put(ctx, "run-1", "fan/0", "report.md", "# Report\nall good")
	if err != nil {
		t.Fatal(err)
	}
	if ref != "s3://artifacts/run-1/fan_0/report.md" {
		t.Errorf("ref = %q", ref)
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
}
