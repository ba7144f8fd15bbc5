package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

const fakeScript = `
g:
  - '{"confidence": 0.9}'
  - {reply: 'with usage', input_tokens: 12, output_tokens: 3}
  - {error: "http 500"}
a: ['anthropic says']
b: ['bedrock says']
w: ['{"status": "accepted"}']
slow: [{error: timeout}]
h:
  - approve
  - {decision: Reject, by: bob}
  - '{"not": "a decision"}'
m: {summary: a mapping, confidence: 1}
`

func startFake(t *testing.T) (*Fake, *Script) {
	t.Helper()
	s, err := ParseScript([]byte(fakeScript))
	if err != nil {
		t.Fatal(err)
	}
	f, err := StartFake()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	f.Load("sc", s)
	return f, s
}

func call(t *testing.T, method, u, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestFakeReplies(t *testing.T) {
	f, s := startFake(t)
	base := f.Base("sc")
	cases := []struct {
		name, method, url, body string
		status                  int
		want                    string
	}{
		{"gateway", "POST", base + "/m/g/v1/chat/completions", `{"model": "m"}`, 200, `"content":"{\"confidence\": 0.9}"`},
		{"gateway usage", "POST", base + "/m/g/v1/chat/completions", `{}`, 200, `"prompt_tokens":12`},
		{"gateway error is a 503", "POST", base + "/m/g/v1/chat/completions", `{}`, 503, "scripted: http 500"},
		{"no reply left", "POST", base + "/m/g/v1/chat/completions", `{}`, 400, "no scripted reply left for g"},
		{"anthropic", "POST", base + "/m/a/v1/messages", `{}`, 200, `"text":"anthropic says"`},
		{"bedrock", "POST", f.BedrockEndpoint() + "/model/" + url.PathEscape(BedrockModel("anthropic.claude-v1:0", "sc", "b")) + "/converse", `{}`, 200, `"text":"bedrock says"`},
		{"bedrock without a scenario", "POST", f.BedrockEndpoint() + "/model/anthropic.claude/converse", `{}`, 400, "names no scenario"},
		{"webhook body", "POST", base + "/h/w", `{"x": 1}`, 200, `{"status": "accepted"}`},
		{"notification", "POST", base + "/n/failure-w", `x`, 200, "ok"},
		{"unknown scenario", "POST", f.Base("other") + "/m/g/v1/chat/completions", `{}`, 404, "no route"},
		{"unknown route", "POST", base + "/zz", `{}`, 404, "no route"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := call(t, c.method, c.url, c.body)
			if status != c.status || !strings.Contains(body, c.want) {
				t.Errorf("HTTP %d %s; want %d with %q", status, body, c.status, c.want)
			}
		})
	}
	// Every call of the scenario is recorded; the three that name none are not.
	if got := len(s.Calls()); got != len(cases)-3 {
		t.Errorf("%d calls recorded, want %d", got, len(cases)-3)
	}
	if got := s.Unused(); strings.Join(got, ";") != "h: 3 left;m: 1 left;slow: 1 left" {
		t.Errorf("Unused = %v", got)
	}
}

func TestFakeTimeoutHoldsTheCall(t *testing.T) {
	f, _ := startFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", f.Base("sc")+"/m/slow/v1/chat/completions", strings.NewReader(`{}`))
	started := time.Now()
	_, err := http.DefaultClient.Do(req)
	if err == nil || time.Since(started) < 250*time.Millisecond {
		t.Errorf("a timeout reply answered (%v) after %v", err, time.Since(started))
	}
}

func TestFakeProxyRefuses(t *testing.T) {
	f, _ := startFake(t)
	proxy, _ := url.Parse(f.URL)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	if _, err := client.Get("https://api.example.com/v1"); err == nil {
		t.Error("an HTTPS request went through the proxy")
	}
	resp, err := client.Get("http://plain.example.com/x")
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("plain HTTP through the proxy: %v %v", resp, err)
	}
	if got := strings.Join(f.Egress(), ","); got != "api.example.com:443,plain.example.com" {
		t.Errorf("Egress = %s", got)
	}
}

