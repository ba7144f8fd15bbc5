// Package origin keeps an HTTP client's redirects within the origin of
// the request that met them: the same scheme, host and port, or the step
// from http to https on the same host, at most MaxRedirects times.
//
// Every request Stepline sends for a pipeline (executors, webhook checks,
// failure webhooks, notifications) may carry the pipeline's secrets in its
// URL, headers and body, and what the other side answers is not trusted.
// Go's client drops only Authorization and cookies when a redirect leaves
// the host; a custom header (X-Api-Key) and a 307's body would go on to
// wherever the Location names, 169.254.169.254 included. A redirect
// elsewhere is not followed: the request fails with ErrRedirect, naming
// the target's origin only (never its path or query).
package origin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// MaxRedirects is how many redirects one request follows.
const MaxRedirects = 10

// ErrRedirect marks a redirect not followed.
var ErrRedirect = errors.New("redirect not followed")

// Client returns a copy of c (http.DefaultClient when nil) that follows
// a redirect only within the request's origin, at most MaxRedirects
// times. c's own CheckRedirect, if any, is asked after this policy.
func Client(c *http.Client) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	cp := *c
	next := c.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects {
			return fmt.Errorf("%w: more than %d redirects", ErrRedirect, MaxRedirects)
		}
		if !Same(via[0].URL, req.URL) {
			return fmt.Errorf("%w: redirect to %s not followed: another origin than %s", ErrRedirect, Of(req.URL), Of(via[0].URL))
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &cp
}

// Same reports whether a request to to keeps what a request to from
// carries within from's origin: the same scheme, host and port, or the
// step from http to https on the same host (to its default port, or the
// same one).
func Same(from, to *url.URL) bool {
	if !strings.EqualFold(from.Hostname(), to.Hostname()) {
		return false
	}
	fs, ts := strings.ToLower(from.Scheme), strings.ToLower(to.Scheme)
	switch {
	case fs == ts:
		return port(from) == port(to)
	case fs == "http" && ts == "https":
		return to.Port() == "" || to.Port() == "443" || to.Port() == from.Port()
	}
	return false
}

// port is u's port, the scheme's default when none is written.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// Of is u's scheme and host, for messages: never its path, query or user
// information, which a redirect target may hold secrets in.
func Of(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}
