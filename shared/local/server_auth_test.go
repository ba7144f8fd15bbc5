package local

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// Tokens of the server tests: two teams and the admin.
const (
	tokCheckout = "tok-checkout-7f3a"
	tokPayments = "tok-payments-91c2"
	tokAdmin    = "tok-admin-5d0e"
)

var testTokens = inbound.Tokens{"checkout": tokCheckout, "payments": tokPayments, inbound.AdminTeam: tokAdmin}

// ordersPipeline is started by webhooks ({"event": "order.created"}) and by
// name. Its one step has no scripted reply, so its runs fail at once
// without leaving the machine: the tests look at who may start and see
// runs, not at how they end.
const ordersPipeline = `name: orders
stage: production
trigger:
  match: {event: order.created}
steps:
  - {name: tell, executor: webhook, executor_config: {url: "http://127.0.0.1:9/tell"}}
`

// Runs seeded in every test server, one per owner.
var seededRuns = map[string]string{ // run ID → team
	"run-checkout": "checkout",
	"run-payments": "payments",
	"run-admin":    inbound.AdminTeam,
	"run-teamless": "",
}

// startServer serves a Server over loopback with tokens (nil: none) and
// limits, with the seeded runs in its store. It returns the base URL.
func startServer(t *testing.T, tokens inbound.Tokens, limits HTTPLimits) (string, *Server) {
	t.Helper()
	dir := t.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	if err := os.MkdirAll(pipelines, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pipelines, "orders.yaml"), []byte(ordersPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	responses, err := executor.ParseResponses("none.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Open(ctx, Config{
		Dir: filepath.Join(dir, "state"),
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses})}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, team := range seededRuns {
		err := r.Store.CreateRun(ctx, store.Run{ID: id, Pipeline: "orders", Status: store.RunCompleted, Team: team,
			StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
	}
	srv, err := NewServer(ctx, ServerConfig{
		Runner: r, PipelinesDir: pipelines, Tokens: tokens, MaxRuns: 1000,
		Signer: &approval.Signer{Key: []byte("0123456789abcdef0123456789abcdef")}, HTTP: limits,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		cancel()
		srv.Wait()
		r.Close()
	})
	return "http://" + ln.Addr().String(), srv
}

// httpAnswer is what a request got.
type httpAnswer struct {
	status int
	auth   string // WWW-Authenticate
	body   string
}

// testClient fails a request that takes longer than a few seconds.
var testClient = &http.Client{Timeout: 10 * time.Second}

func do(t *testing.T, method, url, token, contentType, body string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return httpAnswer{status: resp.StatusCode, auth: resp.Header.Get("WWW-Authenticate"), body: string(b)}
}

// TestServerAccess checks every route against every kind of caller, and
// that leaving the token out is never better than giving a wrong one.
func TestServerAccess(t *testing.T) {
	open, _ := startServer(t, nil, HTTPLimits{})
	guarded, _ := startServer(t, testTokens, HTTPLimits{})

	type caller struct {
		name  string
		base  *string
		token string
	}
	callers := []caller{
		{"no tokens configured", &open, ""},
		{"tokens, none given", &guarded, ""},
		{"tokens, wrong token", &guarded, "tok-checkout-7f3b"},
		{"tokens, team checkout", &guarded, tokCheckout},
		{"tokens, team payments", &guarded, tokPayments},
		{"tokens, admin", &guarded, tokAdmin},
	}
	const form = "application/x-www-form-urlencoded"
	routes := []struct {
		name, method, path, contentType, body string
		want                                  [6]int // by caller, in the order above
	}{
		{"health", "GET", "/health", "", "", [6]int{200, 200, 200, 200, 200, 200}},
		{"webhook", "POST", "/webhook?source=generic", "application/json", `{"event": "order.created"}`, [6]int{202, 401, 401, 202, 202, 202}},
		{"manual run", "POST", "/pipelines/orders/runs", "application/json", `{}`, [6]int{202, 401, 401, 202, 202, 202}},
		{"manual run without a body", "POST", "/pipelines/orders/runs", "", "", [6]int{202, 401, 401, 202, 202, 202}},
		{"manual run of an unknown pipeline", "POST", "/pipelines/ghost/runs", "application/json", `{}`, [6]int{404, 401, 401, 404, 404, 404}},
		{"manual run, the reference's path", "POST", "/pipelines/orders/run", "application/json", `{}`, [6]int{202, 401, 401, 202, 202, 202}},
		{"list pipelines", "GET", "/pipelines", "", "", [6]int{200, 401, 401, 200, 200, 200}},
		{"a pipeline", "GET", "/pipelines/orders", "", "", [6]int{200, 401, 401, 200, 200, 200}},
		{"schedules", "GET", "/schedules", "", "", [6]int{200, 401, 401, 200, 200, 200}},
		{"reload", "POST", "/reload", "", "", [6]int{200, 401, 401, 403, 403, 200}},
		{"rerun checkout's run", "POST", "/runs/run-checkout/rerun", "application/json", `{"from_step": "tell"}`, [6]int{202, 401, 401, 202, 404, 202}},
		{"list runs", "GET", "/runs", "", "", [6]int{200, 401, 401, 200, 200, 200}},
		{"checkout's run", "GET", "/runs/run-checkout", "", "", [6]int{200, 401, 401, 200, 404, 200}},
		{"payments' run", "GET", "/runs/run-payments", "", "", [6]int{200, 401, 401, 404, 200, 200}},
		{"the admin's run", "GET", "/runs/run-admin", "", "", [6]int{200, 401, 401, 404, 404, 200}},
		{"a run without a team", "GET", "/runs/run-teamless", "", "", [6]int{200, 401, 401, 404, 404, 200}},
		{"a run that does not exist", "GET", "/runs/run-ghost", "", "", [6]int{404, 401, 401, 404, 404, 404}},
		{"approval page, forged link", "GET", "/approvals/forged.link", "", "", [6]int{403, 403, 403, 403, 403, 403}},
		{"approval decision, forged link", "POST", "/approvals/forged.link", form, "decision=approve", [6]int{403, 403, 403, 403, 403, 403}},
		{"webhook by GET", "GET", "/webhook", "", "", [6]int{405, 401, 401, 405, 405, 405}},
		{"health by POST", "POST", "/health", "", "", [6]int{405, 401, 401, 405, 405, 405}},
		{"unknown path", "GET", "/admin", "", "", [6]int{404, 401, 401, 404, 404, 404}},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			got := make([]httpAnswer, len(callers))
			for i, c := range callers {
				got[i] = do(t, rt.method, *c.base+rt.path, c.token, rt.contentType, rt.body)
				if got[i].status != rt.want[i] {
					t.Errorf("%s: %s %s = %d, want %d: %s", c.name, rt.method, rt.path, got[i].status, rt.want[i], got[i].body)
				}
				if (got[i].status == http.StatusUnauthorized) != (got[i].auth == `Bearer realm="stepline"`) {
					t.Errorf("%s: status %d with WWW-Authenticate %q", c.name, got[i].status, got[i].auth)
				}
			}
			// Absence is never easier than a wrong answer: with tokens,
			// no token and a wrong one get the very same answer.
			none, wrong := got[1], got[2]
			if none != wrong {
				t.Errorf("no token answers %+v, a wrong token %+v", none, wrong)
			}
			if none.status < 400 && wrong.status >= 400 {
				t.Errorf("no token is let in (%d) where a wrong token is refused (%d)", none.status, wrong.status)
			}
		})
	}
}

