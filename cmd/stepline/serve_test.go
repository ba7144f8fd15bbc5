package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--dir", filepath.Join(dir, "state"), "--pipelines", pipelines},
			env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }})
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
