package rietest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
)

// FakeParameterStore answers GetParametersByPath in the SSM JSON protocol
// with the parameters it holds (name → value) directly under the path,
// one per page (so that a client's paging is exercised), for
// AWS_ENDPOINT_URL_SSM. It stops when the test ends.
func FakeParameterStore(t testing.TB, params map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Path      string
			NextToken string
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if r.Header.Get("X-Amz-Target") != "AmazonSSM.GetParametersByPath" || json.Unmarshal(body, &in) != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type": "ValidationException", "message": "unexpected request"}`)
			return
		}
		var names []string
		for n := range params {
			if dir, _, ok := strings.Cut(strings.TrimPrefix(n, in.Path+"/"), "/"); strings.HasPrefix(n, in.Path+"/") && (!ok || dir == "") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		page := map[string]any{"Parameters": []any{}}
		for i, n := range names {
			if n > in.NextToken {
				page["Parameters"] = []any{map[string]any{"Name": n, "Value": params[n], "Type": "String", "Version": 1}}
				if i+1 < len(names) {
					page["NextToken"] = n
				}
				break
			}
		}
		json.NewEncoder(w).Encode(page)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// FakeS3 answers path-style GetObject requests (GET /<bucket>/<key>) for
// the objects it holds ("<bucket>/<key>" → body), and S3's NoSuchKey
// error for any other, for AWS_ENDPOINT_URL_S3. It stops when the test
// ends.
func FakeS3(t testing.TB, objects map[string][]byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := objects[strings.TrimPrefix(r.URL.Path, "/")]
		if r.Method != http.MethodGet || !ok {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}
