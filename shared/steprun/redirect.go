package steprun

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/stepline/stepline/shared/internal/origin"
)

// MaxRedirects is how many redirects a request the runner sends itself
// (a webhook check, an on_failure webhook) follows, all within its
// origin.
const MaxRedirects = origin.MaxRedirects

// client is the client of the runner's own requests: h.HTTP (or
// http.DefaultClient) following a redirect only within the request's
// origin (package origin): such a request carries the pipeline's secrets
// in its URL, headers and body.
func (h *Handler) client() *http.Client { return origin.Client(h.HTTP) }

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
