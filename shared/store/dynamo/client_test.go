package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/stepline/stepline/shared/awsrest"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
)

type request struct {
	header http.Header
	body   string
}

// fakeDynamo answers each request with the next of its answers (the last
// one repeats) and keeps what it was sent.
type fakeDynamo struct {
	*httptest.Server
	mu   sync.Mutex
	seen []request
}

type answer struct {
	status int
	body   string
	crc    string // X-Amz-Crc32; "auto" computes the right one
}

func newFakeDynamo(t *testing.T, answers ...answer) (*fakeDynamo, *dynamo.Client) {
	t.Helper()
	f := &fakeDynamo{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.seen)
		f.seen = append(f.seen, request{r.Header.Clone(), string(b)})
		f.mu.Unlock()
		a := answers[min(n, len(answers)-1)]
		switch a.crc {
		case "auto":
			w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(a.body))), 10))
		case "":
		default:
			w.Header().Set("X-Amz-Crc32", a.crc)
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(f.Close)
	c, err := dynamo.NewClient(aws.Config{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(f.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func (f *fakeDynamo) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.seen...)
}

func TestClientSendsTheJSONProtocol(t *testing.T) {
	f, c := newFakeDynamo(t, answer{200, `{}`, "auto"})
	_, err := c.PutItem(context.Background(), &dynamo.PutItemInput{
		TableName:                "runs",
		Item:                     dynamo.Item{"PK": dynamo.S("RUN#1"), "n": dynamo.N("3"), "flags": dynamo.L(dynamo.S("x"))},
		ConditionExpression:      "attribute_not_exists(#pk)",
		ExpressionAttributeNames: map[string]string{"#pk": "PK"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := f.requests()[0]
	const body = `{"TableName":"runs","Item":{"PK":{"S":"RUN#1"},"flags":{"L":[{"S":"x"}]},"n":{"N":"3"}},"ConditionExpression":"attribute_not_exists(#pk)","ExpressionAttributeNames":{"#pk":"PK"}}`
	if got.body != body {
		t.Errorf("body\n got %s\nwant %s", got.body, body)
	}
	for h, want := range map[string]string{
		"X-Amz-Target":    "DynamoDB_20120810.PutItem",
		"Content-Type":    "application/x-amz-json-1.0",
		"Accept-Encoding": "identity",
	} {
		if v := got.header.Get(h); v != want {
			t.Errorf("%s = %q, want %q", h, v, want)
		}
	}
	if auth := got.header.Get("Authorization"); !strings.Contains(auth, "/eu-west-1/dynamodb/aws4_request") || !strings.Contains(auth, "x-amz-target") {
		t.Errorf("Authorization = %q, want a SigV4 signature for dynamodb covering X-Amz-Target", auth)
	}
}

func TestClientConditionFailed(t *testing.T) {
	const withItem = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":{"runId":{"S":"r1"}}}`
	const without = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`
	for _, tt := range []struct {
		name, body string
		runID      string
	}{{"with the item", withItem, "r1"}, {"without", without, ""}} {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeDynamo(t, answer{400, tt.body, ""})
			_, err := c.UpdateItem(context.Background(), &dynamo.UpdateItemInput{TableName: "t", Key: dynamo.Item{"PK": dynamo.S("a")}})
			var cf *dynamo.ConditionFailedError
			if !errors.As(err, &cf) {
				t.Fatalf("err = %v, want a ConditionFailedError", err)
			}
			if got, _ := cf.Item["runId"].Str(); got != tt.runID {
				t.Errorf("item's runId = %q, want %q", got, tt.runID)
			}
			var re *awsrest.ResponseError
			if !errors.As(err, &re) || re.Code != "ConditionalCheckFailedException" {
				t.Errorf("err = %v, want the service's error underneath", err)
			}
			if strings.Contains(err.Error(), "r1") {
				t.Errorf("err = %q carries the item", err)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("%d requests, want 1 (a failed condition is final)", n)
			}
		})
	}
}

func TestClientChecksum(t *testing.T) {
	const body = `{"Item":{"PK":{"S":"a"}}}`
	t.Run("mismatch retried", func(t *testing.T) {
		f, c := newFakeDynamo(t, answer{200, body, "12345"}, answer{200, body, "auto"})
		out, err := c.GetItem(context.Background(), &dynamo.GetItemInput{TableName: "t", Key: dynamo.Item{"PK": dynamo.S("a")}})
		if err != nil {
			t.Fatal(err)
		}
		if pk, _ := out.Item["PK"].Str(); pk != "a" {
			t.Errorf("item = %v", out.Item)
		}
		if n := len(f.requests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
	t.Run("mismatch every time", func(t *testing.T) {
		_, c := newFakeDynamo(t, answer{200, body, "12345"})
		_, err := c.GetItem(context.Background(), &dynamo.GetItemInput{TableName: "t", Key: dynamo.Item{"PK": dynamo.S("a")}})
		if err == nil || !strings.Contains(err.Error(), "CRC32") {
			t.Errorf("err = %v, want a checksum error", err)
		}
	})
}

// A store on a misbehaving endpoint reports errors; it neither panics nor
// invents data.
func TestStoreOnBadAnswers(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		ans  answer
		want string
	}{
		{"not JSON", answer{200, `<html>`, ""}, "decode answer"},
		{"item of the wrong shape", answer{200, `{"Item":{"id":{"S":"r1","N":"1"}}}`, ""}, "decode answer"},
		{"attribute of the wrong type", answer{200, `{"Item":{"id":{"S":"r1"},"status":{"N":"1"}}}`, ""}, `attribute "status" is not a string`},
		{"missing table", answer{400, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`, ""}, "ResourceNotFoundException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newFakeDynamo(t, tt.ans)
			_, err := dynamo.New(c, "t").GetRun(ctx, "r1")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	_, c := newFakeDynamo(t, answer{200, `{}`, ""})
	if _, err := dynamo.New(c, "t").GetRun(ctx, "r1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("no item: err = %v, want ErrNotFound", err)
	}
}

// Query answers come in pages: the store follows LastEvaluatedKey.
func TestStoreReadsEveryPage(t *testing.T) {
	step := func(name string) string {
		return `{"PK":{"S":"RUN#r1"},"SK":{"S":"STEP#` + name + `#0001"},"runId":{"S":"r1"},"name":{"S":"` + name + `"},"attempt":{"N":"1"},"index":{"N":"0"},"status":{"S":"completed"}}`
	}
	f, c := newFakeDynamo(t,
		answer{200, `{"Items":[` + step("a") + `],"LastEvaluatedKey":{"PK":{"S":"RUN#r1"},"SK":{"S":"STEP#a#0001"}}}`, "auto"},
		answer{200, `{"Items":[` + step("b") + `]}`, "auto"},
	)
	recs, err := dynamo.New(c, "t").ListSteps(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Name != "a" || recs[1].Name != "b" {
		t.Errorf("records = %+v, want a and b", recs)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var second struct {
		ExclusiveStartKey map[string]json.RawMessage
		ConsistentRead    bool
	}
	if err := json.Unmarshal([]byte(reqs[1].body), &second); err != nil {
		t.Fatal(err)
	}
	if string(second.ExclusiveStartKey["SK"]) != `{"S":"STEP#a#0001"}` || !second.ConsistentRead {
		t.Errorf("second page request = %s", reqs[1].body)
	}
}
