package approval

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

var t0 = time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

var testKey = []byte("0123456789abcdef0123456789abcdef")

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func TestSigner(t *testing.T) {
	clk := &clock{t: t0}
	s := &Signer{Key: testKey, Now: clk.now}
	const id = "Q2hlY2tvdXQtYXBwcm92YWwtaWQtMDEyMzQ1Njc4OWFi"
	exp := t0.Add(time.Hour)
	tok := s.Sign(id, exp)
	if tok == "" || strings.ContainsAny(tok, "/+=?#") {
		t.Fatalf("token %q is not a URL path segment", tok)
	}
	if got, err := s.Verify(tok); err != nil || got != id {
		t.Fatalf("Verify = %q, %v", got, err)
	}

	p64, m64, _ := strings.Cut(tok, ".")
	enc := base64.RawURLEncoding
	forge := func(payload string) string { return enc.EncodeToString([]byte(payload)) + "." + m64 }
	other := (&Signer{Key: []byte("another key, 32 bytes long......"), Now: clk.now}).Sign(id, exp)
	flip := []byte(m64)
	flip[3] ^= 1
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"longer expiry", forge(id + "|" + "9999999999"), ErrForged},
		{"other approval", forge("another-id|" + "1795975200"), ErrForged},
		{"flipped MAC bit", p64 + "." + string(flip), ErrForged},
		{"other key", other, ErrForged},
		{"no MAC", p64, ErrForged},
		{"empty MAC", p64 + ".", ErrForged},
		{"not base64", "!!!." + m64, ErrForged},
		{"empty", "", ErrForged},
		{"huge", strings.Repeat("A", 5000) + "." + m64, ErrForged},
		{"path-like", "../" + tok, ErrForged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Verify(tt.token); !errors.Is(err, tt.want) {
				t.Errorf("Verify = %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("expiry", func(t *testing.T) {
		clk.set(exp.Add(-time.Second))
		if _, err := s.Verify(tok); err != nil {
			t.Errorf("a second before expiry: %v", err)
		}
		clk.set(exp)
		if _, err := s.Verify(tok); !errors.Is(err, ErrExpired) {
			t.Errorf("at expiry: %v", err)
		}
		clk.set(exp.Add(48 * time.Hour))
		if _, err := s.Verify(tok); !errors.Is(err, ErrExpired) {
			t.Errorf("after expiry: %v", err)
		}
		clk.set(t0)
	})
	t.Run("short key", func(t *testing.T) {
		weak := &Signer{Key: []byte("short"), Now: clk.now}
		if weak.Sign(id, exp) != "" {
			t.Error("a short key signs")
		}
		if _, err := weak.Verify(tok); !errors.Is(err, ErrNoKey) {
			t.Errorf("Verify with a short key: %v", err)
		}
		if err := (&Signer{}).Check(); !errors.Is(err, ErrNoKey) {
			t.Errorf("Check of no key: %v", err)
		}
	})
}

// harness is a Service over a SQLite store with one pending approval.
type harness struct {
	svc    *Service
	st     *sqlite.Store
	clock  *clock
	a      store.Approval
	token  string
	mu     sync.Mutex
	resume []string // "task token|decision|by"
	err    error    // what Complete returns
}

const taskToken = "AQCEAAAAKgAAAAMAAAAAAAAAAeXRhc2stdG9rZW4tc2VjcmV0"

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, err := store.NewApprovalID()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{st: st, clock: &clock{t: t0}}
	h.a = store.Approval{
		ID: id, RunID: "run-0123456789abcdef01234567", Step: "approve-remediation", Pipeline: "sre-alert-triage",
		Message:   "Restart checkout-api in payments?\n<script>alert(1)</script>",
		TaskToken: taskToken, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
	}
	if err := st.CreateApproval(ctx, h.a); err != nil {
		t.Fatal(err)
	}
	h.svc = &Service{
		Store:  st,
		Signer: &Signer{Key: testKey, Now: h.clock.now},
		Complete: func(_ context.Context, tok string, d task.Decision) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.err != nil {
				return h.err
			}
			h.resume = append(h.resume, tok+"|"+d.Decision+"|"+d.By)
			return nil
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	h.token = h.svc.Signer.Sign(id, h.a.ExpiresAt)
	return h
}

func (h *harness) resumed() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.resume...)
}

