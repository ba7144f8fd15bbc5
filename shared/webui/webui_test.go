package webui_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// reviewPipeline: a model step, a human approval, a notification. The
// model's reply carries markup, as an untrusted reply may.
const reviewPipeline = `name: incident-review
description: Triage an alert, ask the on-call engineer, then tell the channel.
stage: production
context_template:
  include: [summary]
steps:
  - name: triage
    executor: scripted
    prompt_template: "Alert: {{ summary }}"
    confidence_threshold: 0.5
  - name: approve
    executor: human
    prompt_template: "Restart checkout-api? {{ steps.triage.summary }}"
    timeout_seconds: 900
  - name: notify
    executor: scripted
    prompt_template: "Tell #ops: {{ steps.triage.summary }}"
`

const hostileSummary = `checkout-api is saturated <script>alert("owned")</script>`

var reviewReplies = func() string {
	triage := `{"confidence": 0.86, "summary": "` + strings.ReplaceAll(hostileSummary, `"`, `\"`) + `", "next_step_context": "restart"}`
	notify := `{"confidence": 0.95, "summary": "Posted to #ops", "next_step_context": ""}`
	var b strings.Builder
	b.WriteString("triage:\n")
	for range 20 {
		b.WriteString("  - '" + triage + "'\n")
	}
	b.WriteString("notify:\n")
	for range 20 {
		b.WriteString("  - '" + notify + "'\n")
	}
	return b.String()
}()

// Tokens of the tests.
const (
	tokOps   = "tok-ops-3b9e1f"
	tokOther = "tok-other-77a0c2"
	tokAdmin = "tok-admin-0c4d5e"
)

var testTokens = inbound.Tokens{"ops": tokOps, "other": tokOther, inbound.AdminTeam: tokAdmin}

// slowHandler delays every step, so that a browser sees a run under way.
type slowHandler struct {
	next  local.StepHandler
	delay time.Duration
}

func (s slowHandler) Handle(ctx context.Context, req task.Request) (task.Response, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return task.Response{}, ctx.Err()
	}
	return s.next.Handle(ctx, req)
}

type testServer struct {
	base   string
	srv    *local.Server
	runner *local.Runner
}

// serve runs stepline serve's Server (with the UI under /ui/) over
// loopback with the review pipeline, tokens (nil: none) and a delay
// before every step.
func serve(t *testing.T, tokens inbound.Tokens, delay time.Duration) *testServer {
	t.Helper()
	return serveIn(t, tokens, delay, nil)
}

// serveIn is serve with the pipelines compiled in proj (nil: none).
func serveIn(t *testing.T, tokens inbound.Tokens, delay time.Duration, proj *project.Project) *testServer {
	t.Helper()
	dir := t.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	if err := os.MkdirAll(pipelines, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pipelines, "incident-review.yaml"), []byte(reviewPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	responses, err := executor.ParseResponses("responses.yaml", []byte(reviewReplies))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := local.Open(ctx, local.Config{
		Dir: filepath.Join(dir, "state"), Project: proj,
		Handler: func(st *sqlite.Store) local.StepHandler {
			h := &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses})}
			if delay > 0 {
				return slowHandler{next: h, delay: delay}
			}
			return h
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := local.NewServer(ctx, local.ServerConfig{
		Runner: r, PipelinesDir: pipelines, Tokens: tokens, MaxRuns: 50,
		Signer: &approval.Signer{Key: []byte("0123456789abcdef0123456789abcdef")},
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
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			_ = hs.Close()
			cancel()
			srv.Wait()
			r.Close()
		})
	})
	return &testServer{base: "http://" + ln.Addr().String(), srv: srv, runner: r}
}

