package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
)

// TestSlackThroughEmulator: the callback bootstrap under the emulator
// takes a Slack app's button presses at POST /slack/{app}, the body
// base64-encoded as the HTTP API hands form bodies on: an old timestamp
// and a bad signature are refused 401, a signed press resumes the run once
// and replaces the message through response_url.
func TestSlackThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	const signing = "rie-slack-signing-secret-44aa"
	const approvalID = "rie-slack-approval-0001-Zk3m9QpLx2Vb7NcT5wHs"
	const token = "AQCEAAAAKgAAAAMAAAAAAAAAAVNMQUNLLVRBU0stVE9LRU4tMDAwMQ=="
	endpoint := dynamotest.Endpoint(t)
	table := dynamotest.NewTable(t)
	st := dynamo.New(dynamotest.Client(t), table)
	sm := rietest.FakeSecretsManager(t, map[string]string{keyARN: rieKey})
	sf := newFakeStepFunctions(t)
	var mu sync.Mutex
	var responses []string
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		responses = append(responses, string(b))
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer slack.Close()
	now := time.Now()
	if err := st.CreateApproval(context.Background(), store.Approval{ID: approvalID, RunID: "run-rie-slack", Step: "approve", Pipeline: "p",
		Message: "Ship?", TaskToken: token, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	routes := `{"default":{"channel":"slack","slack":{"bot_token":"${SLACK_BOT}","signing_secret":"${SLACK_SIGNING}","channel_id":"C0OPS"}}}`
	e := rietest.Start(t, rietest.Build(t, "."),
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_ENDPOINT_URL_SFN="+sf.srv.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"APPROVAL_KEY_SECRET_ARN="+keyARN,
		"HUMAN_APPROVAL="+routes,
		"SLACK_SIGNING="+signing,
		"SLACK_RESPONSE_URL="+slack.URL+"/actions/",
	)
	ref := (&approval.Signer{Key: []byte(rieKey)}).ChatRef(approvalID, "approve", "C0OPS")
	payload := fmt.Sprintf(`{"type":"block_actions","user":{"id":"U0ALICE","username":"alice"},"channel":{"id":"C0OPS"},"response_url":%q,"actions":[{"action_id":"stepline_approve","block_id":"b","value":%q,"type":"button"}]}`,
		slack.URL+"/actions/T0/1/abc", ref)
	body := "payload=" + url.QueryEscape(payload)
	event := func(age time.Duration, key string) events.APIGatewayV2HTTPRequest {
		ts := strconv.FormatInt(time.Now().Add(-age).Unix(), 10)
		return events.APIGatewayV2HTTPRequest{
			Version: "2.0", RouteKey: "POST /slack/{app}", RawPath: "/slack/SLACK_SIGNING",
			Headers: map[string]string{"content-type": "application/x-www-form-urlencoded", "host": "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com",
				"x-slack-request-timestamp": ts, "x-slack-signature": approval.SignSlack(key, ts, []byte(body))},
			RequestContext: events.APIGatewayV2HTTPRequestContext{RouteKey: "POST /slack/{app}",
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/slack/SLACK_SIGNING", SourceIP: "54.209.0.1"}},
			Body: base64.StdEncoding.EncodeToString([]byte(body)), IsBase64Encoded: true,
		}
	}
	steps := []struct {
		name   string
		ev     events.APIGatewayV2HTTPRequest
		status int
		sent   int
	}{
		{"5 min + 1 s old", event(approval.SlackMaxSkew+time.Second, signing), 401, 0},
		{"bad signature", event(0, "not-the-signing-secret"), 401, 0},
		{"signed press", event(approval.SlackMaxSkew-time.Minute, signing), 200, 1},
		{"replay", event(0, signing), 200, 1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			resp := invoke(t, e, s.ev)
			if resp.StatusCode != s.status {
				t.Errorf("status %d %q, want %d", resp.StatusCode, resp.Body, s.status)
			}
			if n := len(sf.sent()); n != s.sent {
				t.Errorf("%d SendTaskSuccess calls, want %d", n, s.sent)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(responses) != 2 || !strings.Contains(responses[0], "Approved* by @alice (Slack)") || !strings.Contains(responses[1], "Already decided") {
		t.Errorf("responses %q", responses)
	}
	if out := e.Output(); strings.Contains(out, signing) || strings.Contains(out, token) {
		t.Errorf("a secret appears in the function's logs:\n%s", out)
	}
}