func TestServiceDecide(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	pd, err := h.svc.Page(ctx, h.token)
	if err != nil {
		t.Fatal(err)
	}
	if pd.State != StatePending || pd.Step != "approve-remediation" || pd.Pipeline != "sre-alert-triage" || !pd.ExpiresAt.Equal(h.a.ExpiresAt) {
		t.Errorf("page %+v", pd)
	}
	if b, _ := json.Marshal(pd); strings.Contains(string(b), taskToken) {
		t.Error("the page carries the task token")
	}

	if err := h.svc.Decide(ctx, h.token, "approve", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := h.resumed(); len(got) != 1 || got[0] != taskToken+"|approve|alice" {
		t.Fatalf("resumed %v", got)
	}
	a, _ := h.st.GetApproval(ctx, h.a.ID)
	if a.Decision != store.DecisionApproved || a.DecidedBy != "alice" {
		t.Errorf("stored %+v", a)
	}

	// Replays are refused, whatever they ask.
	for _, d := range []string{"approve", "reject"} {
		err := h.svc.Decide(ctx, h.token, d, "mallory")
		if !errors.Is(err, ErrDecided) || !errors.Is(err, store.ErrConflict) {
			t.Errorf("replay %s: %v", d, err)
		}
	}
	if got := h.resumed(); len(got) != 1 {
		t.Errorf("a replay resumed the run: %v", got)
	}
	if pd, _ := h.svc.Page(ctx, h.token); pd.State != StateDecided || pd.Decision != "approved" || pd.DecidedBy != "alice" {
		t.Errorf("page after decision %+v", pd)
	}
}

func TestServiceDecideErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		setup func(h *harness) (token, decision string)
		want  error
	}{
		{"bad decision", func(h *harness) (string, string) { return h.token, "maybe" }, ErrBadDecision},
		{"forged", func(h *harness) (string, string) {
			return (&Signer{Key: []byte("a different key of enough length")}).Sign(h.a.ID, h.a.ExpiresAt), "approve"
		}, ErrForged},
		{"link expired", func(h *harness) (string, string) {
			h.clock.set(h.a.ExpiresAt.Add(time.Minute))
			return h.token, "approve"
		}, ErrExpired},
		{"approval expired before its link", func(h *harness) (string, string) {
			h.clock.set(h.a.ExpiresAt.Add(time.Minute))
			return h.svc.Signer.Sign(h.a.ID, h.a.ExpiresAt.Add(time.Hour)), "reject"
		}, ErrExpired},
		{"unknown approval", func(h *harness) (string, string) {
			return h.svc.Signer.Sign("no-such-approval", h.a.ExpiresAt), "approve"
		}, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tok, d := tt.setup(h)
			if err := h.svc.Decide(ctx, tok, d, "bob"); !errors.Is(err, tt.want) {
				t.Fatalf("Decide = %v, want %v", err, tt.want)
			}
			if got := h.resumed(); len(got) != 0 {
				t.Errorf("resumed %v", got)
			}
			a, _ := h.st.GetApproval(ctx, h.a.ID)
			if a.Decision != store.DecisionPending {
				t.Errorf("stored decision %q", a.Decision)
			}
		})
	}

	t.Run("resume fails", func(t *testing.T) {
		h := newHarness(t)
		h.err = errors.New("TaskTimedOut: task token " + taskToken + " is no longer valid")
		err := h.svc.Decide(ctx, h.token, "reject", "bob")
		if !errors.Is(err, ErrResume) {
			t.Fatalf("Decide = %v", err)
		}
		if strings.Contains(err.Error(), taskToken) {
			t.Errorf("error shows the task token: %v", err)
		}
		if a, _ := h.st.GetApproval(ctx, h.a.ID); a.Decision != store.DecisionRejected {
			t.Errorf("decision not recorded: %+v", a)
		}
	})
}

// TestServiceDecideConcurrent: of many clicks at once, one decides.
func TestServiceDecideConcurrent(t *testing.T) {
	h := newHarness(t)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := "approve"
			if i%2 == 1 {
				d = "reject"
			}
			errs[i] = h.svc.Decide(context.Background(), h.token, d, "clicker")
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrDecided):
			t.Errorf("unexpected error %v", err)
		}
	}
	if won != 1 || len(h.resumed()) != 1 {
		t.Errorf("%d decisions won, %d resumes", won, len(h.resumed()))
	}
}

