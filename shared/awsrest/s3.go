package awsrest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// S3 reads and writes whole objects in Amazon S3. Safe for concurrent use.
//
// Buckets are addressed virtual-hosted style (https://<bucket>.s3.<region>
// .amazonaws.com/<key>) on the regional endpoint, and path style
// (<endpoint>/<bucket>/<key>) on a configured endpoint or for a bucket
// whose name holds dots, which TLS certificates of the virtual host do
// not cover.
type S3 struct{ c *Client }

// NewS3 returns an S3 client configured as New configures one, for the
// SDK ID "S3" (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL); requests are signed
// for the service name "s3" with the payload's hash.
func NewS3(cfg aws.Config) (*S3, error) {
	c, err := New(cfg, Service{SDKID: "S3", SigningName: "s3", EndpointPrefix: "s3", S3Signing: true})
	if err != nil {
		return nil, err
	}
	return &S3{c: c}, nil
}

// PutObject stores body as object key of bucket, with the given
// Content-Type (none when empty). Errors are as Client.Do's.
func (s *S3) PutObject(ctx context.Context, bucket, key string, body []byte, contentType string) error {
	req, err := s.object(http.MethodPut, bucket, key)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Body = body
	if _, err := s.c.Do(ctx, req); err != nil {
		return fmt.Errorf("put object %s/%s: %w", bucket, key, err)
	}
	return nil
}

// GetObject returns the content of object key of bucket, reading at most
// maxBytes (0: DefaultMaxBody). A missing object is a *ResponseError with
// Code "NoSuchKey" (see IsNoSuchKey); a larger one wraps ErrBodyTooLarge.
func (s *S3) GetObject(ctx context.Context, bucket, key string, maxBytes int64) ([]byte, error) {
	req, err := s.object(http.MethodGet, bucket, key)
	if err != nil {
		return nil, err
	}
	req.MaxBody = maxBytes
	resp, err := s.c.Do(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("get object %s/%s: %w", bucket, key, err)
	}
	return resp.Body, nil
}

// IsNoSuchKey reports whether err is S3's answer that an object does not
// exist.
func IsNoSuchKey(err error) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Code == "NoSuchKey"
}

// object returns the request for one object, addressed as the type's
// documentation says.
func (s *S3) object(method, bucket, key string) (Request, error) {
	if !bucketName(bucket) {
		return Request{}, fmt.Errorf("s3: %q is not a valid bucket name", bucket)
	}
	if key == "" || len(key) > 1024 {
		return Request{}, fmt.Errorf("s3: object key of %d bytes (want 1 to 1024)", len(key))
	}
	req := Request{Method: method, Header: http.Header{}}
	path := "/" + EscapePath(key, true)
	if _, configured := s.c.Endpoint(); configured || strings.Contains(bucket, ".") {
		req.Path = "/" + bucket + path
	} else {
		req.Path, req.HostPrefix = path, bucket+"."
	}
	return req, nil
}

// bucketName reports whether s follows S3's naming rules for new buckets:
// 3 to 63 lower-case letters, digits, dots and hyphens, beginning and
// ending with a letter or digit.
func bucketName(s string) bool {
	if len(s) < 3 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		edge := i == 0 || i == len(s)-1
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case (c == '.' || c == '-') && !edge:
		default:
			return false
		}
	}
	return !strings.Contains(s, "..")
}
