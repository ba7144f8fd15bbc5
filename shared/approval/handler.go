package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/store"
)

// DefaultBy names the approver when the form gives no name.
const DefaultBy = "approval link"

// maxByBytes bounds an approver's name.
const maxByBytes = 200

// maxFormBytes bounds a decision's request body.
const maxFormBytes = 16 << 10

var _ http.Handler = (*Service)(nil)

// ServeHTTP serves GET, HEAD and POST /approvals/{token}: mount it with
// mux.Handle("/approvals/", svc). The token is the last path segment after
// "/approvals/", so a prefix before it does no harm. Clients asking for
// application/json (Accept header) get JSON instead of HTML; a JSON POST
// body {"decision", "by"} works as the form does.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w.Header())
	token, ok := tokenOf(r.URL.Path)
	if !ok {
		s.respond(w, r, http.StatusNotFound, view{Title: "Not found", Text: "There is no approval at this address."})
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.show(w, r, token)
	case http.MethodPost:
		s.decide(w, r, token)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		s.respond(w, r, http.StatusMethodNotAllowed, view{Title: "Method not allowed", Text: "Open the link, then approve or reject on the page."})
	}
}

func tokenOf(path string) (string, bool) {
	i := strings.LastIndex(path, "/approvals/")
	if i < 0 {
		return "", false
	}
	tok := path[i+len("/approvals/"):]
	if tok == "" || strings.Contains(tok, "/") {
		return "", false
	}
	return tok, true
}

// secureHeaders keeps the page (and the token in its address) private:
// never cached, never framed, no Referer to other sites, no scripts.
func secureHeaders(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
}

func (s *Service) show(w http.ResponseWriter, r *http.Request, token string) {
	pd, err := s.Page(r.Context(), token)
	if err != nil {
		s.fail(w, r, err, nil)
		return
	}
	status, title := http.StatusOK, "Approval requested"
	switch pd.State {
	case StateDecided:
		title = "Approval decided"
	case StateExpired:
		status, title = http.StatusGone, "Approval expired"
	}
	s.respond(w, r, status, view{Title: title, Page: &pd})
}

func (s *Service) decide(w http.ResponseWriter, r *http.Request, token string) {
	decision, by, mark, err := readDecision(w, r)
	if err != nil {
		s.respond(w, r, http.StatusBadRequest, view{Title: "Bad request", Text: err.Error()})
		return
	}
	if mark != nil && s.Feedback == nil {
		mark = nil // nowhere to record it: the page offers no mark then
	}
	if s.Identify != nil {
		if who := s.Identify(r); who != "" {
			by = who
		}
	}
	err = s.Decide(r.Context(), token, decision, by)
	if mark != nil && (err == nil || errors.Is(err, ErrResume)) {
		// The decision is recorded: the mark goes with it. Its failure
		// does not undo the decision; the page shows no mark then.
		mark.SubmittedAt = s.Signer.now()
		if merr := s.Mark(r.Context(), token, *mark); merr != nil {
			s.log().WarnContext(r.Context(), "approval's mark not recorded", "error", merr.Error())
		}
	}
	if err != nil {
		// Show where the approval stands after a refused decision.
		pd, perr := s.Page(r.Context(), token)
		if perr != nil {
			s.fail(w, r, err, nil)
			return
		}
		s.fail(w, r, err, &pd)
		return
	}
	if wantsJSON(r) {
		pd, _ := s.Page(r.Context(), token)
		writeJSON(w, http.StatusOK, pd)
		return
	}
	// Post/redirect/get: reloading the result does not post again.
	http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
}

