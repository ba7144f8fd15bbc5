package notify

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func TestSNSPublish(t *testing.T) {
	var got url.Values
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, _ = url.ParseQuery(string(b))
		auth = r.Header.Get("Authorization")
		if got.Get("TopicArn") == "arn:aws:sns:eu-west-1:123456789012:missing" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `<ErrorResponse><Error><Type>Sender</Type><Code>NotFound</Code><Message>Topic does not exist</Message></Error></ErrorResponse>`)
			return
		}
		io.WriteString(w, `<PublishResponse><PublishResult><MessageId>m-1</MessageId></PublishResult></PublishResponse>`)
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""), BaseEndpoint: aws.String(srv.URL)}
	s, err := NewSNS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	topic := "arn:aws:sns:eu-west-1:123456789012:ops"
	if err := s.Publish(context.Background(), topic, "Run escalated:\nsre-alert-triage", "confidence 0.4 < 0.75"); err != nil {
		t.Fatal(err)
	}
	if got.Get("Action") != "Publish" || got.Get("TopicArn") != topic || got.Get("Message") != "confidence 0.4 < 0.75" || got.Get("Subject") != "Run escalated: sre-alert-triage" {
		t.Errorf("form: %v", got)
	}
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKID/") || !strings.Contains(auth, "/eu-west-1/sns/aws4_request") {
		t.Errorf("authorization: %q", auth)
	}
	err = s.Publish(context.Background(), "arn:aws:sns:eu-west-1:123456789012:missing", "", "x")
	if err == nil || !strings.Contains(err.Error(), "NotFound: Topic does not exist") {
		t.Errorf("error: %v", err)
	}
}
