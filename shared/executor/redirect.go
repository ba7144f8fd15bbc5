package executor

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// MaxRedirects is how many redirects one executor request follows.
const MaxRedirects = 10

// errRedirect marks a redirect an executor request did not follow.
var errRedirect = errors.New("redirect not followed")

// keepOrigin returns a copy of c that follows a redirect only within the
// request's origin (scheme, host and port), or from http to https on the
// same host, at most MaxRedirects times. The URL, headers and body of an
// executor request carry the pipeline's secrets ("X-Api-Key: ${KEY}", a
// token in the query); what a server answers is not trusted, and a
// redirect to another origin would send them there (Go's client drops
// only Authorization and cookies across hosts). c's own CheckRedirect,
// if any, is asked after this policy.
func keepOrigin(c *http.Client) *http.Client {
	cp := *c
	next := c.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects {
			return fmt.Errorf("%w: more than %d redirects", errRedirect, MaxRedirects)
		}
		if !sameOrigin(via[0].URL, req.URL) {
			return fmt.Errorf("%w: redirect to %s not followed: another origin than %s", errRedirect, origin(req.URL), origin(via[0].URL))
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &cp
}

// sameOrigin reports whether a request to to keeps what a request to from
// carries within from's origin: the same scheme, host and port, or the
// step from http to https on the same host (to its default port, or the
// same one).
func sameOrigin(from, to *url.URL) bool {
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

// origin is u's scheme and host, for messages: never its path, query or
// user information, which a redirect target may hold secrets in.
func origin(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}