// readDecision reads a decision, its approver and the optional mark of
// the step's answer (outcome and notes; nil without an outcome).
func readDecision(w http.ResponseWriter, r *http.Request) (decision, by string, mark *store.Feedback, err error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var outcome, notes string
	if ct == "application/json" {
		var in struct {
			Decision string `json:"decision"`
			By       string `json:"by"`
			Outcome  string `json:"outcome"`
			Notes    string `json:"notes"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil && !errors.Is(err, io.EOF) {
			return "", "", nil, errors.New("the body is not a JSON object {decision, by, outcome, notes}")
		}
		decision, by, outcome, notes = in.Decision, in.By, in.Outcome, in.Notes
	} else {
		if err := r.ParseForm(); err != nil {
			return "", "", nil, errors.New("the form could not be read")
		}
		decision, by, outcome, notes = r.PostForm.Get("decision"), r.PostForm.Get("by"), r.PostForm.Get("outcome"), r.PostForm.Get("notes")
	}
	if outcome == "" {
		if strings.TrimSpace(notes) != "" {
			return "", "", nil, errors.New("notes go with a mark of the answer: choose correct, partial or incorrect")
		}
		return decision, by, nil, nil
	}
	f := store.Feedback{Outcome: store.Outcome(outcome), Notes: strings.TrimSpace(notes)}
	switch {
	case !f.Outcome.Valid():
		return "", "", nil, errors.New("mark the answer correct, partial or incorrect")
	case len(f.Notes) > store.MaxNotesBytes || !utf8.ValidString(f.Notes):
		return "", "", nil, fmt.Errorf("notes: at most %d bytes of text", store.MaxNotesBytes)
	}
	return decision, by, &f, nil
}

// cleanBy makes an approver's name one short line: DefaultBy when empty,
// cut to maxByBytes on a character boundary.
func cleanBy(by string) string {
	by = strings.Join(strings.Fields(by), " ")
	if by == "" {
		return DefaultBy
	}
	if len(by) > maxByBytes {
		by = by[:maxByBytes]
		for !utf8.ValidString(by) {
			by = by[:len(by)-1]
		}
	}
	return by
}

// fail answers an error of Page or Decide.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, err error, pd *PageData) {
	v := view{Page: pd}
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrBadDecision):
		status, v.Title, v.Text = http.StatusBadRequest, "Bad request", "Choose approve or reject."
	case errors.Is(err, ErrForged):
		status, v.Title, v.Text = http.StatusForbidden, "Link not valid", "This approval link is not valid. Use the link exactly as you received it."
	case errors.Is(err, ErrExpired):
		status, v.Title, v.Text = http.StatusGone, "Link expired", "This approval link has expired; the request can no longer be decided."
	case errors.Is(err, ErrNotFound):
		status, v.Title, v.Text = http.StatusNotFound, "Not found", "There is no such approval."
	case errors.Is(err, ErrDecided):
		status, v.Title, v.Text = http.StatusConflict, "Already decided", "This request was decided already; a link decides once."
	case errors.Is(err, ErrResume):
		status, v.Title, v.Text = http.StatusBadGateway, "Decision recorded", "Your decision is recorded, but the run could not be resumed with it. Tell the pipeline's operators."
	default:
		v.Title, v.Text = "Error", "The approval could not be processed. Try again later."
		s.log().ErrorContext(r.Context(), "approval request", "error", err.Error())
	}
	s.respond(w, r, status, v)
}

// view is what a response shows. Marks: the page offers to mark the
// step's answer (the Service records feedback).
type view struct {
	Title string
	Text  string
	Page  *PageData
	Marks bool
}

func (s *Service) respond(w http.ResponseWriter, r *http.Request, status int, v view) {
	if wantsJSON(r) {
		body := map[string]any{"title": v.Title}
		if v.Text != "" {
			body["error"] = v.Text
		}
		if v.Page != nil {
			body["approval"] = v.Page
		}
		if status < 400 && v.Page != nil {
			writeJSON(w, status, v.Page)
			return
		}
		writeJSON(w, status, body)
		return
	}
	v.Marks = s.Feedback != nil
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(appendPage(make([]byte, 0, pageSize), v))
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
