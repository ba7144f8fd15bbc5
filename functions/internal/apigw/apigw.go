// Package apigw adapts API Gateway HTTP API events (payload format 2.0)
// to net/http for the functions behind Stepline's HTTP API: a request
// becomes an *http.Request, a handler's answer an API response.
package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Serve answers one API Gateway HTTP API request (payload format 2.0)
// with h. A request that cannot be turned into an http.Request (see
// Request) is a 400.
func Serve(ctx context.Context, h http.Handler, ev events.APIGatewayV2HTTPRequest, maxBody int) events.APIGatewayV2HTTPResponse {
	r, err := Request(ctx, ev, maxBody)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{
			StatusCode: http.StatusBadRequest,
			Headers:    map[string]string{"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"},
			Body:       err.Error() + "\n",
		}
	}
	w := newResponse()
	h.ServeHTTP(w, r)
	return w.apiResponse(r.Method == http.MethodHead)
}

// Request turns an HTTP API request into the http.Request its handler
// sees: method, path and query as received, headers (cookies included),
// the decoded body (at most maxBody bytes), the caller's address.
func Request(ctx context.Context, ev events.APIGatewayV2HTTPRequest, maxBody int) (*http.Request, error) {
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		return nil, errors.New("the request has no method (not an API Gateway HTTP API event)")
	}
	rawPath := ev.RawPath
	if rawPath == "" {
		rawPath = ev.RequestContext.HTTP.Path
	}
	if !strings.HasPrefix(rawPath, "/") {
		return nil, fmt.Errorf("request path %q is not absolute", rawPath)
	}
	path, err := url.PathUnescape(rawPath)
	if err != nil {
		return nil, fmt.Errorf("request path %q: %w", rawPath, err)
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return nil, errors.New("the request body is not valid base64")
		}
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("the request body is %d bytes, limit %d", len(body), maxBody)
	}
	host := Header(ev.Headers, "host")
	if host == "" {
		host = ev.RequestContext.DomainName
	}
	u := &url.URL{Scheme: "https", Host: host, Path: path, RawPath: rawPath, RawQuery: ev.RawQueryString}
	r, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for k, v := range ev.Headers {
		r.Header.Set(k, v)
	}
	if len(ev.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	r.ContentLength = int64(len(body))
	r.RequestURI = u.RequestURI()
	r.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	return r, nil
}

// Header looks a header up by name in any case (HTTP APIs send them in
// lower case).
func Header(h map[string]string, name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// response is the http.ResponseWriter a handler writes the API's answer to.
type response struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newResponse() *response { return &response{header: http.Header{}} }

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *response) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// apiResponse is the answer in payload format 2.0: a header with several
// values is sent comma-separated, Set-Cookie as cookies, a body that is not
// text in base64.
func (w *response) apiResponse(head bool) events.APIGatewayV2HTTPResponse {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	out := events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{}}
	for k, vs := range w.header {
		if k == "Set-Cookie" {
			out.Cookies = append(out.Cookies, vs...)
			continue
		}
		out.Headers[k] = strings.Join(vs, ", ")
	}
	if head || w.body.Len() == 0 {
		return out
	}
	if textual(w.header.Get("Content-Type")) {
		out.Body = w.body.String()
	} else {
		out.Body = base64.StdEncoding.EncodeToString(w.body.Bytes())
		out.IsBase64Encoded = true
	}
	return out
}

// textual reports whether a body of this content type travels as text.
func textual(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return contentType == ""
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || strings.HasSuffix(mt, "+xml")
}
