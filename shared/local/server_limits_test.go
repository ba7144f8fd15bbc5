package local

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestServerBodyLimits checks that every route reading a body answers 413
// past its limit, and takes a body at the limit.
func TestServerBodyLimits(t *testing.T) {
	base, _ := startServer(t, testTokens, HTTPLimits{})
	// event pads a generic event with trailing white space to n bytes.
	event := func(n int) string {
		const e = `{"event": "order.created"}`
		return e + strings.Repeat(" ", n-len(e))
	}
	// decision pads an approval form to n bytes.
	decision := func(n int) string {
		const f = "decision=approve&by="
		return f + strings.Repeat("a", n-len(f))
	}
	const form = "application/x-www-form-urlencoded"
	tests := []struct {
		name, path, contentType, body string
		chunked                       bool // send without Content-Length
		want                          int
	}{
		{"webhook below the limit", "/webhook?source=generic", "application/json", event(MaxBodyBytes - 1), false, 202},
		{"webhook at the limit", "/webhook?source=generic", "application/json", event(MaxBodyBytes), false, 202},
		{"webhook above the limit", "/webhook?source=generic", "application/json", event(MaxBodyBytes + 1), false, 413},
		{"webhook above the limit, chunked", "/webhook?source=generic", "application/json", event(MaxBodyBytes + 1), true, 413},
		{"webhook at the limit, chunked", "/webhook?source=generic", "application/json", event(MaxBodyBytes), true, 202},
		{"manual run at the limit", "/pipelines/orders/runs", "application/json", event(MaxBodyBytes), false, 202},
		{"manual run above the limit", "/pipelines/orders/runs", "application/json", event(MaxBodyBytes + 1), false, 413},
		{"manual run far above the limit, chunked", "/pipelines/orders/runs", "application/json", event(4 * MaxBodyBytes), true, 413},
		// A forged link is refused (403) once its form is read: the size
		// check comes first.
		{"decision below the limit", "/approvals/forged.link", form, decision(MaxApprovalBodyBytes - 1), false, 403},
		{"decision at the limit", "/approvals/forged.link", form, decision(MaxApprovalBodyBytes), false, 403},
		{"decision above the limit", "/approvals/forged.link", form, decision(MaxApprovalBodyBytes + 1), false, 413},
		{"decision above the limit, chunked", "/approvals/forged.link", form, decision(MaxApprovalBodyBytes + 1), true, 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			req, _ := http.NewRequest("POST", base+tt.path, body)
			req.Header.Set("Authorization", "Bearer "+tokPayments)
			req.Header.Set("Content-Type", tt.contentType)
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%d bytes to %s = %d, want %d: %.200s", len(tt.body), tt.path, resp.StatusCode, tt.want, b)
			}
			if tt.want == 413 && !strings.Contains(string(b), "request body too large") {
				t.Errorf("413 says %s", b)
			}
		})
	}
}

// TestServerHeaderLimit checks MaxHeaderBytes through HTTPLimits: net/http
// allows 4 KiB over it for the request line and answers 431 beyond.
func TestServerHeaderLimit(t *testing.T) {
	base, _ := startServer(t, nil, HTTPLimits{MaxHeaderBytes: 1 << 10})
	tests := []struct {
		name   string
		header int // bytes of one extra header's value
		want   int
	}{
		{"well within", 512, 200},
		{"over the limit and its allowance", 8 << 10, 431},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+"/health", nil)
			req.Header.Set("X-Padding", strings.Repeat("p", tt.header))
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("a %d-byte header = %d, want %d", tt.header, resp.StatusCode, tt.want)
			}
		})
	}
}

// TestServerDefaultLimits checks that zero HTTPLimits take the exported
// constants.
func TestServerDefaultLimits(t *testing.T) {
	_, srv := startServer(t, nil, HTTPLimits{})
	hs := srv.HTTPServer()
	if hs.ReadHeaderTimeout != ReadHeaderTimeout || hs.ReadTimeout != ReadTimeout || hs.WriteTimeout != WriteTimeout ||
		hs.IdleTimeout != IdleTimeout || hs.MaxHeaderBytes != MaxHeaderBytes {
		t.Errorf("http.Server limits %v %v %v %v %d", hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout, hs.MaxHeaderBytes)
	}
	if WriteTimeout <= ReadTimeout {
		t.Errorf("WriteTimeout %v does not cover ReadTimeout %v", WriteTimeout, ReadTimeout)
	}
}

