package approval

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/store"
)

// markHarness is a harness whose Service records feedback, with the run
// and the step the approval is about recorded; step is the approval's
// step name (a human check's is "<step>:check:<name>").
func markHarness(t *testing.T, step string) *harness {
	t.Helper()
	h := newHarness(t)
	ctx := context.Background()
	if err := h.st.CreateRun(ctx, store.Run{ID: h.a.RunID, Pipeline: h.a.Pipeline, Status: store.RunWaiting, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.PutStep(ctx, store.StepRecord{RunID: h.a.RunID, Name: "investigate", Attempt: 1, Status: store.StepWaiting, StartedAt: t0, FinishedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if step != h.a.Step {
		// Another approval, for the step given.
		id, _ := store.NewApprovalID()
		a := h.a
		a.ID, a.Step = id, step
		if err := h.st.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
		h.a, h.token = a, h.svc.Signer.Sign(id, a.ExpiresAt)
	}
	h.svc.Feedback = h.st
	return h
}

func post(t *testing.T, h *harness, form url.Values) *http.Response {
	t.Helper()
	srv := httptest.NewServer(h.svc)
	t.Cleanup(srv.Close)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(srv.URL+"/approvals/"+h.token, form)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestApprovalMarksTheAnswer: the page offers the mark; a decision with
// one records the checked step's feedback; a replayed link marks nothing;
// a bad mark is refused before anything is decided.
func TestApprovalMarksTheAnswer(t *testing.T) {
	ctx := context.Background()
	h := markHarness(t, "investigate:check:signoff")
	srv := httptest.NewServer(h.svc)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/approvals/" + h.token)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`name="outcome" value="correct"`, `name="outcome" value="partial"`, `name="outcome" value="incorrect"`, `name="notes"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(string(page), "<script") && !strings.Contains(string(page), "&lt;script") {
		t.Error("the page runs a script")
	}

	// A bad mark: 400, nothing decided.
	if r := post(t, h, url.Values{"decision": {"approve"}, "outcome": {"great"}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad outcome: %d", r.StatusCode)
	}
	if r := post(t, h, url.Values{"decision": {"approve"}, "notes": {"no outcome"}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("notes without an outcome: %d", r.StatusCode)
	}
	if a, _ := h.st.GetApproval(ctx, h.a.ID); a.Decision != store.DecisionPending || len(h.resumed()) != 0 {
		t.Fatalf("a refused request decided: %+v", a)
	}

	r := post(t, h, url.Values{"decision": {"reject"}, "by": {"lead"}, "outcome": {"incorrect"}, "notes": {"wrong host"}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("decision: %d", r.StatusCode)
	}
	f, err := h.st.GetStepFeedback(ctx, h.a.RunID, "investigate")
	if err != nil || f == nil || f.Outcome != store.OutcomeIncorrect || f.Notes != "wrong host" || !f.SubmittedAt.Equal(t0) {
		t.Fatalf("step feedback %+v, %v", f, err)
	}
	pd, err := h.svc.Page(ctx, h.token)
	if err != nil || pd.Feedback == nil || pd.Feedback.Outcome != store.OutcomeIncorrect {
		t.Errorf("page data %+v, %v", pd, err)
	}

	// The link decided: a replay marks nothing, whatever it says.
	if r := post(t, h, url.Values{"decision": {"approve"}, "outcome": {"correct"}}); r.StatusCode != http.StatusConflict {
		t.Errorf("replay: %d", r.StatusCode)
	}
	if f, _ := h.st.GetStepFeedback(ctx, h.a.RunID, "investigate"); f == nil || f.Outcome != store.OutcomeIncorrect {
		t.Errorf("a replay changed the mark: %+v", f)
	}
}

// TestApprovalMarkOptional: without a mark, or without a feedback store,
// a decision records no feedback and the page offers none.
func TestApprovalMarkOptional(t *testing.T) {
	ctx := context.Background()
	h := markHarness(t, "investigate")
	if r := post(t, h, url.Values{"decision": {"approve"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("decision: %d", r.StatusCode)
	}
	if f, err := h.st.GetStepFeedback(ctx, h.a.RunID, "investigate"); err != nil || f != nil {
		t.Errorf("feedback without a mark: %+v, %v", f, err)
	}

	plain := markHarness(t, "investigate")
	plain.svc.Feedback = nil
	srv := httptest.NewServer(plain.svc)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/approvals/" + plain.token)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(page), `name="outcome"`) {
		t.Error("a page without a feedback store offers a mark")
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/approvals/"+plain.token, strings.NewReader(`{"decision": "approve", "outcome": "correct"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var pd PageData
	_ = json.NewDecoder(resp.Body).Decode(&pd)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || pd.State != StateDecided || pd.Feedback != nil {
		t.Errorf("JSON decision: %d %+v", resp.StatusCode, pd)
	}
	if f, _ := plain.st.GetStepFeedback(ctx, plain.a.RunID, "investigate"); f != nil {
		t.Errorf("feedback recorded without a feedback store: %+v", f)
	}
}
