package apigw

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

const maxBody = 64 << 10

func apiEvent(method, rawPath, query, body string, b64 bool, headers map[string]string) events.APIGatewayV2HTTPRequest {
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: rawPath, RawQueryString: query, Headers: headers, Body: body, IsBase64Encoded: b64,
	}
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.HTTP.SourceIP = "198.51.100.7"
	ev.RequestContext.DomainName = "api.example.com"
	return ev
}

func TestRequest(t *testing.T) {
	tests := []struct {
		name       string
		ev         events.APIGatewayV2HTTPRequest
		cookies    []string
		wantErr    string
		wantPath   string
		wantQuery  string
		wantBody   string
		wantHost   string
		wantHeader map[string]string
	}{
		{name: "plain body and query", ev: apiEvent("POST", "/approvals/tok", "a=1&b=two", `{"decision":"approve"}`, false,
			map[string]string{"host": "h.example.com", "content-type": "application/json", "accept": "application/json"}),
			wantPath: "/approvals/tok", wantQuery: "a=1&b=two", wantBody: `{"decision":"approve"}`, wantHost: "h.example.com",
			wantHeader: map[string]string{"Content-Type": "application/json", "Accept": "application/json"}},
		{name: "base64 form body", ev: apiEvent("POST", "/approvals/tok", "", base64.StdEncoding.EncodeToString([]byte("decision=reject&by=Bo")), true, nil),
			wantPath: "/approvals/tok", wantBody: "decision=reject&by=Bo", wantHost: "api.example.com"},
		{name: "escaped path", ev: apiEvent("GET", "/approvals/a%2Fb", "", "", false, nil),
			wantPath: "/approvals/a/b", wantHost: "api.example.com"},
		{name: "cookies become the Cookie header", ev: apiEvent("GET", "/x", "", "", false, nil), cookies: []string{"a=1", "b=2"},
			wantPath: "/x", wantHost: "api.example.com", wantHeader: map[string]string{"Cookie": "a=1; b=2"}},
		{name: "bad base64", ev: apiEvent("POST", "/x", "", "%%%", true, nil), wantErr: "not valid base64"},
		{name: "no method", ev: apiEvent("", "/x", "", "", false, nil), wantErr: "no method"},
		{name: "relative path", ev: apiEvent("GET", "x", "", "", false, nil), wantErr: "not absolute"},
		{name: "body too large", ev: apiEvent("POST", "/x", "", strings.Repeat("a", maxBody+1), false, nil), wantErr: "limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.ev.Cookies = tc.cookies
			r, err := Request(context.Background(), tc.ev, maxBody)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(r.Body)
			if r.URL.Path != tc.wantPath || r.URL.RawQuery != tc.wantQuery || string(body) != tc.wantBody || r.Host != tc.wantHost {
				t.Errorf("got path %q query %q body %q host %q", r.URL.Path, r.URL.RawQuery, body, r.Host)
			}
			if r.Method != tc.ev.RequestContext.HTTP.Method || r.RemoteAddr != "198.51.100.7" || r.ContentLength != int64(len(tc.wantBody)) {
				t.Errorf("method %q remote %q length %d", r.Method, r.RemoteAddr, r.ContentLength)
			}
			for k, v := range tc.wantHeader {
				if got := r.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestServe(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/html":
			w.Header().Add("Vary", "Accept")
			w.Header().Add("Vary", "Cookie")
			w.Header().Add("Set-Cookie", "a=1")
			w.Header().Add("Set-Cookie", "b=2")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "<p>no</p>")
		case "/binary":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte{0x89, 'P', 'N', 'G'})
		case "/redirect":
			http.Redirect(w, r, r.URL.Path+"/next", http.StatusSeeOther)
		case "/implicit":
			io.WriteString(w, "ok")
		}
	})
	tests := []struct {
		name       string
		method     string
		path       string
		b64        bool
		wantStatus int
		wantBody   string
		wantB64    bool
		wantHeader map[string]string
		wantCookie []string
	}{
		{name: "text with several header values and cookies", method: "GET", path: "/html", wantStatus: 403, wantBody: "<p>no</p>",
			wantHeader: map[string]string{"Vary": "Accept, Cookie", "Content-Type": "text/html; charset=utf-8"}, wantCookie: []string{"a=1", "b=2"}},
		{name: "HEAD has no body", method: "HEAD", path: "/html", wantStatus: 403,
			wantHeader: map[string]string{"Content-Type": "text/html; charset=utf-8"}, wantCookie: []string{"a=1", "b=2"}},
		{name: "binary goes base64", method: "GET", path: "/binary", wantStatus: 200,
			wantBody: base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G'}), wantB64: true},
		{name: "redirect", method: "POST", path: "/redirect", wantStatus: 303, wantHeader: map[string]string{"Location": "/redirect/next"}},
		{name: "status defaults to 200", method: "GET", path: "/implicit", wantStatus: 200, wantBody: "ok"},
		{name: "an event that is no request is a 400", method: "", path: "/html", wantStatus: 400, wantBody: "the request has no method (not an API Gateway HTTP API event)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := Serve(context.Background(), h, apiEvent(tc.method, tc.path, "", "", tc.b64, nil), maxBody)
			if resp.StatusCode != tc.wantStatus || resp.Body != tc.wantBody || resp.IsBase64Encoded != tc.wantB64 {
				t.Errorf("got %d %q base64=%v", resp.StatusCode, resp.Body, resp.IsBase64Encoded)
			}
			for k, v := range tc.wantHeader {
				if resp.Headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, resp.Headers[k], v)
				}
			}
			if strings.Join(resp.Cookies, ";") != strings.Join(tc.wantCookie, ";") {
				t.Errorf("cookies %q, want %q", resp.Cookies, tc.wantCookie)
			}
			if _, ok := resp.Headers["Set-Cookie"]; ok {
				t.Error("Set-Cookie sent as a header")
			}
		})
	}
}