// TestServerSlowClients checks that a client sending too slowly, or
// holding a connection it does not use, loses it within the configured
// timeouts (short ones here, so that the test takes seconds), and that a
// client within them is served.
func TestServerSlowClients(t *testing.T) {
	limits := HTTPLimits{
		ReadHeaderTimeout: 500 * time.Millisecond,
		ReadTimeout:       time.Second,
		WriteTimeout:      2 * time.Second,
		IdleTimeout:       time.Second,
	}
	base, _ := startServer(t, testTokens, limits)
	addr := strings.TrimPrefix(base, "http://")
	const head = "POST /pipelines/orders/runs HTTP/1.1\r\nHost: stepline\r\nAuthorization: Bearer " + tokCheckout + "\r\n" +
		"Content-Type: application/json\r\n"

	// Each send writes a request, slowly or not, until stop is closed or a
	// write fails.
	every := func(c net.Conn, stop <-chan struct{}, d time.Duration, b []byte) {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			if _, err := c.Write(b); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}
	tests := []struct {
		name   string
		conns  int // sent at once
		send   func(c net.Conn, stop <-chan struct{})
		status int           // the answer expected; 0: none
		closed bool          // the server closes the connection
		after  time.Duration // not before this (the timeout that closes it)
		within time.Duration // but before this
	}{
		{
			name: "body dribbled one byte a second", conns: 20,
			send: func(c net.Conn, stop <-chan struct{}) {
				fmt.Fprint(c, head+"Content-Length: 100\r\n\r\n")
				every(c, stop, time.Second, []byte(" "))
			},
			status: http.StatusRequestTimeout, closed: true, after: limits.ReadTimeout * 8 / 10, within: limits.ReadTimeout + 2*time.Second,
		},
		{
			name: "headers dribbled", conns: 20,
			send: func(c net.Conn, stop <-chan struct{}) {
				fmt.Fprint(c, "POST /pipelines/orders/runs HTTP/1.1\r\nX-Slow: ")
				every(c, stop, 100*time.Millisecond, []byte("a"))
			},
			closed: true, after: limits.ReadHeaderTimeout * 8 / 10, within: limits.ReadHeaderTimeout + 2*time.Second,
		},
		{
			name: "one request, then idle", conns: 1,
			send: func(c net.Conn, stop <-chan struct{}) {
				fmt.Fprint(c, head+"Content-Length: 2\r\n\r\n{}")
			},
			status: http.StatusAccepted, closed: true, after: limits.IdleTimeout * 8 / 10, within: limits.IdleTimeout + 2*time.Second,
		},
		{
			name: "body in two pieces within the read timeout", conns: 1,
			send: func(c net.Conn, stop <-chan struct{}) {
				fmt.Fprint(c, head+"Content-Length: 2\r\n\r\n{")
				select {
				case <-stop:
				case <-time.After(limits.ReadTimeout / 3):
					fmt.Fprint(c, "}")
				}
			},
			status: http.StatusAccepted, within: limits.ReadTimeout,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, tt.conns)
			for range tt.conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- slowClient(addr, tt.send, tt.status, tt.closed, tt.after, tt.within)
				}()
			}
			wg.Wait()
			close(errs)
			failed := 0
			for err := range errs {
				if err != nil {
					failed++
					if failed <= 3 {
						t.Error(err)
					}
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d connections misbehaved", failed, tt.conns)
			}
		})
	}
}

// slowClient sends on one connection and checks what comes back: the
// status (when not 0) and, when closed, the server closing the connection
// between after and within from the start; otherwise the answer within.
func slowClient(addr string, send func(net.Conn, <-chan struct{}), status int, closed bool, after, within time.Duration) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := make(chan struct{})
	defer close(stop)
	start := time.Now()
	go send(c, stop)
	// A connection the server never closes fails here, not by hanging.
	if err := c.SetReadDeadline(start.Add(within + time.Second)); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	if status != 0 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return fmt.Errorf("no answer after %v: %w", time.Since(start), err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			return fmt.Errorf("answer %d, want %d", resp.StatusCode, status)
		}
		if !closed {
			if d := time.Since(start); d > within {
				return fmt.Errorf("answered after %v, want within %v", d, within)
			}
			return nil
		}
	}
	_, err = br.ReadByte()
	d := time.Since(start)
	switch {
	case err == nil:
		return fmt.Errorf("the server sent more after its answer")
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("the connection is still open after %v", d)
	case !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("read: %w", err)
	case d < after || d > within:
		return fmt.Errorf("closed after %v, want between %v and %v", d, after, within)
	}
	return nil
}
