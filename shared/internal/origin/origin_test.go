package origin

import (
	"errors"
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
		if got := Same(from, to); got != tc.want {
			t.Errorf("Same(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// TestClient: MaxRedirects redirects within the origin are followed, one
// more is refused, and one to another origin is refused naming that
// origin only; the client given keeps its own policy after this one, and
// is not changed.
func TestClient(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the other origin was reached: %s", r.URL)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/")); err == nil && n > 0 {
			http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusTemporaryRedirect)
			return
		}
		if r.URL.Path == "/away" {
			http.Redirect(w, r, other.URL+"/secret?k=v", http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	base := &http.Client{}
	c := Client(base)
	if base.CheckRedirect != nil {
		t.Error("Client changed the client it was given")
	}
	for _, tc := range []struct {
		path, err string
	}{
		{"/hop/0", ""},
		{"/hop/" + strconv.Itoa(MaxRedirects), ""},
		{"/hop/" + strconv.Itoa(MaxRedirects+1), "redirect not followed: more than 10 redirects"},
		{"/away", "redirect not followed: redirect to " + other.URL + " not followed"},
	} {
		resp, err := c.Get(srv.URL + tc.path)
		if resp != nil {
			resp.Body.Close()
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.path, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.path, err, tc.err)
		}
		// Callers report the cause, not the url.Error's URL (the one
		// requested, theirs): the cause names no path of the target.
		var ue *url.Error
		if errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "secret") {
			t.Errorf("%s: the cause shows the target's path: %v", tc.path, ue.Err)
		}
		if err != nil && !errors.Is(err, ErrRedirect) {
			t.Errorf("%s: %v is not ErrRedirect", tc.path, err)
		}
	}
	// The client's own policy still applies within the origin.
	own := Client(&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }})
	resp, err := own.Get(srv.URL + "/hop/1")
	if err != nil || resp.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("own policy: %v, %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	if Client(nil).CheckRedirect == nil {
		t.Error("Client(nil) follows every redirect")
	}
}