// startRun starts a run of the review pipeline through the API.
func (ts *testServer) startRun(t *testing.T, token, event string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.base+"/pipelines/incident-review/run", strings.NewReader(event))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		RunID string `json:"run_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &out) != nil || out.RunID == "" {
		t.Fatalf("start run: %d %s", resp.StatusCode, b)
	}
	return out.RunID
}

// waitStatus waits until the run has status want.
func (ts *testServer) waitStatus(t *testing.T, id string, want store.RunStatus) store.Run {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		run, err := ts.runner.Store.GetRun(context.Background(), id)
		if err == nil && run.Status == want {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %q (%v), want %q", id, run.Status, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// browser is a client with a cookie jar that does not follow redirects.
type browser struct {
	t    *testing.T
	c    *http.Client
	base string
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	status   int
	location string
	body     string
	header   http.Header
}

func (b *browser) do(method, path string, form url.Values, header ...string) answer {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(raw), header: resp.Header}
}

func (b *browser) get(path string) answer { b.t.Helper(); return b.do("GET", path, nil) }

func (b *browser) login(token string) {
	b.t.Helper()
	a := b.do("POST", "/ui/login", url.Values{"token": {token}, "next": {"/ui/runs"}})
	if a.status != http.StatusSeeOther || a.location != "/ui/runs" {
		b.t.Fatalf("login: %d %q %s", a.status, a.location, a.body)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the form token of a page.
func csrf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

func TestLoginSessionCookie(t *testing.T) {
	ts := serve(t, testTokens, 0)
	b := newBrowser(t, ts.base)
	a := b.get("/ui/runs?status=waiting")
	if a.status != http.StatusSeeOther || a.location != "/ui/login?next=%2Fui%2Fruns%3Fstatus%3Dwaiting" {
		t.Fatalf("unauthenticated: %d %q, want a redirect to the login form", a.status, a.location)
	}
	if a := b.get("/ui/runs/x/events"); a.status != http.StatusUnauthorized {
		t.Errorf("unauthenticated live view: %d, want 401", a.status)
	}
	if a := b.do("POST", "/ui/login", url.Values{"token": {"tok-wrong"}}); a.status != http.StatusUnauthorized || !strings.Contains(a.body, "not valid") {
		t.Errorf("wrong token: %d", a.status)
	}
	a = b.do("POST", "/ui/login", url.Values{"token": {tokOps}, "next": {"https://evil.example/"}})
	if a.status != http.StatusSeeOther || a.location != "/ui/runs" {
		t.Fatalf("login: %d %q (an outside next must not be followed)", a.status, a.location)
	}
	cookie := a.header.Get("Set-Cookie")
	for _, want := range []string{"stepline_session=", "HttpOnly", "SameSite=Strict", "Path=/ui/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, tokOps) {
		t.Errorf("the cookie carries the token: %q", cookie)
	}
	if a := b.get("/ui/runs"); a.status != http.StatusOK || !strings.Contains(a.body, "team <b>ops</b>") {
		t.Errorf("after login: %d", a.status)
	}
	// A forged session (another team written in) is refused.
	u, _ := url.Parse(ts.base + "/ui/")
	for _, c := range b.c.Jar.Cookies(u) {
		parts := strings.SplitN(c.Value, ".", 2)
		forged := "YWRtaW4." + parts[1] // base64url("admin")
		b2 := newBrowser(t, ts.base)
		b2.c.Jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: forged}})
		if a := b2.get("/ui/runs"); a.status != http.StatusSeeOther {
			t.Errorf("forged session: %d, want a redirect to the login", a.status)
		}
	}
	// Sign out drops the session.
	b.get("/ui/runs")
	if a := b.do("POST", "/ui/logout", url.Values{}); a.status != http.StatusSeeOther {
		t.Errorf("logout: %d", a.status)
	}
	if a := b.get("/ui/runs"); a.status != http.StatusSeeOther {
		t.Errorf("after logout: %d, want the login", a.status)
	}
}

// TestTeamsSeeTheirOwn: a team sees its runs only; the admin every one.
func TestTeamsSeeTheirOwn(t *testing.T) {
	ts := serve(t, testTokens, 0)
	mine := ts.startRun(t, tokOps, `{"summary": "disk full"}`)
	theirs := ts.startRun(t, tokOther, `{"summary": "cpu"}`)
	ts.waitStatus(t, mine, store.RunWaiting)
	ts.waitStatus(t, theirs, store.RunWaiting)
	b := newBrowser(t, ts.base)
	b.login(tokOps)
	list := b.get("/ui/runs").body
	if !strings.Contains(list, mine) || strings.Contains(list, theirs) {
		t.Errorf("ops's list: want %s and not %s", mine, theirs)
	}
	if a := b.get("/ui/runs/" + theirs); a.status != http.StatusNotFound {
		t.Errorf("another team's run: %d, want 404", a.status)
	}
	if a := b.get("/ui/approvals"); strings.Contains(a.body, theirs) || !strings.Contains(a.body, mine) {
		t.Errorf("ops's approvals show another team's, or not its own")
	}
	adm := newBrowser(t, ts.base)
	adm.login(tokAdmin)
	if list := adm.get("/ui/runs").body; !strings.Contains(list, mine) || !strings.Contains(list, theirs) {
		t.Errorf("the admin does not see every run")
	}
	if list := adm.get("/ui/runs?team=other").body; strings.Contains(list, mine) || !strings.Contains(list, theirs) {
		t.Errorf("the admin's team filter")
	}
}

// TestRunsListFilters: the runs list filters as a plain GET form.
func TestRunsListFilters(t *testing.T) {
	ts := serve(t, nil, 0)
	id := ts.startRun(t, "", `{"summary": "a"}`)
	ts.waitStatus(t, id, store.RunWaiting)
	ctx := context.Background()
	old := store.Run{ID: "run-old", Pipeline: "incident-review", Status: store.RunCompleted, Stage: "testing",
		StartedAt: time.Now().Add(-72 * time.Hour)}
	if err := ts.runner.Store.CreateRun(ctx, old); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, ts.base)
	for _, tt := range []struct {
		name, query string
		want, not   []string
	}{
		{"all", "", []string{id, "run-old"}, nil},
		{"status", "?status=waiting", []string{id}, []string{"run-old"}},
		{"stage", "?stage=testing", []string{"run-old"}, []string{id}},
		{"since", "?since=24h", []string{id}, []string{"run-old"}},
		{"pipeline", "?pipeline=nope", nil, []string{id, "run-old"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := b.get("/ui/runs" + tt.query)
			if a.status != http.StatusOK {
				t.Fatalf("%d %s", a.status, a.body)
			}
			for _, w := range tt.want {
				if !strings.Contains(a.body, w) {
					t.Errorf("missing %s", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(a.body, n) {
					t.Errorf("shows %s", n)
				}
			}
		})
	}
	if a := b.get("/ui/runs?status=bogus"); a.status != http.StatusBadRequest || !strings.Contains(a.body, `unknown run status &#34;bogus&#34;`) {
		t.Errorf("bad status: %d", a.status)
	}
	if a := b.get("/ui/runs?partial=rows"); a.status != http.StatusOK || strings.Contains(a.body, "<html") || !strings.Contains(a.body, id) {
		t.Errorf("rows part: %d %q", a.status, a.body)
	}
}

