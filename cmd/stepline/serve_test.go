package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeEndToEnd drives stepline serve over loopback: an Alertmanager
// webhook starts a run, a repeat is deduplicated, the human step is
// approved through its signed link (forged and replayed links are
// refused), the run completes and its notifications and outbound calls
// land on a capturing server; a testing-stage pipeline is skipped, then
// run with its outbound calls muted.
func TestServeEndToEnd(t *testing.T) {
	var outbound sync.Map // path → count
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := outbound.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		fmt.Fprint(w, `{"confidence": 0.9, "summary": "handled `+r.URL.Path+`", "next_step_context": ""}`)
	}))
	defer hook.Close()
	count := func(path string) int64 {
		if n, ok := outbound.Load(path); ok {
			return n.(*atomic.Int64).Load()
		}
		return 0
	}
	dir := t.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	if err := os.MkdirAll(pipelines, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(pipelines, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a-alerts.yaml", fmt.Sprintf(`name: alerts
stage: production
trigger:
  match:
    source: alertmanager
    severity: {in: [critical]}
steps:
  - {name: look, executor: webhook, executor_config: {url: "%[1]s/look"}}
  - {name: approve, executor: human, prompt_template: "Restart {{ labels.service }}?", timeout_seconds: 600}
  - {name: act, executor: webhook, executor_config: {url: "%[1]s/act"}}
`, hook.URL))
	write("b-orders.yaml", fmt.Sprintf(`name: orders
trigger:
  match: {event: order.created}
steps:
  - {name: tell, executor: notify, executor_config: {url: "%[1]s/tell", payload: {order: "{{ labels.event }}"}}}
`, hook.URL))

	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	var heapSet atomic.Bool
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--dir", filepath.Join(dir, "state"), "--pipelines", pipelines},
			env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" },
				serveHeap: func() { heapSet.Store(true) }})
	}()
	base := ""
	for deadline := time.Now().Add(20 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`serving on (http://\S+)`).FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("serve did not start:\n%s\n%s", out.String(), errOut.String())
	}
	if !heapSet.Load() {
		t.Error("serve started without setting its collector (env.serveHeap)")
	}
	// serve prints where its web UI is, and the UI answers there.
	if !strings.Contains(out.String(), "web UI: "+base+"/ui/") {
		t.Errorf("serve's start message does not name the web UI: %q", out.String())
	}
	if resp, err := http.Get(base + "/ui/"); err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /ui/: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	runStatus := func(id string) string {
		resp, err := http.Get(base + "/runs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct{ Run struct{ Status string } }
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return v.Run.Status
	}
	waitFor := func(id, status string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if runStatus(id) == status {
				return
			}
		}
		t.Fatalf("run %s is %q, want %q\n%s", id, runStatus(id), status, errOut.String())
	}

	alert, err := os.ReadFile("../../events/alertmanager-firing.json")
	if err != nil {
		t.Fatal(err)
	}
	code, first := post("/webhook?source=alertmanager", string(alert))
	if code != http.StatusAccepted || first["status"] != "accepted" || first["pipeline"] != "alerts" {
		t.Fatalf("webhook: %d %v", code, first)
	}
	runID := first["run_id"].(string)
	code, again := post("/webhook?source=alertmanager", string(alert))
	if code != http.StatusAccepted || again["status"] != "deduplicated" || again["run_id"] != runID {
		t.Fatalf("repeat: %d %v", code, again)
	}
	waitFor(runID, "waiting")

	m := regexp.MustCompile(`approval needed: run \S+ step "approve": (\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no approval link printed:\n%s", out.String())
	}
	link := m[1]
	page, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != http.StatusOK || !strings.Contains(string(html), "Restart checkout-api?") {
		t.Fatalf("approval page: %d\n%s", page.StatusCode, html)
	}
	forged := link[:len(link)-3] + "abc"
	if resp, err := http.PostForm(forged, url.Values{"decision": {"approve"}, "by": {"intruder"}}); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("forged link: %v %v", resp.StatusCode, err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(link, url.Values{"decision": {"approve"}, "by": {"oncall"}})
	if err != nil || resp.StatusCode >= 400 {
		t.Fatalf("approve: %v %v", resp.StatusCode, err)
	}
	waitFor(runID, "completed")
	if resp, err := noRedirect.PostForm(link, url.Values{"decision": {"reject"}, "by": {"late"}}); err != nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("replayed link: %v %v", resp.StatusCode, err)
	}
	if count("/look") != 1 || count("/act") != 1 {
		t.Errorf("outbound calls: look %d act %d", count("/look"), count("/act"))
	}

	order, err := os.ReadFile("../../events/generic-order.json")
	if err != nil {
		t.Fatal(err)
	}
	if code, v := post("/webhook?source=generic", string(order)); code != http.StatusAccepted || v["status"] != "skipped_testing" {
		t.Fatalf("testing pipeline from a webhook: %d %v", code, v)
	}
	code, v := post("/webhook?source=generic&allow_testing=true", string(order))
	if code != http.StatusAccepted || v["status"] != "accepted" {
		t.Fatalf("allow_testing: %d %v", code, v)
	}
	waitFor(v["run_id"].(string), "completed")
	if count("/tell") != 0 {
		t.Error("a testing pipeline's notify step was sent")
	}
	if code, v := post("/pipelines/nope/runs", `{}`); code != http.StatusNotFound {
		t.Errorf("manual run of an unknown pipeline: %d %v", code, v)
	}
	if code, v := post("/webhook?source=generic", `{"pipeline": "nope", "event": "x"}`); code != http.StatusUnprocessableEntity {
		t.Errorf("webhook naming an unknown pipeline: %d %v", code, v)
	}
	if code, v := post("/webhook?source=generic", `{"event": "nothing.matches"}`); code != http.StatusUnprocessableEntity {
		t.Errorf("webhook matching no pipeline: %d %v", code, v)
	}

	cancel()
	select {
	case c := <-done:
		if c != 0 {
			t.Errorf("serve exited %d: %s", c, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
}

// TestServeRefuses checks the configurations serve will not start with:
// it exits 2 with the reason, before creating any state.
func TestServeRefuses(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(empty, []byte("# nobody yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"every IPv4 interface without tokens", []string{"--addr", "0.0.0.0:0"}, nil,
			"stepline: refusing to serve "},
		{"every interface without tokens", []string{"--addr", ":0"}, nil,
			"without tokens: anyone who reaches it could start and read every run; configure tokens (--tokens FILE or $STEPLINE_TOKENS), listen on loopback (--addr 127.0.0.1:PORT), or pass --insecure-no-auth"},
		{"no auth asked for, with tokens", []string{"--addr", "127.0.0.1:0", "--insecure-no-auth"}, map[string]string{"STEPLINE_TOKENS": "checkout=tok-1"},
			"--insecure-no-auth contradicts the tokens configured"},
		{"a token without a team", []string{"--addr", "127.0.0.1:0"}, map[string]string{"STEPLINE_TOKENS": "tok-legacy"},
			`$STEPLINE_TOKENS: a token has no team: name one (team=token), or call it "admin"`},
		{"admin spelled otherwise", []string{"--addr", "127.0.0.1:0"}, map[string]string{"STEPLINE_TOKENS": "checkout=tok-1,Admin=tok-2"},
			`team "Admin" looks like the admin team`},
		{"a tokens file without tokens", []string{"--addr", "127.0.0.1:0", "--tokens", empty}, nil,
			empty + ": no tokens"},
		{"a tokens variable without tokens", []string{"--addr", "127.0.0.1:0"}, map[string]string{"STEPLINE_TOKENS": " , ,"},
			"$STEPLINE_TOKENS: no tokens"},
		{"a token naming a secret that is not set", []string{"--addr", "127.0.0.1:0"}, map[string]string{"STEPLINE_TOKENS": "checkout=${CHECKOUT_TOKEN}"},
			`"CHECKOUT_TOKEN" is not set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			var out, errOut syncBuffer
			args := append([]string{"serve", "--dir", state, "--pipelines", t.TempDir()}, tt.args...)
			// Were serve to start after all, it stops here and the exit
			// code tells.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			code := dispatch(ctx, args, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
				getenv: func(k string) string { return tt.env[k] }})
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.wantErr)
			}
			if _, err := os.Stat(state); !os.IsNotExist(err) {
				t.Errorf("state directory made before refusing: %v", err)
			}
			for _, tok := range []string{"tok-1", "tok-2", "tok-legacy"} {
				if strings.Contains(errOut.String(), tok) {
					t.Errorf("token %q is in the message: %q", tok, errOut.String())
				}
			}
		})
	}
}