// TestServerBearerForms checks how the Authorization header is read: only
// the Bearer scheme, with the exact token, names a team.
func TestServerBearerForms(t *testing.T) {
	base, _ := startServer(t, testTokens, HTTPLimits{})
	tests := []struct {
		name, header string
		want         int
	}{
		{"bearer", "Bearer " + tokCheckout, 200},
		{"scheme in lower case", "bearer " + tokCheckout, 200},
		{"basic scheme", "Basic " + tokCheckout, 401},
		{"token alone", tokCheckout, 401},
		{"token one character short", "Bearer " + tokCheckout[:len(tokCheckout)-1], 401},
		{"token one character long", "Bearer " + tokCheckout + "x", 401},
		{"team name as token", "Bearer checkout", 401},
		{"empty bearer", "Bearer ", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+"/runs", nil)
			req.Header.Set("Authorization", tt.header)
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("GET /runs with %q = %d, want %d", tt.header, resp.StatusCode, tt.want)
			}
		})
	}
}

// TestServerRunVisibility checks that runs started by a team carry its
// team and that each caller lists exactly the runs it may see.
func TestServerRunVisibility(t *testing.T) {
	base, srv := startServer(t, testTokens, HTTPLimits{})
	start := func(token, path, body string) string {
		t.Helper()
		a := do(t, "POST", base+path, token, "application/json", body)
		var v struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(a.body), &v); err != nil || a.status != http.StatusAccepted || v.RunID == "" {
			t.Fatalf("POST %s: %d %s", path, a.status, a.body)
		}
		return v.RunID
	}
	started := map[string]string{ // run ID → the team it must carry
		start(tokCheckout, "/pipelines/orders/runs", `{}`):                            "checkout",
		start(tokCheckout, "/webhook?source=generic", `{"event": "order.created"}`):   "checkout",
		start(tokPayments, "/pipelines/orders/runs", `{}`):                            "payments",
		start(tokAdmin, "/pipelines/orders/runs", `{}`):                               inbound.AdminTeam,
		start(tokAdmin, "/webhook?source=generic", `{"event": "order.created"}`):      inbound.AdminTeam,
		start(tokPayments, "/webhook?source=generic", `{"event": "order.created"}`):   "payments",
		start(tokCheckout, "/pipelines/orders/runs", `{"summary": "by hand, again"}`): "checkout",
	}
	if len(started) != 7 {
		t.Fatalf("%d distinct runs started, want 7", len(started))
	}
	all := map[string]string{}
	for id, team := range seededRuns {
		all[id] = team
	}
	for id, team := range started {
		run, err := srv.runner.Store.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Team != team {
			t.Errorf("run %s: team %q, want %q", id, run.Team, team)
		}
		all[id] = team
	}
	of := func(teams ...string) []string {
		var ids []string
		for id, team := range all {
			if slices.Contains(teams, team) {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	tests := []struct {
		name, token, query string
		want               []string
	}{
		{"checkout sees its own", tokCheckout, "", of("checkout")},
		{"payments sees its own", tokPayments, "", of("payments")},
		{"checkout asking for its own team", tokCheckout, "?team=checkout", of("checkout")},
		{"checkout asking for payments' runs", tokCheckout, "?team=payments", nil},
		{"checkout asking for the admin's runs", tokCheckout, "?team=admin", nil},
		{"admin sees every run", tokAdmin, "", of("checkout", "payments", inbound.AdminTeam, "")},
		{"admin picks a team", tokAdmin, "?team=payments", of("payments")},
		{"admin picks its own", tokAdmin, "?team=admin", of(inbound.AdminTeam)},
		{"filters still apply to a team", tokCheckout, "?status=completed", []string{"run-checkout"}},
		{"a team's limit counts its own runs", tokCheckout, "?limit=1", of("checkout")[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := do(t, "GET", base+"/runs"+tt.query, tt.token, "", "")
			var v struct {
				Runs []store.Run `json:"runs"`
			}
			if err := json.Unmarshal([]byte(a.body), &v); err != nil || a.status != http.StatusOK || v.Runs == nil {
				t.Fatalf("GET /runs%s: %d %s", tt.query, a.status, a.body)
			}
			var got []string
			for _, r := range v.Runs {
				got = append(got, r.ID)
			}
			if tt.query == "?limit=1" {
				// The newest of the team's runs: any one of them, but only one
				// and only the team's.
				if len(got) != 1 || all[got[0]] != "checkout" {
					t.Errorf("got %v, want one run of checkout", got)
				}
				return
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	// Every run answers its own team and the admin, and nobody else, as
	// if it did not exist.
	for id, team := range all {
		for _, c := range []struct{ team, token string }{{"checkout", tokCheckout}, {"payments", tokPayments}, {inbound.AdminTeam, tokAdmin}} {
			a := do(t, "GET", base+"/runs/"+id, c.token, "", "")
			want := http.StatusNotFound
			if c.team == team || c.team == inbound.AdminTeam {
				want = http.StatusOK
			}
			if a.status != want {
				t.Errorf("GET /runs/%s (team %q) as %s = %d, want %d", id, team, c.team, a.status, want)
			}
			if want == http.StatusNotFound && !strings.Contains(a.body, `"no run `+id+`"`) {
				t.Errorf("GET /runs/%s as %s answers %s, not what a missing run answers", id, c.team, a.body)
			}
		}
	}
}

func TestNewServerRefusesAmbiguousTokens(t *testing.T) {
	tests := []struct {
		name    string
		tokens  inbound.Tokens
		wantErr string
	}{
		{"a token without a team", inbound.Tokens{"": "tok-legacy-1", "checkout": tokCheckout}, "a token has no team"},
		{"admin spelled otherwise", inbound.Tokens{"Admin": tokAdmin}, `team "Admin" looks like the admin team`},
		{"two teams, one token", inbound.Tokens{"checkout": tokCheckout, "admin": tokCheckout}, `teams "admin" and "checkout" share a token`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Open(context.Background(), Config{Dir: t.TempDir(), Handler: func(*sqlite.Store) StepHandler { return nil }})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, err = NewServer(context.Background(), ServerConfig{Runner: r, PipelinesDir: t.TempDir(), Tokens: tt.tokens})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}
