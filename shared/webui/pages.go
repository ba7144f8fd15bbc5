package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/store"
)

// pageNames are the templates of templates/, each executed with the
// layout.
var pageNames = []string{"runs", "run", "approvals", "pipelines", "pipeline", "agents", "login", "error"}

type pageTemplate = *template.Template

// sub is what a shared block (an approval, a feedback form) gets: the
// page, the thing it is about, and the outcomes a mark may take.
type sub struct {
	P        page
	Step     any
	Outcomes []store.Outcome
}

// page is what every template gets.
type page struct {
	Title  string
	Nav    string
	V      viewer
	Prefix string
	Error  string
	Data   any
}

func parseTemplates(prefix string) (map[string]pageTemplate, error) {
	funcs := template.FuncMap{
		"conf":   confText,
		"when":   whenText,
		"whenp":  func(t *time.Time) string { return whenPtr(t) },
		"ms":     msText,
		"cost":   costText,
		"tokens": func(n int64) string { return groupDigits(n) },
		"dict3":  func(p page, step any, o []store.Outcome) sub { return sub{P: p, Step: step, Outcomes: o} },
		"path":   url.PathEscape,
		"query":  url.QueryEscape,
		"prefix": func() string { return prefix },
		"join":   strings.Join,
		"runDur": runDuration,
	}
	out := map[string]pageTemplate{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web UI: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

func confText(c *float64) string {
	if c == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *c)
}

func whenText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func whenPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return whenText(*t)
}

