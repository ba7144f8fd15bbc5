package awsrest

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

func TestBedrockRuntimeConverse(t *testing.T) {
	f := newFake(t, reply(200, `{"stopReason":"end_turn"}`), reply(400, `{"message":"The provided model identifier is invalid."}`, "X-Amzn-ErrorType", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"))
	b, err := NewBedrockRuntime(testConfig(f.URL))
	if err != nil {
		t.Fatal(err)
	}
	const model = "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-3-5-sonnet-20240620-v1:0"
	out, err := b.Converse(context.Background(), model, []byte(`{"messages":[]}`))
	if err != nil || string(out) != `{"stopReason":"end_turn"}` {
		t.Fatalf("Converse = %s, %v", out, err)
	}
	got := f.seen()[0]
	const path = "/model/arn%3Aaws%3Abedrock%3Aeu-west-1%3A123456789012%3Ainference-profile%2Feu.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
	if got.method != http.MethodPost || got.rawPath != path {
		t.Errorf("request = %s %s, want POST %s", got.method, got.rawPath, path)
	}
	if got.header.Get("Content-Type") != "application/json" || string(got.body) != `{"messages":[]}` {
		t.Errorf("content type %q, body %s", got.header.Get("Content-Type"), got.body)
	}
	r, _ := http.NewRequest(got.method, "http://"+got.host+got.rawPath, nil)
	r.Header = got.header
	if err := checkSigned(r, got.body, "bedrock", false, "content-type"); err != nil {
		t.Error(err)
	}

	_, err = b.Converse(context.Background(), "nope", []byte(`{}`))
	var re *ResponseError
	if !errors.As(err, &re) || re.StatusCode != 400 || re.Code != "ValidationException" || re.Message != "The provided model identifier is invalid." {
		t.Errorf("err = %v, want the ValidationException", err)
	}
	if _, err := b.Converse(context.Background(), "", []byte(`{}`)); err == nil {
		t.Error("no error for an empty model id")
	}
	if n := len(f.seen()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}
