package steprun

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"http://hooks.example.com/a", "http://hooks.example.com/b?x=1", true},
		{"http://hooks.example.com/a", "http://HOOKS.example.com:80/b", true},
		{"https://hooks.example.com/a", "https://hooks.example.com:443/b", true},
		{"http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b", true},
		{"http://127.0.0.1:8080/a", "http://127.0.0.1:8081/b", false},
		{"http://hooks.example.com/a", "http://evil.example.com/a", false},
		{"http://hooks.example.com/a", "http://hooks.example.com.evil.net/a", false},
		{"http://hooks.example.com/a", "http://169.254.169.254/latest/meta-data/", false},
		// http to https on the same host is an upgrade; the reverse a downgrade.
		{"http://hooks.example.com/a", "https://hooks.example.com/a", true},
		{"http://hooks.example.com/a", "https://hooks.example.com:443/a", true},
		{"http://hooks.example.com:8080/a", "https://hooks.example.com:8080/a", true},
		{"http://hooks.example.com:8080/a", "https://hooks.example.com:8443/a", false},
		{"https://hooks.example.com/a", "http://hooks.example.com/a", false},
		{"http://hooks.example.com/a", "file:///etc/passwd", false},
		{"http://hooks.example.com/a", "ftp://hooks.example.com/a", false},
	} {
		from, _ := url.Parse(tc.from)
		to, _ := url.Parse(tc.to)
		if got := sameOrigin(from, to); got != tc.want {
			t.Errorf("sameOrigin(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

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