func msText(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func costText(c *float64) string {
	if c == nil {
		return "–"
	}
	return fmt.Sprintf("$%.4f", *c)
}

func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func runDuration(r store.Run) string {
	end := time.Now()
	if r.CompletedAt != nil {
		end = *r.CompletedAt
	}
	if r.StartedAt.IsZero() || end.Before(r.StartedAt) {
		return ""
	}
	return msText(end.Sub(r.StartedAt).Milliseconds())
}

// render executes a page, or its block named by ?partial (the live
// parts that the page's script swaps in).
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t := h.pages[name]
	p.Prefix = h.prefix
	var buf bytes.Buffer
	tmpl := "layout"
	if part := r.URL.Query().Get("partial"); part != "" && r.Method == http.MethodGet {
		if t.Lookup("partial-"+part) == nil {
			http.Error(w, "no such part", http.StatusNotFound)
			return
		}
		tmpl = "partial-" + part
	}
	if err := t.ExecuteTemplate(&buf, tmpl, p); err != nil {
		h.log.Error("web UI render", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers an error page.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, title, text string) {
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	h.render(w, r, status, "error", page{Title: title, Error: text})
}

// --- runs ---

// since options of the runs list.
var sinceOptions = []struct{ Value, Label string }{
	{"", "any time"}, {"1h", "last hour"}, {"24h", "last 24 hours"}, {"168h", "last 7 days"}, {"720h", "last 30 days"},
}

type runsData struct {
	Pipeline, Status, Team, Stage, Since string
	Offset, Next, Prev                   int
	More                                 bool
	Runs                                 []store.Run
	Statuses                             []store.RunStatus
	Pipelines                            []string
	SinceOptions                         []struct{ Value, Label string }
	Query                                string // the filters, for the live refresh
}

const runsPageSize = 50

func (h *Handler) runsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	d := runsData{Pipeline: q.Get("pipeline"), Status: q.Get("status"), Team: q.Get("team"), Stage: q.Get("stage"),
		Since: q.Get("since"), Statuses: store.RunStatuses(), SinceOptions: sinceOptions}
	fmt.Sscan(q.Get("offset"), &d.Offset)
	d.Offset = min(max(d.Offset, 0), store.MaxRunOffset)
	if !v.All {
		d.Team = v.Team
	}
	f := store.RunFilter{Pipeline: d.Pipeline, Status: store.RunStatus(d.Status), Team: d.Team, Stage: d.Stage,
		Limit: runsPageSize + 1, Offset: d.Offset}
	if _, err := store.NormalizeRunFilter(f); err != nil {
		h.render(w, r, http.StatusBadRequest, "runs", page{Title: "Runs", Nav: "runs", V: v, Error: err.Error(), Data: d})
		return
	}
	var since time.Duration
	if d.Since != "" {
		var err error
		if since, err = time.ParseDuration(d.Since); err != nil || since <= 0 {
			h.render(w, r, http.StatusBadRequest, "runs", page{Title: "Runs", Nav: "runs", V: v, Error: "since: want a duration such as 24h", Data: d})
			return
		}
	}
	runs, err := h.cfg.Store.ListRuns(r.Context(), f)
	if err != nil {
		h.log.Error("web UI list runs", "err", err)
		h.fail(w, r, http.StatusInternalServerError, "Error", "The runs could not be read.")
		return
	}
	if len(runs) > runsPageSize {
		runs, d.More = runs[:runsPageSize], true
	}
	if since > 0 {
		cut := h.now().Add(-since)
		i := slices.IndexFunc(runs, func(r store.Run) bool { return r.StartedAt.Before(cut) })
		if i >= 0 { // newest first: the rest are older too
			runs, d.More = runs[:i], false
		}
	}
	d.Runs = runs
	d.Next, d.Prev = d.Offset+runsPageSize, max(d.Offset-runsPageSize, 0)
	vals := url.Values{}
	for k, val := range map[string]string{"pipeline": d.Pipeline, "status": d.Status, "team": q.Get("team"), "stage": d.Stage, "since": d.Since} {
		if val != "" {
			vals.Set(k, val)
		}
	}
	d.Query = vals.Encode()
	for _, p := range h.pipelines() {
		d.Pipelines = append(d.Pipelines, p.Name)
	}
	h.render(w, r, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", V: v, Data: d})
}

func (h *Handler) pipelines() []Pipeline {
	if h.cfg.Pipelines == nil {
		return nil
	}
	return h.cfg.Pipelines()
}

func (h *Handler) pipeline(name string) (Pipeline, bool) {
	for _, p := range h.pipelines() {
		if p.Name == name {
			return p, true
		}
	}
	return Pipeline{}, false
}

// --- one run ---

type runData struct {
	Run       store.Run
	Steps     []stepView
	Approvals []approvalView
	Graph     template.HTML
	Log       []logLine
	LogCut    int
	Feedback  *store.Feedback
	Trigger   string
	Final     string
	Console   string
	Live      bool
	CanDecide bool
	Outcomes  []store.Outcome
}

type stepView struct {
	store.StepRecord
	ID        string // the element's id
	Output    string
	Verifier  string
	Trust     string
	Trace     []traceLine
	Artifacts []artifact
	Feedback  *store.Feedback
	Last      bool // the step's last attempt
}

type traceLine struct {
	Type, Name, Text string
	Iteration        int
	Error            bool
}

type artifact struct{ Name, Content string }

type approvalView struct {
	store.Approval
	State string
}

type logLine struct {
	store.HistoryEvent
	Error string
}

var errHidden = errors.New("not visible")

// runData reads what the run page shows of run id, for v.
func (h *Handler) runData(r *http.Request, v viewer, id string) (runData, error) {
	ctx := r.Context()
	run, steps, err := h.cfg.Store.GetRunWithSteps(ctx, id)
	if err != nil {
		return runData{}, err
	}
	if !v.sees(run.Team) {
		return runData{}, errHidden
	}
	d := runData{Run: run, Live: !run.Status.Terminal(), Outcomes: []store.Outcome{store.OutcomeCorrect, store.OutcomePartial, store.OutcomeIncorrect},
		CanDecide: h.cfg.Approvals != nil && v.CSRF != ""}
	var history []store.HistoryEvent
	if h.cfg.History != nil {
		if history, err = h.cfg.History(ctx, id); err != nil {
			h.log.Warn("web UI run history", "run", id, "err", err)
		}
	}
	approvals, err := h.cfg.Store.RunApprovals(ctx, id)
	if err != nil {
		h.log.Warn("web UI run approvals", "run", id, "err", err)
	}
	var pending []string
	for _, a := range approvals {
		av := approvalView{Approval: a, State: approvalState(a, h.now())}
		if av.State == approval.StatePending {
			pending = append(pending, a.Step)
		}
		d.Approvals = append(d.Approvals, av)
	}
	if p, ok := h.pipeline(run.Pipeline); ok {
		d.Graph = drawGraph(p.Machine, factsOf(steps, history, pending...))
	}
	for i, s := range steps {
		sv := stepView{StepRecord: s, ID: fmt.Sprintf("step-%d", i), Output: prettyJSON(s.Output), Verifier: prettyJSON(s.VerifierOutput),
			Last: i == len(steps)-1 || steps[i+1].Name != s.Name}
		sv.RawResponse = cutText(s.RawResponse)
		sv.Prompt = cutText(s.Prompt)
		if s.Trust != nil {
			b, _ := json.MarshalIndent(s.Trust, "", "  ")
			sv.Trust = string(b)
		}
		sv.Trace = traceOf(s.Trace)
		sv.Artifacts = artifactsOf(s.Output)
		if sv.Last && s.Status != store.StepRunning && s.Status != store.StepWaiting {
			if sv.Feedback, err = h.cfg.Store.GetStepFeedback(ctx, id, s.Name); err != nil {
				h.log.Warn("web UI step feedback", "run", id, "err", err)
			}
		}
		d.Steps = append(d.Steps, sv)
	}
	if d.Feedback, err = h.cfg.Store.GetRunFeedback(ctx, id); err != nil {
		h.log.Warn("web UI run feedback", "run", id, "err", err)
	}
	d.Trigger, d.Final = prettyJSON(run.Trigger), prettyJSON(run.FinalOutput)
	if len(history) > MaxLogEvents {
		d.LogCut = len(history) - MaxLogEvents
		history = history[d.LogCut:]
	}
	for _, e := range history {
		l := logLine{HistoryEvent: e}
		if strings.HasSuffix(e.Type, "Failed") || strings.HasSuffix(e.Type, "TimedOut") {
			var det struct {
				Error string `json:"error"`
				Cause string `json:"cause"`
			}
			_ = json.Unmarshal(e.Detail, &det)
			l.Error = strings.TrimSpace(det.Error + " " + clip(det.Cause, 300))
		}
		d.Log = append(d.Log, l)
	}
	if h.cfg.ConsoleURL != nil {
		d.Console = h.cfg.ConsoleURL(id)
	}
	return d, nil
}

func approvalState(a store.Approval, now time.Time) string {
	switch {
	case a.Decision != store.DecisionPending:
		return approval.StateDecided
	case !now.Before(a.ExpiresAt):
		return approval.StateExpired
	}
	return approval.StatePending
}

func (h *Handler) runPage(w http.ResponseWriter, r *http.Request, v viewer) {
	d, err := h.runData(r, v, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, errHidden) {
		h.fail(w, r, http.StatusNotFound, "Not found", "There is no run "+r.PathValue("id")+".")
		return
	}
	if err != nil {
		h.log.Error("web UI run", "err", err)
		h.fail(w, r, http.StatusInternalServerError, "Error", "The run could not be read.")
		return
	}
	h.render(w, r, http.StatusOK, "run", page{Title: "Run " + d.Run.ID, Nav: "runs", V: v, Data: d})
}

// prettyJSON indents a JSON value for reading, cut to MaxTextBytes.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	// Decoded and encoded again, so that "<" reads as "<" (encoding/json
	// writes \u003c); the page escapes it.
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return cutText(string(raw))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return cutText(string(raw))
	}
	return cutText(strings.TrimSuffix(b.String(), "\n"))
}

