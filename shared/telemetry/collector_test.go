package telemetry

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// request is what a collector got.
type request struct {
	path, contentType string
	key               string // the X-Key header
	body              []byte
}

// newCollector is an OTLP/HTTP JSON endpoint that hands each request to
// got.
func newCollector(t *testing.T, got chan<- request) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		select {
		case got <- request{r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("X-Key"), body}:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	return srv
}
