package notify

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stepline/stepline/shared/awsrest"
)

// SNS publishes to Amazon SNS topics with the Publish action of the SNS
// Query API, through the project's small signed REST client (no SDK
// service client, which keeps the functions that notify quick to start).
type SNS struct {
	c *awsrest.Client
}

var _ Publisher = (*SNS)(nil)

// NewSNS returns a publisher that uses cfg's region and credentials and the
// SNS endpoint configured in cfg (AWS_ENDPOINT_URL_SNS), else the regional
// one.
func NewSNS(cfg aws.Config) (*SNS, error) {
	c, err := awsrest.New(cfg, awsrest.Service{SDKID: "SNS", SigningName: "sns", EndpointPrefix: "sns"})
	if err != nil {
		return nil, fmt.Errorf("sns client: %w", err)
	}
	return &SNS{c: c}, nil
}

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
	_, err := s.c.Do(ctx, awsrest.Request{
		Method: http.MethodPost,
		Path:   "/",
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}},
		Body:   []byte(form.Encode()),
	})
	if err != nil {
		return fmt.Errorf("sns publish to %s: %w", topicARN, err)
	}
	return nil
}
