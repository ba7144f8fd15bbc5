package steprun

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// MaxRedirects is how many redirects a request the runner sends itself
// (a webhook check, an on_failure webhook) follows.
const MaxRedirects = 10

// errRedirect marks a redirect the runner did not follow.
var errRedirect = errors.New("redirect not followed")

// client is the client of the runner's own requests: h.HTTP (or
// http.DefaultClient), following a redirect only within the request's
// origin (scheme, host and port, or http to https on the same host), at
// most MaxRedirects times. Such a request carries the pipeline's secrets
// in its URL, headers and body, and what the other side answers is not
// trusted: Go's client keeps custom headers across hosts.
func (h *Handler) client() *http.Client {
	c := h.HTTP
	if c == nil {
		c = http.DefaultClient
	}
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

// sameOrigin reports whether a request to to stays within from's origin.
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

// origin is u's scheme and host, for messages.
func origin(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// requestError is err of the runner's request to what (a field name):
// a url.Error repeats the whole URL, query included, so only its cause
// is kept.
func requestError(what string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%s: %w", what, err)
}