func TestHandler(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewServer(h.svc)
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	link := h.svc.Link(srv.URL+"/", h.a)
	if !strings.HasPrefix(link, srv.URL+"/approvals/") {
		t.Fatalf("link %q", link)
	}
	get := func(u string, accept string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	post := func(u string, form url.Values) (*http.Response, string) {
		t.Helper()
		resp, err := client.PostForm(u, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	// The confirmation page: details, a form, no token, no script.
	for range 2 { // a GET never decides
		resp, body := get(link, "")
		if resp.StatusCode != 200 || !strings.Contains(body, "approve-remediation") || !strings.Contains(body, `value="approve"`) ||
			!strings.Contains(body, `method="post"`) {
			t.Fatalf("page %d:\n%s", resp.StatusCode, body)
		}
		if strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;") {
			t.Error("the message is not escaped")
		}
		if strings.Contains(body, taskToken) {
			t.Error("the page shows the task token")
		}
		for k, v := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if resp.Header.Get(k) != v {
				t.Errorf("%s = %q", k, resp.Header.Get(k))
			}
		}
	}
	if len(h.resumed()) != 0 {
		t.Fatal("a GET resumed the run")
	}

	tests := []struct {
		name   string
		url    string
		form   url.Values
		status int
		says   string
	}{
		{"bad decision", link, url.Values{"decision": {"maybe"}}, 400, "Choose approve or reject"},
		{"forged", srv.URL + "/approvals/" + (&Signer{Key: []byte("a different key of enough length")}).Sign(h.a.ID, h.a.ExpiresAt), url.Values{"decision": {"approve"}}, 403, "not valid"},
		{"no token", srv.URL + "/approvals/", url.Values{"decision": {"approve"}}, 404, "no approval at this address"},
		{"decide", link, url.Values{"decision": {"approve"}, "by": {"  Alice \n Example  "}}, 303, ""},
		{"replay", link, url.Values{"decision": {"reject"}, "by": {"mallory"}}, 409, "Already decided"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(tt.url, tt.form)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.says) {
				t.Errorf("status %d, want %d saying %q:\n%s", resp.StatusCode, tt.status, tt.says, body)
			}
		})
	}
	if got := h.resumed(); len(got) != 1 || got[0] != taskToken+"|approve|Alice Example" {
		t.Errorf("resumed %v", got)
	}
	resp, body := get(link, "")
	if resp.StatusCode != 200 || !strings.Contains(body, "Approved</strong> by Alice Example") || strings.Contains(body, "<form") {
		t.Errorf("page after the decision %d:\n%s", resp.StatusCode, body)
	}
	resp, body = get(link, "application/json")
	var pd PageData
	if err := json.Unmarshal([]byte(body), &pd); err != nil || resp.Header.Get("Content-Type") != "application/json" || pd.State != StateDecided {
		t.Errorf("JSON page %s (%v)", body, err)
	}

	req, _ := http.NewRequest(http.MethodDelete, link, nil)
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("DELETE: %v %v", resp, err)
	}

	h.clock.set(h.a.ExpiresAt)
	if resp, body := get(link, ""); resp.StatusCode != 410 || !strings.Contains(body, "expired") {
		t.Errorf("expired link %d:\n%s", resp.StatusCode, body)
	}
}

func TestHandlerJSONDecision(t *testing.T) {
	h := newHarness(t)
	h.svc.Identify = func(r *http.Request) string { return r.Header.Get("X-User") }
	srv := httptest.NewServer(h.svc)
	defer srv.Close()
	link := h.svc.Link(srv.URL, h.a)
	req, _ := http.NewRequest(http.MethodPost, link, strings.NewReader(`{"decision":"reject","by":"form name"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-User", "carol@example.com")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pd PageData
	if err := json.NewDecoder(resp.Body).Decode(&pd); err != nil || resp.StatusCode != 200 || pd.Decision != "rejected" || pd.DecidedBy != "carol@example.com" {
		t.Errorf("status %d page %+v (%v)", resp.StatusCode, pd, err)
	}
	if got := h.resumed(); len(got) != 1 || got[0] != taskToken+"|reject|carol@example.com" {
		t.Errorf("resumed %v", got)
	}
}

func TestCleanBy(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	tests := map[string]string{
		"":                  DefaultBy,
		"  \n ":             DefaultBy,
		" Alice \n Example": "Alice Example",
		long:                strings.Repeat("é", 100),
	}
	for in, want := range tests {
		if got := cleanBy(in); got != want {
			t.Errorf("cleanBy(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestServiceResendsStaleDecision: a decision whose resume failed leaves
// the run waiting; a replay within ResendAfter resumes nothing, one at
// ResendAfter or later sends the recorded decision (not its own) again,
// and is still ErrDecided. A resend the run does not take changes
// nothing.
func TestServiceResendsStaleDecision(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.err = errors.New("ThrottlingException")
	if err := h.svc.Decide(ctx, h.token, "reject", "bob"); !errors.Is(err, ErrResume) {
		t.Fatalf("Decide = %v, want ErrResume", err)
	}
	h.mu.Lock()
	h.err = nil
	h.mu.Unlock()
	for _, tc := range []struct {
		after time.Duration
		sent  int
	}{
		{ResendAfter - time.Second, 0},
		{ResendAfter, 1},
		{ResendAfter + time.Minute, 2},
	} {
		h.clock.set(t0.Add(tc.after))
		if err := h.svc.Decide(ctx, h.token, "approve", "mallory"); !errors.Is(err, ErrDecided) {
			t.Fatalf("replay %s after: %v, want ErrDecided", tc.after, err)
		}
		got := h.resumed()
		if len(got) != tc.sent {
			t.Fatalf("replay %s after: resumed %v, want %d sends", tc.after, got, tc.sent)
		}
		for _, r := range got {
			if r != taskToken+"|reject|bob" {
				t.Fatalf("sent %q, want the recorded decision", r)
			}
		}
	}
	// The run went on: the token is spent, the send fails, nothing else.
	h.mu.Lock()
	h.err = errors.New("TaskTimedOut: Task Timed Out")
	h.mu.Unlock()
	if err := h.svc.Decide(ctx, h.token, "approve", "mallory"); !errors.Is(err, ErrDecided) {
		t.Fatalf("replay after the run went on: %v", err)
	}
	if a, _ := h.st.GetApproval(ctx, h.a.ID); a.Decision != store.DecisionRejected || a.DecidedBy != "bob" {
		t.Errorf("the record changed: %+v", a)
	}
}
