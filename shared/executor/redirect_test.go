package executor

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/llmoutput"
)

// TestWebhookRedirects: within the origin up to MaxRedirects redirects are
// followed; one more, or one to another origin, is an ExecutorRejected
// naming the target's origin only, and the other origin gets nothing.
func TestWebhookRedirects(t *testing.T) {
	hop := func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if n == 0 {
			answer(200, `{"confidence": 0.8, "summary": "arrived", "next_step_context": ""}`)(w, r)
			return
		}
		http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusTemporaryRedirect)
	}
	srv := newServer(t, hop)
	other := newServer(t, answer(200, `{"confidence": 0.8, "summary": "stolen", "next_step_context": ""}`))
	away := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/collect?k=v", http.StatusFound)
	})
	reg, _ := newRegistry(t, Deps{})
	call := func(u string) (string, error) {
		t.Helper()
		p := provider(t, reg, Call{Executor: Webhook, Step: "hook", Stage: StageProduction, Config: map[string]any{
			"url": u, "headers": map[string]any{"X-Api-Key": "${API_KEY}"}, "payload": map[string]any{"a": "b"},
		}})
		c, err := p.Complete(context.Background(), llmoutput.Request{})
		return c.Content, err
	}
	for _, n := range []int{0, 1, MaxRedirects} {
		content, err := call(srv.URL + "/hop/" + strconv.Itoa(n))
		if err != nil || !strings.Contains(content, "arrived") {
			t.Errorf("%d redirects: %q, %v", n, content, err)
		}
	}
	before := len(srv.seen())
	_, err := call(srv.URL + "/hop/" + strconv.Itoa(MaxRedirects+1))
	assertFault(t, err, "ExecutorRejected", "more than 10 redirects")
	if n := len(srv.seen()) - before; n != MaxRedirects+1 {
		t.Errorf("%d requests for %d redirects, want %d", n, MaxRedirects+1, MaxRedirects+1)
	}
	_, err = call(away.URL + "/hook")
	assertFault(t, err, "ExecutorRejected", "redirect to "+other.URL+" not followed: another origin than "+away.URL)
	if strings.Contains(err.Error(), "collect") || strings.Contains(err.Error(), "k=v") {
		t.Errorf("the message holds the target's path or query: %v", err)
	}
	if n := len(other.seen()); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
}
