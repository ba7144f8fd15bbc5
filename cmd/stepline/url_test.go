package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestAttackEventInURL: a value an event brings into a webhook's URL is
// one path segment or one query value, percent-encoded: it cannot walk
// the path to another endpoint, add a query parameter or cut off the
// query (and the secret) the pipeline wrote. A whole base URL the
// pipeline renders before the path is pasted as written; a value that is
// a dot segment is refused before anything is sent.
func TestAttackEventInURL(t *testing.T) {
	const token = "tok-url-7170"
	var mu sync.Mutex
	var got []string // escaped path ? raw query
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r.URL.EscapedPath()+"?"+r.URL.RawQuery)
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, url, summary string
		want               string // the request's path and query; "" when none is sent
		reason             string
	}{
		{name: "a plain value", url: srv.URL + "/tickets/{{ summary }}?k=${AUTOMATION_TOKEN}", summary: "T-42.v2_x~",
			want: "/tickets/T-42.v2_x~?k=" + token},
		{name: "a value that walks the path and cuts the query", url: srv.URL + "/tickets/{{ summary }}?k=${AUTOMATION_TOKEN}", summary: "../../admin/delete?all=1#",
			want: "/tickets/..%2F..%2Fadmin%2Fdelete%3Fall%3D1%23?k=" + token},
		{name: "a value in the query", url: srv.URL + "/search?q={{ summary }}&k=${AUTOMATION_TOKEN}", summary: "x&k=forged ${AUTOMATION_TOKEN}",
			want: "/search?q=x%26k%3Dforged%20%24%7BAUTOMATION_TOKEN%7D&k=" + token},
		{name: "a base URL before the path", url: "{{ base }}/tickets/{{ summary }}", summary: "a b",
			want: "/tickets/a%20b?"},
		{name: "a dot segment", url: srv.URL + "/tickets/{{ summary }}/close", summary: "..",
			reason: `executor_config.url: a rendered value makes the path segment ".."`},
		{name: "one dot", url: srv.URL + "/tickets/{{ summary }}", summary: ".",
			reason: `executor_config.url: a rendered value makes the path segment "."`},
		{name: "three dots are a name", url: srv.URL + "/tickets/{{ summary }}", summary: "...",
			want: "/tickets/...?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			before := len(got)
			mu.Unlock()
			p := writeFile(t, "p.yaml", `name: p
stage: production
vars: {base: "`+srv.URL+`"}
context_template:
  include: [summary]
steps:
  - name: call
    executor: webhook
    executor_config:
      url: "`+tc.url+`"
      payload: {a: b}
`)
			ev, _ := json.Marshal(map[string]any{"trigger": map[string]any{"summary": tc.summary}})
			e := writeFile(t, "event.json", string(ev))
			code, out, errOut := runEnv(t, map[string]string{"AUTOMATION_TOKEN": token}, "run", "--json", "--dir", t.TempDir(), "--event", e, p)
			var rep runReport
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			mu.Lock()
			sent := append([]string(nil), got[before:]...)
			mu.Unlock()
			if tc.want == "" {
				if len(sent) != 0 || rep.Status != "failed" || !strings.Contains(rep.Reason, tc.reason) {
					t.Errorf("sent %q, status %s, reason %q; want nothing sent and %q", sent, rep.Status, rep.Reason, tc.reason)
				}
				return
			}
			if len(sent) != 1 || sent[0] != tc.want || rep.Status != "completed" {
				t.Errorf("sent %q (status %s: %s), want %q", sent, rep.Status, rep.Reason, tc.want)
			}
		})
	}
}
