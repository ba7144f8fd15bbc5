package telemetry

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// newCollector is an OTLP/HTTP endpoint that hands each request (body
// read) to got.
func newCollector(t *testing.T, got chan<- *http.Request) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case got <- r:
		default:
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv
}
