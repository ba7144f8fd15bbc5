package awsrest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/stepline/stepline/shared/awsrest"
)

func ExampleBedrockRuntime_Converse() {
	// A stand-in for the Bedrock runtime endpoint, as
	// AWS_ENDPOINT_URL_BEDROCK_RUNTIME would name it.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Println(r.Method, r.URL.EscapedPath(), string(body))
		io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn"}`)
	}))
	defer srv.Close()

	client, err := awsrest.NewBedrockRuntime(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		BaseEndpoint: aws.String(srv.URL),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := client.Converse(context.Background(), "anthropic.claude-3-5-haiku-20241022-v1:0",
		[]byte(`{"messages":[{"role":"user","content":[{"text":"Say hi."}]}]}`))
	fmt.Println(string(out), err)
	// Output:
	// POST /model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse {"messages":[{"role":"user","content":[{"text":"Say hi."}]}]}
	// {"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn"} <nil>
}
