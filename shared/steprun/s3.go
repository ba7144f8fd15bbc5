package steprun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3API is the part of the S3 client the artifact store calls.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// S3 keeps artifacts in an S3 bucket under <run>/<step>/<key>; references
// look like s3://bucket/run/step/key.
type S3 struct {
	Client S3API
	Bucket string
}

var _ ArtifactStore = S3{}

// Put implements ArtifactStore.
func (s S3) Put(ctx context.Context, run, step, key, content string) (string, error) {
	k := strings.Join([]string{safeSegment(run), safeSegment(step), safeSegment(key)}, "/")
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:      aws.String(s.Bucket),
		Key:         aws.String(k),
		Body:        strings.NewReader(content),
		ContentType: aws.String("text/plain; charset=utf-8"),
	})
	if err != nil {
		return "", fmt.Errorf("put artifact %q: %w", k, err)
	}
	return "s3://" + s.Bucket + "/" + k, nil
}

// Get implements ArtifactStore.
func (s S3) Get(ctx context.Context, ref string) (string, error) {
	k, ok := strings.CutPrefix(ref, "s3://"+s.Bucket+"/")
	if !ok {
		return "", fmt.Errorf("get artifact %q: %w", ref, ErrArtifactNotFound)
	}
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(k)})
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return "", fmt.Errorf("get artifact %q: %w", ref, ErrArtifactNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("get artifact %q: %w", ref, err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.LimitReader(out.Body, maxArtifactBytes)); err != nil {
		return "", fmt.Errorf("get artifact %q: %w", ref, err)
	}
	return b.String(), nil
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