// cutText cuts s to MaxTextBytes on a character boundary, saying so.
func cutText(s string) string {
	if len(s) <= MaxTextBytes {
		return s
	}
	cut := s[:MaxTextBytes]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + fmt.Sprintf("\n… (%d more bytes in the record)", len(s)-len(cut))
}

// traceOf reads an agent trace (a JSON array of events) for display.
func traceOf(raw json.RawMessage) []traceLine {
	if len(raw) == 0 {
		return nil
	}
	var events []map[string]any
	if json.Unmarshal(raw, &events) != nil {
		return []traceLine{{Type: "unreadable", Text: cutText(string(raw))}}
	}
	out := make([]traceLine, 0, len(events))
	for _, e := range events {
		l := traceLine{}
		l.Type, _ = e["type"].(string)
		l.Name, _ = e["name"].(string)
		if it, ok := e["iteration"].(float64); ok && it >= 0 && it < math.MaxInt32 {
			l.Iteration = int(it)
		}
		l.Error, _ = e["is_error"].(bool)
		switch {
		case e["arguments"] != nil:
			b, _ := json.Marshal(e["arguments"])
			l.Text = string(b)
		case e["content"] != nil:
			if s, ok := e["content"].(string); ok {
				l.Text = s
			} else {
				b, _ := json.Marshal(e["content"])
				l.Text = string(b)
			}
		case e["reason"] != nil:
			l.Text, _ = e["reason"].(string)
			l.Error = true
		}
		l.Text = clip(l.Text, 4000)
		out = append(out, l)
	}
	return out
}

// artifactsOf reads the artifacts of an LLMOutput: {name: content}.
func artifactsOf(output json.RawMessage) []artifact {
	var out struct {
		Artifacts map[string]any `json:"artifacts"`
	}
	if json.Unmarshal(output, &out) != nil || len(out.Artifacts) == 0 {
		return nil
	}
	var list []artifact
	for name, c := range out.Artifacts {
		s, ok := c.(string)
		if !ok {
			b, _ := json.MarshalIndent(c, "", "  ")
			s = string(b)
		}
		list = append(list, artifact{Name: name, Content: cutText(s)})
	}
	slices.SortFunc(list, func(a, b artifact) int { return strings.Compare(a.Name, b.Name) })
	return list
}