func TestCheckExposure(t *testing.T) {
	tests := []struct {
		ip                   string
		tokens, insecure, ok bool
	}{
		{"127.0.0.1", false, false, true},
		{"127.255.0.9", false, false, true},
		{"::1", false, false, true},
		{"0.0.0.0", false, false, false},
		{"::", false, false, false},
		{"192.0.2.10", false, false, false},
		{"2001:db8::1", false, false, false},
		{"0.0.0.0", true, false, true},
		{"192.0.2.10", true, false, true},
		{"0.0.0.0", false, true, true},
		{"::", false, true, true},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s tokens=%v insecure=%v", tt.ip, tt.tokens, tt.insecure)
		t.Run(name, func(t *testing.T) {
			err := checkExposure(&net.TCPAddr{IP: net.ParseIP(tt.ip), Port: 8080}, tt.tokens, tt.insecure)
			if (err == nil) != tt.ok {
				t.Errorf("checkExposure = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestServeTokens runs serve with team tokens from $STEPLINE_TOKENS, one
// of them a ${NAME} reference to the environment: a manual run needs a
// token, records its team, and is visible to that team and the admin only.
func TestServeTokens(t *testing.T) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"confidence": 0.9, "summary": "told", "next_step_context": ""}`)
	}))
	defer hook.Close()
	dir := t.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	if err := os.MkdirAll(pipelines, 0o755); err != nil {
		t.Fatal(err)
	}
	pipeline := fmt.Sprintf("name: orders\nstage: production\nsteps:\n  - {name: tell, executor: webhook, executor_config: {url: %q}}\n", hook.URL+"/tell")
	if err := os.WriteFile(filepath.Join(pipelines, "orders.yaml"), []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"STEPLINE_TOKENS": "checkout=${CHECKOUT_TOKEN}, payments=tok-payments-2, admin=tok-admin-3",
		"CHECKOUT_TOKEN":  "tok-checkout-1",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--dir", filepath.Join(dir, "state"), "--pipelines", pipelines},
			env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(k string) string { return vars[k] }})
	}()
	base := ""
	for deadline := time.Now().Add(20 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`serving on (http://\S+)`).FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("serve did not start:\n%s\n%s", out.String(), errOut.String())
	}
	client := &http.Client{Timeout: 10 * time.Second}
	call := func(method, path, token string) (int, http.Header, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, resp.Header, v
	}

	for _, tok := range []string{"", "${CHECKOUT_TOKEN}", "tok-checkout-2"} {
		code, h, _ := call("POST", "/pipelines/orders/runs", tok)
		if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") == "" {
			t.Errorf("manual run with token %q: %d, WWW-Authenticate %q", tok, code, h.Get("WWW-Authenticate"))
		}
	}
	if code, _, _ := call("GET", "/health", ""); code != http.StatusOK {
		t.Errorf("health without a token: %d", code)
	}
	code, _, v := call("POST", "/pipelines/orders/runs", "tok-checkout-1")
	id, _ := v["run_id"].(string)
	if code != http.StatusAccepted || id == "" {
		t.Fatalf("manual run with checkout's token: %d %v", code, v)
	}
	for _, c := range []struct {
		token string
		want  int
	}{{"tok-checkout-1", 200}, {"tok-admin-3", 200}, {"tok-payments-2", 404}, {"", 401}} {
		code, _, v := call("GET", "/runs/"+id, c.token)
		if code != c.want {
			t.Errorf("GET /runs/%s with %q: %d, want %d", id, c.token, code, c.want)
		}
		if run, _ := v["run"].(map[string]any); code == 200 && run["team"] != "checkout" {
			t.Errorf("the run's team is %v, want checkout", run["team"])
		}
	}

	cancel()
	select {
	case c := <-done:
		if c != 0 {
			t.Errorf("serve exited %d: %s", c, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
	if strings.Contains(out.String()+errOut.String(), "tok-checkout-1") {
		t.Error("a token is in serve's output")
	}
}
