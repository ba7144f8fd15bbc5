package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// MaxFeedbackBodyBytes bounds the body of a feedback request
// ({outcome, notes}: the notes are at most store.MaxNotesBytes).
const MaxFeedbackBodyBytes = 16 << 10

// feedbackPath splits /runs/{id}/feedback and
// /runs/{id}/steps/{step}/feedback (a step name may hold slashes:
// "group/branch"); ok is false for other paths.
func feedbackPath(path string) (runID, step string, ok bool) {
	rest, found := strings.CutPrefix(path, "/runs/")
	if !found {
		return "", "", false
	}
	rest, found = strings.CutSuffix(rest, "/feedback")
	if !found {
		return "", "", false
	}
	runID, tail, hasTail := strings.Cut(rest, "/")
	if runID == "" {
		return "", "", false
	}
	if !hasTail {
		return runID, "", true
	}
	step, found = strings.CutPrefix(tail, "steps/")
	if !found || step == "" {
		return "", "", false
	}
	return runID, step, true
}

// feedback serves GET and POST of a run's or a step's feedback. The run
// must be one the caller sees (another team's is 404, as elsewhere); a
// POST takes exactly {"outcome": "correct"|"partial"|"incorrect",
// "notes": "..."} (notes optional) and upserts, answering the stored
// feedback; anything else is 400. GET answers {"feedback": …|null}.
func (s *Server) feedback(w http.ResponseWriter, r *http.Request, c caller, runID, step string) {
	if !allow(w, r, http.MethodGet, http.MethodPost) {
		return
	}
	notFound := func() {
		what := "no run " + runID
		if step != "" {
			what = fmt.Sprintf("no step %q in run %s", step, runID)
		}
		writeJSON(w, http.StatusNotFound, map[string]string{"error": what})
	}
	run, err := s.runner.Store.GetRun(r.Context(), runID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.sees(run.Team)) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no run " + runID})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	if r.Method == http.MethodPost {
		body, ok := readBody(w, r, MaxFeedbackBodyBytes)
		if !ok {
			return
		}
		f, err := decodeFeedback(body)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		f.SubmittedAt = time.Now()
		if step == "" {
			err = s.runner.Store.PutRunFeedback(r.Context(), runID, f)
		} else {
			err = s.runner.Store.PutStepFeedback(r.Context(), runID, step, f)
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			notFound()
			return
		case errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrTooLarge):
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		case err != nil:
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
	}
	var got *store.Feedback
	if step == "" {
		got, err = s.runner.Store.GetRunFeedback(r.Context(), runID)
	} else {
		got, err = s.runner.Store.GetStepFeedback(r.Context(), runID, step)
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"feedback": got})
}

// decodeFeedback reads a feedback body: one JSON object with outcome (one
// of the three) and optional notes (a string), nothing else.
func decodeFeedback(body []byte) (store.Feedback, error) {
	var in struct {
		Outcome *string `json:"outcome"`
		Notes   *string `json:"notes"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return store.Feedback{}, fmt.Errorf("the body must be a JSON object {outcome, notes}: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return store.Feedback{}, errors.New("the body must be one JSON object {outcome, notes}")
	}
	if in.Outcome == nil {
		return store.Feedback{}, errors.New("outcome is required: correct, partial or incorrect")
	}
	if o := store.Outcome(*in.Outcome); !o.Valid() {
		return store.Feedback{}, fmt.Errorf("outcome %q: want correct, partial or incorrect", *in.Outcome)
	}
	f := store.Feedback{Outcome: store.Outcome(*in.Outcome)}
	if in.Notes != nil {
		if len(*in.Notes) > store.MaxNotesBytes {
			return store.Feedback{}, fmt.Errorf("notes are %d bytes, limit %d", len(*in.Notes), store.MaxNotesBytes)
		}
		f.Notes = *in.Notes
	}
	return f, nil
}

func isFeedbackPath(path string) bool {
	_, _, ok := feedbackPath(path)
	return ok
}