// postFeedback records the run's or a step's feedback from its form.
func (h *Handler) postFeedback(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	run, err := h.cfg.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !v.sees(run.Team)) {
		h.fail(w, r, http.StatusNotFound, "Not found", "There is no run "+id+".")
		return
	}
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, "Error", "The run could not be read.")
		return
	}
	f := store.Feedback{Outcome: store.Outcome(r.PostForm.Get("outcome")), Notes: strings.TrimSpace(r.PostForm.Get("notes")), SubmittedAt: h.now()}
	if !f.Outcome.Valid() {
		h.fail(w, r, http.StatusBadRequest, "Bad request", "Mark the answer correct, partial or incorrect.")
		return
	}
	step := r.PostForm.Get("step")
	if step == "" {
		err = h.cfg.Store.PutRunFeedback(r.Context(), id, f)
	} else {
		err = h.cfg.Store.PutStepFeedback(r.Context(), id, step, f)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.fail(w, r, http.StatusNotFound, "Not found", fmt.Sprintf("Run %s has no step %q.", id, step))
		return
	case errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrTooLarge):
		h.fail(w, r, http.StatusBadRequest, "Bad request", err.Error())
		return
	case err != nil:
		h.log.Error("web UI feedback", "run", id, "err", err)
		h.fail(w, r, http.StatusInternalServerError, "Error", "The feedback could not be recorded.")
		return
	}
	http.Redirect(w, r, h.prefix+"/runs/"+url.PathEscape(id)+"#feedback", http.StatusSeeOther)
}

// --- approvals ---

type approvalsData struct {
	Pending   []approvalView
	CanDecide bool
	Outcomes  []store.Outcome
}

// MaxPendingShown bounds the approvals page.
const MaxPendingShown = 200

func (h *Handler) approvalsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	pending, err := h.cfg.Store.PendingApprovals(r.Context(), MaxPendingShown)
	if err != nil {
		h.log.Error("web UI approvals", "err", err)
		h.fail(w, r, http.StatusInternalServerError, "Error", "The approvals could not be read.")
		return
	}
	d := approvalsData{CanDecide: h.cfg.Approvals != nil && v.CSRF != ""}
	teams := map[string]string{}
	now := h.now()
	for _, a := range pending {
		team, ok := teams[a.RunID]
		if !ok {
			run, err := h.cfg.Store.GetRun(r.Context(), a.RunID)
			if err != nil {
				continue
			}
			team, teams[a.RunID] = run.Team, run.Team
		}
		if v.sees(team) {
			d.Pending = append(d.Pending, approvalView{Approval: a, State: approvalState(a, now)})
		}
	}
	h.render(w, r, http.StatusOK, "approvals", page{Title: "Approvals", Nav: "approvals", V: v, Data: d})
}

