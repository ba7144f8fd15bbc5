package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SNS publishes to Amazon SNS topics with the Publish action of the SNS
// Query API, signed with SigV4. It carries no SDK service client, which
// keeps the functions that notify small and quick to start.
type SNS struct {
	Config   aws.Config   // credentials and region
	Endpoint string       // "" → https://sns.<region>.amazonaws.com
	HTTP     *http.Client // nil → http.DefaultClient
}

var _ Publisher = (*SNS)(nil)

// Publish implements Publisher.
func (s *SNS) Publish(ctx context.Context, topicARN, subject, message string) error {
	form := url.Values{"Action": {"Publish"}, "Version": {"2010-03-31"}, "TopicArn": {topicARN}, "Message": {message}}
	if subject != "" {
		// SNS subjects are one line of at most 100 printable characters.
		subject = strings.Join(strings.Fields(subject), " ")
		if len(subject) > 100 {
			subject = subject[:100]
		}
		form.Set("Subject", subject)
	}
	body := form.Encode()
	endpoint := s.Endpoint
	if endpoint == "" {
		endpoint = "https://sns." + s.Config.Region + ".amazonaws.com"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(endpoint, "/")+"/", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("sns publish: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if s.Config.Credentials == nil {
		return fmt.Errorf("sns publish: no AWS credentials")
	}
	creds, err := s.Config.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("sns publish: credentials: %w", err)
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sns", s.Config.Region, time.Now()); err != nil {
		return fmt.Errorf("sns publish: sign: %w", err)
	}
	client := s.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("sns publish to %s: %w", topicARN, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var e struct {
		Error struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		} `xml:"Error"`
	}
	if xml.Unmarshal(data, &e) == nil && e.Error.Code != "" {
		return fmt.Errorf("sns publish to %s: HTTP %d %s: %s", topicARN, resp.StatusCode, e.Error.Code, e.Error.Message)
	}
	return fmt.Errorf("sns publish to %s: HTTP %d", topicARN, resp.StatusCode)
}
