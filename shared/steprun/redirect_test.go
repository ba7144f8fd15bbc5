package steprun

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestClientRedirects: the runner's client follows MaxRedirects redirects
// within the origin and refuses one more, and any to another origin.
func TestClientRedirects(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("another origin got a request")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if n == 0 {
			return
		}
		http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	h := &Handler{HTTP: srv.Client()}
	for _, tc := range []struct {
		path string
		want string // "" when followed to its end
	}{
		{"/hop/0", ""},
		{"/hop/" + strconv.Itoa(MaxRedirects), ""},
		{"/hop/" + strconv.Itoa(MaxRedirects+1), "check: redirect not followed: more than 10 redirects"},
		{"/away", "check: redirect not followed: redirect to " + other.URL + " not followed: another origin than " + srv.URL},
	} {
		resp, err := h.client().Get(srv.URL + tc.path)
		if err == nil {
			resp.Body.Close()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.path, err)
		case tc.want != "" && (err == nil || requestError("check", err).Error() != tc.want):
			t.Errorf("%s: err = %v, want %q", tc.path, err, tc.want)
		}
	}
}
