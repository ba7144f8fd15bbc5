package steprun

import (
	"context"
	"fmt"
	"strings"

	"github.com/stepline/stepline/shared/awsrest"
)

// S3API is the part of the S3 client the artifact store calls (satisfied
// by *awsrest.S3).
type S3API interface {
	// PutObject stores body as object key of bucket, with the given
	// Content-Type.
	PutObject(ctx context.Context, bucket, key string, body []byte, contentType string) error
	// GetObject returns the content of object key of bucket, reading at
	// most maxBytes. For a missing object, awsrest.IsNoSuchKey(err) is
	// true.
	GetObject(ctx context.Context, bucket, key string, maxBytes int64) ([]byte, error)
}

var _ S3API = (*awsrest.S3)(nil)

// S3 keeps artifacts in an S3 bucket under <run>/<step>/<key>; references
// look like s3://bucket/run/step/key.
type S3 struct {
	Client S3API
	Bucket string
}

var _ ArtifactStore = S3{}

func objectKey(run, step, key string) string {
	return strings.Join([]string{safeSegment(run), safeSegment(step), safeSegment(key)}, "/")
}

// Put implements ArtifactStore.
func (s S3) Put(ctx context.Context, run, step, key, content string) (string, error) {
	k := objectKey(run, step, key)
	if err := s.Client.PutObject(ctx, s.Bucket, k, []byte(content), "text/plain; charset=utf-8"); err != nil {
		return "", fmt.Errorf("put artifact %q: %w", k, err)
	}
	return "s3://" + s.Bucket + "/" + k, nil
}

// Ref implements ArtifactStore.
func (s S3) Ref(run, step, key string) (string, error) {
	return "s3://" + s.Bucket + "/" + objectKey(run, step, key), nil
}

// Get implements ArtifactStore. An artifact larger than maxArtifactBytes
// is an error.
func (s S3) Get(ctx context.Context, ref string) (string, error) {
	k, ok := strings.CutPrefix(ref, "s3://"+s.Bucket+"/")
	if !ok {
		return "", fmt.Errorf("get artifact %q: %w", ref, ErrArtifactNotFound)
	}
	b, err := s.Client.GetObject(ctx, s.Bucket, k, maxArtifactBytes)
	if awsrest.IsNoSuchKey(err) {
		return "", fmt.Errorf("get artifact %q: %w", ref, ErrArtifactNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("get artifact %q: %w", ref, err)
	}
	return string(b), nil
}

// safeSegment keeps a key segment to characters S3 keys handle plainly.
func safeSegment(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// maxArtifactBytes bounds what Get reads of one artifact.
const maxArtifactBytes = 8 << 20
