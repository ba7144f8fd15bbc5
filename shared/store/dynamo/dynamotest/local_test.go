package dynamotest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAnswers: only an answer carrying DynamoDB's request ID counts as
// DynamoDB Local serving; another server on the port, or none, does not.
func TestAnswers(t *testing.T) {
	dynamo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("x-amzn-RequestId", "61d8d781")
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer dynamo.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, c := range []struct {
		name, url string
		want      bool
	}{{"DynamoDB Local", dynamo.URL, true}, {"another server", other.URL, false}, {"nothing listening", gone.URL, false}} {
		if got := answers(http.DefaultClient, c.url); got != c.want {
			t.Errorf("%s: answers = %v, want %v", c.name, got, c.want)
		}
	}
}