// TestApprovalFormWithoutJavaScript decides a pending approval with the
// plain form, as a browser without scripts does: the run goes on, and
// the decision is single-use.
func TestApprovalFormWithoutJavaScript(t *testing.T) {
	ts := serve(t, testTokens, 0)
	id := ts.startRun(t, tokOps, `{"summary": "checkout slow"}`)
	ts.waitStatus(t, id, store.RunWaiting)
	b := newBrowser(t, ts.base)
	b.login(tokOps)
	page := b.get("/ui/approvals").body
	if !strings.Contains(page, "Restart checkout-api?") || !strings.Contains(page, `value="approve"`) {
		t.Fatalf("approvals page lacks the request or its button:\n%s", page)
	}
	m := regexp.MustCompile(`action="/ui/approvals/([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no decision form")
	}
	action := "/ui/approvals/" + m[1]
	form := url.Values{"decision": {"approve"}, "by": {"Dana"}, "back": {"/ui/approvals"}}
	// Without the form's token, or from another site, nothing is decided.
	if a := b.do("POST", action, form); a.status != http.StatusForbidden {
		t.Errorf("no CSRF token: %d, want 403", a.status)
	}
	form.Set("csrf", csrf(t, page))
	if a := b.do("POST", action, form, "Sec-Fetch-Site", "cross-site"); a.status != http.StatusForbidden {
		t.Errorf("cross-site POST: %d, want 403", a.status)
	}
	// Another team's session cannot decide it.
	other := newBrowser(t, ts.base)
	other.login(tokOther)
	oform := url.Values{"decision": {"approve"}, "csrf": {csrf(t, other.get("/ui/approvals").body)}}
	if a := other.do("POST", action, oform); a.status != http.StatusNotFound {
		t.Errorf("another team's decision: %d, want 404", a.status)
	}
	a := b.do("POST", action, form)
	if a.status != http.StatusSeeOther || a.location != "/ui/approvals" {
		t.Fatalf("decide: %d %q %s", a.status, a.location, a.body)
	}
	run := ts.waitStatus(t, id, store.RunCompleted)
	approvals, _ := ts.runner.Store.RunApprovals(context.Background(), id)
	if len(approvals) != 1 || approvals[0].Decision != store.DecisionApproved || approvals[0].DecidedBy != "Dana (ops)" {
		t.Errorf("approval %+v", approvals)
	}
	// The same form again: decided once.
	if a := b.do("POST", action, form); a.status != http.StatusConflict {
		t.Errorf("second decision: %d, want 409", a.status)
	}
	detail := b.get("/ui/runs/" + id).body
	if !strings.Contains(detail, "approved</b> by Dana (ops)") || run.Status != store.RunCompleted {
		t.Errorf("run page does not show the decision")
	}
}

// TestRunPageEscapesUntrustedText: the model's reply and the event are
// shown as text, never as markup.
func TestRunPageEscapesUntrustedText(t *testing.T) {
	ts := serve(t, nil, 0)
	id := ts.startRun(t, "", `{"summary": "<img src=x onerror=alert(1)>"}`)
	ts.waitStatus(t, id, store.RunWaiting)
	b := newBrowser(t, ts.base)
	page := b.get("/ui/runs/" + id).body
	for _, raw := range []string{`<script>alert(`, `<img src=x`} {
		if strings.Contains(page, raw) {
			t.Errorf("the page holds %q unescaped", raw)
		}
	}
	for _, esc := range []string{`&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;`, `&lt;img src=x onerror=alert(1)&gt;`} {
		if !strings.Contains(page, esc) {
			t.Errorf("the page lacks the escaped %q", esc)
		}
	}
	for _, want := range []string{"Prompt", "Reply", "0.86", `class="node k-task s-completed" data-state="triage"`, `data-state="approve"`} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if csp := b.get("/ui/runs/" + id).header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

func TestFeedbackForms(t *testing.T) {
	ts := serve(t, nil, 0)
	id := ts.startRun(t, "", `{"summary": "a"}`)
	ts.waitStatus(t, id, store.RunWaiting)
	b := newBrowser(t, ts.base)
	page := b.get("/ui/runs/" + id).body
	tok := csrf(t, page)
	a := b.do("POST", "/ui/runs/"+id+"/feedback", url.Values{"csrf": {tok}, "step": {"triage"}, "outcome": {"partial"}, "notes": {"right service, wrong cause"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("step feedback: %d %s", a.status, a.body)
	}
	f, err := ts.runner.Store.GetStepFeedback(context.Background(), id, "triage")
	if err != nil || f == nil || f.Outcome != store.OutcomePartial || f.Notes != "right service, wrong cause" {
		t.Errorf("stored %+v %v", f, err)
	}
	if a := b.do("POST", "/ui/runs/"+id+"/feedback", url.Values{"csrf": {tok}, "outcome": {"correct"}}); a.status != http.StatusSeeOther {
		t.Errorf("run feedback: %d", a.status)
	}
	if f, _ := ts.runner.Store.GetRunFeedback(context.Background(), id); f == nil || f.Outcome != store.OutcomeCorrect {
		t.Errorf("run feedback %+v", f)
	}
	for _, tt := range []struct {
		name string
		form url.Values
		want int
	}{
		{"bad outcome", url.Values{"csrf": {tok}, "outcome": {"great"}}, http.StatusBadRequest},
		{"unknown step", url.Values{"csrf": {tok}, "outcome": {"correct"}, "step": {"nope"}}, http.StatusNotFound},
		{"notes too long", url.Values{"csrf": {tok}, "outcome": {"correct"}, "notes": {strings.Repeat("x", store.MaxNotesBytes+1)}}, http.StatusBadRequest},
		{"no token", url.Values{"outcome": {"correct"}}, http.StatusForbidden},
	} {
		if a := b.do("POST", "/ui/runs/"+id+"/feedback", tt.form); a.status != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, a.status, tt.want)
		}
	}
}

func TestRunNowAndPipelinePages(t *testing.T) {
	ts := serve(t, testTokens, 0)
	b := newBrowser(t, ts.base)
	b.login(tokOps)
	list := b.get("/ui/pipelines").body
	if !strings.Contains(list, "incident-review") || !strings.Contains(list, "Triage an alert") {
		t.Errorf("pipelines page")
	}
	page := b.get("/ui/pipelines/incident-review").body
	for _, want := range []string{"warning: step &#34;triage&#34;: a scripted executor in a production pipeline", "executor: human", `<svg class="graph"`, "Start a run"} {
		if !strings.Contains(page, want) {
			t.Errorf("pipeline page lacks %q", want)
		}
	}
	tok := csrf(t, page)
	if a := b.do("POST", "/ui/pipelines/incident-review/run", url.Values{"csrf": {tok}, "event": {"{nope"}}); a.status != http.StatusBadRequest {
		t.Errorf("bad JSON: %d", a.status)
	}
	a := b.do("POST", "/ui/pipelines/incident-review/run", url.Values{"csrf": {tok}, "event": {`{"summary": "from the UI"}`}})
	if a.status != http.StatusSeeOther || !strings.HasPrefix(a.location, "/ui/runs/") {
		t.Fatalf("run now: %d %q %s", a.status, a.location, a.body)
	}
	id := strings.TrimPrefix(a.location, "/ui/runs/")
	run := ts.waitStatus(t, id, store.RunWaiting)
	if run.Team != "ops" {
		t.Errorf("a run started from the UI is recorded with team %q, want ops", run.Team)
	}
	// The file as it is now is checked: a problem written after the load
	// shows, and the pipeline in force stays.
	file := regexp.MustCompile(`<dt>File</dt><dd><code>([^<]+)</code>`).FindStringSubmatch(page)
	if file == nil {
		t.Fatal("the page does not name the pipeline's file")
	}
	broken := strings.Replace(reviewPipeline, "executor: human", "executor: humane", 1)
	if err := os.WriteFile(file[1], []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if page := b.get("/ui/pipelines/incident-review").body; !strings.Contains(page, "humane") || !strings.Contains(page, `<svg class="graph"`) {
		t.Errorf("the pipeline page does not show the file's new problem:\n%s", page)
	}
	if a := b.get("/ui/pipelines/nope"); a.status != http.StatusNotFound {
		t.Errorf("unknown pipeline: %d", a.status)
	}
	if a := b.get("/ui/agents"); a.status != http.StatusOK || !strings.Contains(a.body, "No agent profiles") {
		t.Errorf("agents page: %d", a.status)
	}
}

// TestLiveView follows a run through server-sent events to its end.
func TestLiveView(t *testing.T) {
	ts := serve(t, nil, 300*time.Millisecond)
	id := ts.startRun(t, "", `{"summary": "a"}`)
	b := newBrowser(t, ts.base)
	b.c.Timeout = 20 * time.Second
	go func() {
		ts.waitStatus(t, id, store.RunWaiting)
		approvals, _ := ts.runner.Store.RunApprovals(context.Background(), id)
		page := b.get("/ui/runs/" + id).body
		b.do("POST", "/ui/approvals/"+approvals[0].ID, url.Values{"csrf": {csrf(t, page)}, "decision": {"approve"}})
	}()
	a := b.get("/ui/runs/" + id + "/events")
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %q", a.status, a.header.Get("Content-Type"))
	}
	updates := strings.Count(a.body, "event: update\n")
	if updates < 3 {
		t.Errorf("%d updates, want one per change (running, waiting, approved, completed)", updates)
	}
	if !strings.HasSuffix(a.body, "event: end\ndata: completed\n\n") {
		t.Errorf("the stream does not end with the run's status: …%s", a.body[max(0, len(a.body)-200):])
	}
	if !strings.Contains(a.body, "data: ") || strings.Contains(a.body, "<script>alert") {
		t.Errorf("update data")
	}
}

// TestPageWeight measures what a browser downloads for a run's page: its
// HTML (the graph inline), the stylesheet and the script, and holds them
// to a budget. The figures are the README's.
func TestPageWeight(t *testing.T) {
	ts := serve(t, nil, 0)
	id := ts.startRun(t, "", `{"summary": "checkout-api p99 above 2s"}`)
	ts.waitStatus(t, id, store.RunWaiting)
	b := newBrowser(t, ts.base)
	sizes := map[string]int{}
	for name, path := range map[string]string{"html": "/ui/runs/" + id, "css": "/ui/static/app.css", "js": "/ui/static/app.js", "runs": "/ui/runs"} {
		a := b.get(path)
		if a.status != http.StatusOK {
			t.Fatalf("%s: %d", path, a.status)
		}
		sizes[name] = len(a.body)
	}
	assets := sizes["css"] + sizes["js"]
	total := sizes["html"] + assets
	t.Logf("run page: HTML %d B, CSS %d B, JS %d B: %d B in all (runs list HTML %d B); no fonts, images or other requests",
		sizes["html"], sizes["css"], sizes["js"], total, sizes["runs"])
	if assets > 12<<10 {
		t.Errorf("the stylesheet and script are %d bytes, budget 12 KiB", assets)
	}
	if total > 64<<10 {
		t.Errorf("the run page weighs %d bytes, budget 64 KiB", total)
	}
}

// TestStepRecordShown: what an agent step's record holds — confidences,
// trust report, tool trace, artifacts, tokens and cost — is on the run's
// page, tool output escaped.
func TestStepRecordShown(t *testing.T) {
	ts := serve(t, nil, 0)
	ctx := context.Background()
	start := time.Now().Add(-time.Minute)
	end := start.Add(9 * time.Second)
	cost, s, v, e, g := 0.0123, 0.91, 0.62, 0.74, 0.8
	if err := ts.runner.Store.CreateRun(ctx, store.Run{ID: "run-agent", Pipeline: "incident-review", Status: store.RunEscalated,
		Reason: `step "triage" escalated`, StartedAt: start, CompletedAt: &end,
		Usage: store.Usage{InputTokens: 12345, OutputTokens: 678, CostUSD: &cost}}); err != nil {
		t.Fatal(err)
	}
	trace := `[{"type": "tool_call", "iteration": 1, "id": "c1", "name": "grafana.query", "arguments": {"expr": "up{job=\"checkout\"}"}},
	  {"type": "tool_result", "iteration": 1, "id": "c1", "name": "grafana.query", "content": "<iframe src=//evil>", "is_error": false},
	  {"type": "tool_denied", "iteration": 2, "name": "jira.delete", "reason": "read only"}]`
	rec := store.StepRecord{RunID: "run-agent", Name: "triage", Attempt: 1, Executor: "bedrock", Status: store.StepEscalated,
		PrimaryConfidence: &s, VerifierConfidence: &v, EffectiveConfidence: &e, Model: "anthropic.claude", Provider: "bedrock",
		InputTokens: 12345, OutputTokens: 678, CostUSD: &cost, Agent: "sre-investigator", AgentVersion: "a1b2c3d4e5f6", Iterations: 2,
		Output: json.RawMessage(`{"confidence": 0.91, "summary": "s", "next_step_context": "", "artifacts": {"report.md": "# Findings <b>bold</b>"}}`),
		Trace:  json.RawMessage(trace),
		Trust: &store.TrustReport{Version: 2, Mode: store.TrustEnforced, CombinedTrust: 0.74,
			Signals: store.TrustSignals{S: s, SAfterV: e, V: &v, G: &g},
			Gate:    store.TrustGate{Policy: store.PolicyTrustVector, ConfidenceThreshold: 0.8, OnLowConfidence: "escalate", Decision: "escalated"}},
		StartedAt: start, FinishedAt: end, DurationMS: 9000}
	if err := ts.runner.Store.PutStep(ctx, rec); err != nil {
		t.Fatal(err)
	}
	page := newBrowser(t, ts.base).get("/ui/runs/run-agent").body
	for _, want := range []string{
		"0.74", "0.91", "0.62", // effective, primary, verifier
		"12,345", "$0.0123", "sre-investigator", "a1b2c3d4e5f6",
		"Trust report", "&#34;combined_trust&#34;: 0.74", "&#34;policy&#34;: &#34;trust_vector&#34;",
		"Tool trace", "grafana.query", `up{job=\&#34;checkout\&#34;}`, "&lt;iframe src=//evil&gt;", "read only",
		"Artifact report.md", "# Findings &lt;b&gt;bold&lt;/b&gt;",
		`class="node k-task s-escalated" data-state="triage"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if strings.Contains(page, "<iframe") || strings.Contains(page, "<b>bold") {
		t.Error("tool output or an artifact is markup on the page")
	}
}

// TestAgentsPage lists the repository's agent profiles with their
// versions, models and tools.
func TestAgentsPage(t *testing.T) {
	proj, err := project.Load("../../stepline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ts := serveIn(t, nil, 0, proj)
	page := newBrowser(t, ts.base).get("/ui/agents").body
	for _, name := range proj.AgentNames() {
		l := proj.Profiles[name]
		for _, want := range []string{"<b>" + name + "</b>", "<code>" + l.Profile.Version + "</code>", l.Profile.Model} {
			if !strings.Contains(page, want) {
				t.Errorf("agents page lacks %q", want)
			}
		}
		for _, g := range l.Profile.Tools {
			if !strings.Contains(page, "<b>"+g.Server+"</b>") {
				t.Errorf("agents page lacks %s's grant on %s", name, g.Server)
			}
		}
	}
	if len(proj.AgentNames()) == 0 {
		t.Fatal("the repository has no agents to show")
	}
}