func TestScriptDecisions(t *testing.T) {
	s, err := ParseScript([]byte(fakeScript))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		decision, by string
		ok           bool
	}{{"approve", "", true}, {"reject", "bob", true}, {"", "", false}, {"", "", false}} {
		d, by, ok := s.Decision("h")
		if d != want.decision || by != want.by || ok != want.ok {
			t.Errorf("decision %d: %q %q %v, want %+v", i, d, by, ok, want)
		}
	}
	if r := s.Replies("m"); len(r) != 1 || !json.Valid([]byte(r[0].Text)) || !strings.Contains(r[0].Text, `"summary":"a mapping"`) {
		t.Errorf("a mapping reply is its JSON: %+v", r)
	}
	if _, err := ParseScript([]byte("a: [[1]]")); err == nil {
		t.Error("a list as a reply was accepted")
	}
}

func TestReplyTimeout(t *testing.T) {
	for _, c := range []struct {
		r    Reply
		want bool
	}{
		{Reply{IsError: true, Error: "timeout"}, true},
		{Reply{IsError: true, Error: " Timeout after 3s"}, true},
		{Reply{IsError: true, Error: "http 504 timeout"}, false},
		{Reply{Text: "timeout"}, false},
	} {
		if got := c.r.Timeout(); got != c.want {
			t.Errorf("%+v.Timeout() = %v", c.r, got)
		}
	}
}

func TestTargetInput(t *testing.T) {
	event := []byte(`{"id": "e1", "source": "alertmanager", "time": "2026-01-01T00:00:00Z", "detail": {"a": {"b": "x"}, "s": "q\"uote"}}`)
	tr := func(paths map[string]string, tpl string) Target {
		return Target{InputTransformer: &struct {
			InputPathsMap map[string]string
			InputTemplate string
		}{paths, tpl}}
	}
	for _, c := range []struct {
		name   string
		target Target
		want   string
		err    string
	}{
		{"whole event", Target{}, string(event), ""},
		{"constant input", Target{Input: `{"k": 1}`}, `{"k": 1}`, ""},
		{"input path", Target{InputPath: "$.detail.a"}, `{"b":"x"}`, ""},
		{"missing path is null", Target{InputPath: "$.detail.zz.y"}, `null`, ""},
		{"transformer", tr(map[string]string{"detail": "$.detail", "id": "$.id"}, `{"trigger":<detail>,"event":{"id":<id>}}`), `{"trigger":{"a":{"b":"x"},"s":"q\"uote"},"event":{"id":"e1"}}`, ""},
		{"unsupported path", Target{InputPath: "detail"}, "", "only $ and $.a.b"},
		{"template inside quotes gives bad JSON", tr(map[string]string{"s": "$.detail.s"}, `{"v":"<s>"}`), "", "invalid JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := targetInput(c.target, event)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !jsonEq(got, json.RawMessage(c.want)) {
				t.Errorf("got %s (%v), want %s", got, err, c.want)
			}
		})
	}
}

func TestStatusChange(t *testing.T) {
	start := time.UnixMilli(1700000000123)
	stop := start.Add(time.Second)
	ev := StatusChange(&sfn.DescribeExecutionOutput{ExecutionArn: aws.String("arn:e"), StateMachineArn: aws.String("arn:m"), Name: aws.String("run-1"),
		Status: sfntypes.ExecutionStatusFailed, StartDate: &start, StopDate: &stop, Input: aws.String(`{"trigger": {}}`),
		Error: aws.String("Stepline.Failed"), Cause: aws.String("why")})
	var d map[string]any
	json.Unmarshal(ev.Detail, &d)
	if ev.Source != "aws.states" || ev.DetailType != "Step Functions Execution Status Change" || d["name"] != "run-1" ||
		d["status"] != "FAILED" || d["startDate"] != 1700000000123.0 || d["stopDate"] != 1700000001123.0 || d["error"] != "Stepline.Failed" || d["output"] != nil {
		t.Errorf("event %+v, detail %v", ev, d)
	}
}
