package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/stepline/stepline/internal/testenv"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/store"
)

// TestHumanSteps runs a human step end to end in the box: the approval
// function (under waitForTaskToken) records the pending approval with its
// task token and logs the signed link; the callback function serves the
// link's page and takes the decision, which resumes the run with
// SendTaskSuccess inside the box. Each case is a run of its own.
func TestHumanSteps(t *testing.T) {
	h := box(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := prepareHuman(t, h, "human")
	// start runs the pipeline up to its human step.
	start := func(t *testing.T) (Execution, store.Approval) {
		t.Helper()
		ex, err := h.Start(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		a, err := h.WaitApproval(ctx, p, ex.RunID)
		if err != nil {
			t.Fatal(err)
		}
		return ex, a
	}
	// finish waits for the run to end, records it and returns its record.
	finish := func(t *testing.T, ex Execution) (*sfn.DescribeExecutionOutput, store.Run, []store.StepRecord) {
		t.Helper()
		d, err := h.Wait(ctx, ex.ARN)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.RecordScenario(ctx, p); err != nil {
			t.Fatal(err)
		}
		run, steps, err := h.Store.GetRunWithSteps(ctx, ex.RunID)
		if err != nil {
			t.Fatal(err)
		}
		return d, run, steps
	}
	post := func(t *testing.T, link, form string) int {
		t.Helper()
		resp, err := h.Callback(ctx, "POST", link, "application/x-www-form-urlencoded", form)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}

	t.Run("approve", func(t *testing.T) {
		ex, a := start(t)
		if a.TaskToken == "" || a.Step != "sign-off" || a.Pipeline != "box-approval" || !strings.Contains(a.Message, "Restart checkout-api? restart the pods") {
			t.Fatalf("pending approval %+v", a)
		}
		link := h.Link(a)
		if !logged(t, h, FnApproval, `"link":"`+link+`"`) {
			t.Errorf("the approval function did not log the signed link %s", link)
		}
		page, err := h.Callback(ctx, "GET", link, "", "")
		if err != nil || page.StatusCode != 200 || !strings.Contains(page.Body, "Restart checkout-api?") || !strings.Contains(page.Body, `value="approve"`) {
			t.Fatalf("page: %d %v\n%s", page.StatusCode, err, page.Body)
		}
		if got := post(t, link, "decision=approve&by=alice"); got != 303 {
			t.Fatalf("approve: HTTP %d, want 303 (back to the page)", got)
		}
		d, run, steps := finish(t, ex)
		if d.Status != sfntypes.ExecutionStatusSucceeded || run.Status != store.RunCompleted {
			t.Fatalf("execution %s, run %s (%s)", d.Status, run.Status, run.Reason)
		}
		signOff := lastRecord(steps, "sign-off")
		var out struct {
			DecidedBy string `json:"decided_by"`
		}
		json.Unmarshal(signOff.Output, &out)
		if signOff.Status != store.StepCompleted || out.DecidedBy != "alice" {
			t.Errorf("sign-off record %s, output %s", signOff.Status, signOff.Output)
		}
		if !called(p.Script, "apply", `"by":"alice"`) {
			t.Errorf("the webhook after the approval was not sent the decider: %+v", p.Script.Calls())
		}
		// Replay: the link decides once; the task token resumes once.
		if got := post(t, link, "decision=reject&by=mallory"); got != 409 {
			t.Errorf("replayed link: HTTP %d, want 409", got)
		}
		stored, err := h.Store.GetApproval(ctx, a.ID)
		if err != nil || stored.Decision != store.DecisionApproved || stored.DecidedBy != "alice" {
			t.Errorf("approval after the replay: %+v, %v", stored, err)
		}
		_, err = h.AWS.SFN.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(a.TaskToken), Output: aws.String(`{"decision": "reject"}`)})
		if !isAPIError(err, "InvalidToken", "TaskTimedOut", "TaskDoesNotExist") {
			t.Errorf("SendTaskSuccess with a used token: %v, want InvalidToken", err)
		}
	})

	t.Run("reject", func(t *testing.T) {
		ex, a := start(t)
		if got := post(t, h.Link(a), "decision=reject&by=bob"); got != 303 {
			t.Fatalf("reject: HTTP %d, want 303", got)
		}
		d, run, _ := finish(t, ex)
		if d.Status != sfntypes.ExecutionStatusFailed || aws.ToString(d.Error) != "Stepline.Escalated" {
			t.Errorf("execution %s %s", d.Status, aws.ToString(d.Error))
		}
		if run.Status != store.RunEscalated || !strings.Contains(run.Reason, "Rejected by bob") {
			t.Errorf("run %s: %q", run.Status, run.Reason)
		}
	})

	t.Run("expired and forged links, then SendTaskFailure", func(t *testing.T) {
		ex, a := start(t)
		signer := &approval.Signer{Key: h.Key}
		links := []struct {
			name string
			link string
			want int
		}{
			{"expired a second ago", APIBaseURL + "/approvals/" + signer.Sign(a.ID, time.Now().Add(-time.Second)), 410},
			{"signed with another key", APIBaseURL + "/approvals/" + (&approval.Signer{Key: []byte(strings.Repeat("k", 32))}).Sign(a.ID, a.ExpiresAt), 403},
			{"another approval's ID", APIBaseURL + "/approvals/" + signer.Sign("no-such-approval", a.ExpiresAt), 404},
		}
		for _, l := range links {
			if got := post(t, l.link, "decision=approve&by=eve"); got != l.want {
				t.Errorf("%s: HTTP %d, want %d", l.name, got, l.want)
			}
		}
		if d, _ := h.AWS.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(ex.ARN)}); d == nil || d.Status != sfntypes.ExecutionStatusRunning {
			t.Fatalf("the run did not keep waiting after refused links")
		}
		if _, err := h.AWS.SFN.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(a.TaskToken),
			Error: aws.String("Approval.Cancelled"), Cause: aws.String("withdrawn by the operator")}); err != nil {
			t.Fatal(err)
		}
		d, run, steps := finish(t, ex)
		if d.Status != sfntypes.ExecutionStatusFailed || aws.ToString(d.Error) != "Stepline.Failed" {
			t.Errorf("execution %s %s: %s", d.Status, aws.ToString(d.Error), aws.ToString(d.Cause))
		}
		if run.Status != store.RunFailed || !strings.Contains(run.Reason, "Approval.Cancelled: withdrawn by the operator") {
			t.Errorf("run %s: %q", run.Status, run.Reason)
		}
		if r := lastRecord(steps, "sign-off"); r.Status != store.StepFailed || r.Error != "Approval.Cancelled: withdrawn by the operator" {
			t.Errorf("sign-off record %s: %q (run reason %q, execution cause %q)", r.Status, r.Error, run.Reason, aws.ToString(d.Cause))
		}
	})
}