// decide decides an approval from its form, through the Service's
// Decide with a link token signed for it: the path POST
// /approvals/{token} takes.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	svc := h.cfg.Approvals
	a, err := h.cfg.Store.GetApproval(r.Context(), id)
	var run store.Run
	if err == nil {
		run, err = h.cfg.Store.GetRun(r.Context(), a.RunID)
	}
	if svc == nil || errors.Is(err, store.ErrNotFound) || (err == nil && !v.sees(run.Team)) {
		h.fail(w, r, http.StatusNotFound, "Not found", "There is no such approval.")
		return
	}
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, "Error", "The approval could not be read.")
		return
	}
	by := strings.Join(strings.Fields(r.PostForm.Get("by")), " ")
	switch {
	case by == "" && v.Team != "":
		by = "web UI (" + v.Team + ")"
	case by == "":
		by = "web UI"
	case v.Team != "":
		by += " (" + v.Team + ")"
	}
	token := svc.Signer.Sign(a.ID, a.ExpiresAt)
	err = svc.Decide(r.Context(), token, r.PostForm.Get("decision"), by)
	if err != nil {
		status, text := http.StatusInternalServerError, "The approval could not be decided. Try again later."
		switch {
		case errors.Is(err, approval.ErrBadDecision):
			status, text = http.StatusBadRequest, "Choose approve or reject."
		case errors.Is(err, approval.ErrDecided):
			status, text = http.StatusConflict, "This request was decided already; it decides once."
		case errors.Is(err, approval.ErrExpired):
			status, text = http.StatusGone, "This request has expired; it can no longer be decided."
		case errors.Is(err, approval.ErrNotFound):
			status, text = http.StatusNotFound, "There is no such approval."
		case errors.Is(err, approval.ErrResume):
			status, text = http.StatusBadGateway, "Your decision is recorded, but the run could not be resumed with it."
		default:
			h.log.Error("web UI decide", "approval", a.ID, "err", err)
		}
		h.fail(w, r, status, "Not decided", text)
		return
	}
	back := h.next(r.PostForm.Get("back"))
	if r.PostForm.Get("back") == "" {
		back = h.prefix + "/runs/" + url.PathEscape(a.RunID)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// --- pipelines ---

type pipelineRow struct {
	Pipeline
	Last *store.Run
}

func (h *Handler) pipelinesPage(w http.ResponseWriter, r *http.Request, v viewer) {
	var rows []pipelineRow
	for _, p := range h.pipelines() {
		row := pipelineRow{Pipeline: p}
		f := store.RunFilter{Pipeline: p.Name, Limit: 1}
		if !v.All {
			f.Team = v.Team
		}
		if runs, err := h.cfg.Store.ListRuns(r.Context(), f); err == nil && len(runs) > 0 {
			row.Last = &runs[0]
		}
		rows = append(rows, row)
	}
	h.render(w, r, http.StatusOK, "pipelines", page{Title: "Pipelines", Nav: "pipelines", V: v, Data: rows})
}

type pipelineData struct {
	Pipeline
	YAML     string
	Problems string
	Graph    template.HTML
	Runs     []store.Run
	CanStart bool
	Event    string
}

func (h *Handler) pipelineData(r *http.Request, v viewer, name string) (pipelineData, bool) {
	p, ok := h.pipeline(name)
	if !ok {
		return pipelineData{}, false
	}
	d := pipelineData{Pipeline: p, Graph: drawGraph(p.Machine, nil), CanStart: h.cfg.Start != nil && v.CSRF != ""}
	if h.cfg.Source != nil {
		src, problems, err := h.cfg.Source(name)
		if err != nil {
			problems = strings.TrimSpace(problems + "\n" + err.Error())
		}
		d.YAML, d.Problems = cutText(string(src)), problems
	}
	f := store.RunFilter{Pipeline: name, Limit: 10}
	if !v.All {
		f.Team = v.Team
	}
	d.Runs, _ = h.cfg.Store.ListRuns(r.Context(), f)
	return d, true
}

func (h *Handler) pipelinePage(w http.ResponseWriter, r *http.Request, v viewer) {
	d, ok := h.pipelineData(r, v, r.PathValue("name"))
	if !ok {
		h.fail(w, r, http.StatusNotFound, "Not found", fmt.Sprintf("There is no pipeline %q.", r.PathValue("name")))
		return
	}
	d.Event = "{}"
	h.render(w, r, http.StatusOK, "pipeline", page{Title: "Pipeline " + d.Name, Nav: "pipelines", V: v, Data: d})
}

// runNow starts a run of the pipeline with the form's event.
func (h *Handler) runNow(w http.ResponseWriter, r *http.Request, v viewer) {
	name := r.PathValue("name")
	d, ok := h.pipelineData(r, v, name)
	if !ok || h.cfg.Start == nil {
		h.fail(w, r, http.StatusNotFound, "Not found", fmt.Sprintf("There is no pipeline %q.", name))
		return
	}
	event := strings.TrimSpace(r.PostForm.Get("event"))
	d.Event = event
	if event != "" && !json.Valid([]byte(event)) {
		h.render(w, r, http.StatusBadRequest, "pipeline", page{Title: "Pipeline " + name, Nav: "pipelines", V: v, Data: d,
			Error: "The event is not valid JSON."})
		return
	}
	bearer := ""
	if len(h.cfg.Tokens) > 0 {
		bearer = h.cfg.Tokens[v.Team]
	}
	id, err := h.cfg.Start(r.Context(), name, bearer, []byte(event))
	if err != nil {
		h.render(w, r, inbound.HTTPStatus(err), "pipeline", page{Title: "Pipeline " + name, Nav: "pipelines", V: v, Data: d,
			Error: "The run did not start: " + err.Error()})
		return
	}
	h.log.Info("web UI run started", "pipeline", name, "run", id, "team", v.Team)
	http.Redirect(w, r, h.prefix+"/runs/"+url.PathEscape(id), http.StatusSeeOther)
}

// --- agents ---

type agentsData struct {
	Agents   []Agent
	Problems string
}

func (h *Handler) agentsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	var d agentsData
	if h.cfg.Agents != nil {
		d.Agents, d.Problems = h.cfg.Agents()
	}
	h.render(w, r, http.StatusOK, "agents", page{Title: "Agents", Nav: "agents", V: v, Data: d})
}