// logged reports whether a function's emulator logs hold text.
func logged(t *testing.T, h *Harness, function, text string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(h.Box.Logs, "lambda", function+"-*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// called reports whether the fake served key a request whose body holds text.
func called(s *Script, key, text string) bool {
	for _, c := range s.Calls() {
		if c.Key == key && strings.Contains(c.Body, text) {
			return true
		}
	}
	return false
}

func lastRecord(steps []store.StepRecord, name string) store.StepRecord {
	var last store.StepRecord
	for _, s := range steps {
		if s.Name == name {
			last = s
		}
	}
	return last
}

// isAPIError reports whether err is an AWS error answer with one of codes.
func isAPIError(err error, codes ...string) bool {
	var api interface{ ErrorCode() string }
	if !errors.As(err, &api) {
		return false
	}
	for _, c := range codes {
		if api.ErrorCode() == c {
			return true
		}
	}
	return false
}

// prepareHuman prepares the human scenario (a run that waits on its
// approval) under the scenario name given.
func prepareHuman(t *testing.T, h *Harness, name string) *Prepared {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(), "e2e", "testdata", "human")
	p, err := h.Prepare(Scenario{Name: name, Dir: dir, Pipeline: "pipeline.yaml", Responses: filepath.Join(dir, "responses.yaml"),
		Event: filepath.Join(scenarioDir(), "event.json")})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
