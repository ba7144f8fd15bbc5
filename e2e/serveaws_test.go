package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/stepline/stepline/shared/store"
)

// TestServeAWS browses the box with `stepline serve --aws`: a run of the
// human scenario waits for its approval; a stack in the box's
// CloudFormation names the table and the state machines' prefix in its
// outputs, as the core stack does; serve --aws --stack finds them, its
// approvals page (a plain form, no browser) shows the request, and its
// Approve resumes the execution through the task token, which goes on to
// SUCCEEDED; the run page then shows the run's steps, its log from the
// execution history and its Step Functions console link.
func TestServeAWS(t *testing.T) {
	h := box(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := prepareHuman(t, h, "serve-aws")
	ex, err := h.Start(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	a, err := h.WaitApproval(ctx, p, ex.RunID)
	if err != nil {
		t.Fatal(err)
	}
	// The harness names state machines <scenario>--<pipeline>: the
	// naming rule's <prefix>-<pipeline> with the prefix "<scenario>-".
	stackName := "serve-aws-stack"
	if err := createOutputStack(ctx, h, stackName, map[string]string{"TableName": Table, "StateMachinePrefix": p.ID + "-"}); err != nil {
		t.Fatal(err)
	}
	base := startServeAWS(t, ctx, h, "--stack", stackName)
	c := newFormClient(t)

	// The approvals page lists the waiting request with its form.
	page := c.get(t, base+"/ui/approvals")
	if !strings.Contains(page, "Approval: sign-off") || !strings.Contains(page, html.EscapeString("Restart checkout-api? restart the pods")) ||
		!strings.Contains(page, `action="/ui/approvals/`+a.ID+`"`) || !strings.Contains(page, ex.RunID) {
		t.Fatalf("approvals page does not show approval %s of run %s:\n%s", a.ID, ex.RunID, page)
	}
	csrf := csrfOf(t, page)

	// A decision without the form's token is refused and decides nothing.
	if code, _ := c.post(t, base+"/ui/approvals/"+a.ID, url.Values{"decision": {"approve"}, "by": {"mallory"}}); code != http.StatusForbidden {
		t.Errorf("POST without the CSRF token: HTTP %d, want 403", code)
	}
	if stored, _ := h.Store.GetApproval(ctx, a.ID); stored.Decision != store.DecisionPending {
		t.Fatalf("a refused form decided: %+v", stored)
	}

	// Approve: recorded in the table and sent with the task token.
	code, loc := c.post(t, base+"/ui/approvals/"+a.ID, url.Values{"decision": {"approve"}, "by": {"alice"}, "csrf": {csrf}, "back": {"/ui/approvals"}})
	if code != http.StatusSeeOther || loc != "/ui/approvals" {
		t.Fatalf("approve: HTTP %d to %q, want 303 to /ui/approvals", code, loc)
	}
	d, err := h.Wait(ctx, ex.ARN)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != sfntypes.ExecutionStatusSucceeded {
		t.Fatalf("execution %s: %s %s", d.Status, aws.ToString(d.Error), aws.ToString(d.Cause))
	}
	stored, err := h.Store.GetApproval(ctx, a.ID)
	if err != nil || stored.Decision != store.DecisionApproved || stored.DecidedBy != "alice" {
		t.Errorf("approval after the decision: %+v, %v", stored, err)
	}
	if !called(p.Script, "apply", `"by":"alice"`) {
		t.Errorf("the webhook after the approval was not sent the decider: %+v", p.Script.Calls())
	}
	// A second decision of the same approval is refused.
	if code, _ := c.post(t, base+"/ui/approvals/"+a.ID, url.Values{"decision": {"reject"}, "by": {"bob"}, "csrf": {csrf}}); code != http.StatusConflict {
		t.Errorf("second decision: HTTP %d, want 409", code)
	}
	if page := c.get(t, base+"/ui/approvals"); strings.Contains(page, a.ID) {
		t.Errorf("the decided approval is still listed as waiting")
	}

	// The run page: its steps, the approval as decided, the log from the
	// execution history and the console link. (The run's own status is
	// the recorder's to close; the page reads the execution's end from
	// its history.)
	run := c.get(t, base+"/ui/runs/"+url.PathEscape(ex.RunID))
	os.WriteFile(filepath.Join(h.Box.Logs, "serve-aws-run.html"), []byte(run), 0o644) // kept for reading
	console := "https://" + Region + ".console.aws.amazon.com/states/home?region=" + Region + "#/v2/executions/details/" + ex.ARN
	for _, want := range []string{
		">propose<", ">sign-off<", ">apply<", // the steps
		"<b>approved</b> by alice", // the decision
		`href="` + html.EscapeString(console) + `"`,
		"StateEntered", "TaskSucceeded", "ExecutionSucceeded", // the log
	} {
		if !strings.Contains(run, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("run page:\n%s", run)
	}
	// The pipelines page shows the stack's state machine with its graph.
	if pipelines := c.get(t, base+"/ui/pipelines"); !strings.Contains(pipelines, "box-approval") {
		t.Errorf("pipelines page lacks box-approval:\n%s", pipelines)
	}
}

// createOutputStack creates a stack whose outputs are outputs (and one
// SSM parameter: a template needs a resource) and waits for it.
func createOutputStack(ctx context.Context, h *Harness, name string, outputs map[string]string) error {
	tpl := map[string]any{
		"Resources": map[string]any{"Marker": map[string]any{"Type": "AWS::SSM::Parameter",
			"Properties": map[string]any{"Name": "/" + name + "/marker", "Type": "String", "Value": "serve --aws"}}},
	}
	outs := map[string]any{}
	for k, v := range outputs {
		outs[k] = map[string]any{"Value": v}
	}
	tpl["Outputs"] = outs
	b, err := json.Marshal(tpl)
	if err != nil {
		return err
	}
	if err := h.AWS.CreateStack(ctx, name, b, nil); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		s, err := h.AWS.DescribeStack(ctx, name)
		if err != nil {
			return err
		}
		switch s.Status {
		case "CREATE_COMPLETE":
			return nil
		case "CREATE_IN_PROGRESS":
		default:
			return fmt.Errorf("stack %s: %s %s", name, s.Status, s.Reason)
		}
	}
	return fmt.Errorf("stack %s not created within a minute", name)
}

// startServeAWS starts `stepline serve --aws` against the box on a free
// loopback port and returns its base URL; the test's end stops it.
func startServeAWS(t *testing.T, ctx context.Context, h *Harness, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, h.Tools.Stepline, append([]string{"serve", "--aws", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = h.Work
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "STEPLINE_TOKENS=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "AWS_ENDPOINT_URL="+h.Box.Endpoint, "AWS_REGION="+Region, "AWS_ACCESS_KEY_ID=box", "AWS_SECRET_ACCESS_KEY=box",
		"AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_EC2_METADATA_DISABLED=true")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	logf, err := os.Create(filepath.Join(h.Box.Logs, "serve-aws.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		logf.Close()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "web UI: "); ok && !sent {
				found <- strings.TrimSuffix(strings.TrimSuffix(u, "/"), "/ui")
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case base, ok := <-found:
		if !ok {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("serve --aws ended before serving:\n%s", b)
		}
		return base
	case <-time.After(time.Minute):
		t.Fatal("serve --aws did not start within a minute")
	}
	return ""
}

// formClient is a browser without JavaScript: cookies, no redirects
// followed.
type formClient struct{ c *http.Client }

func newFormClient(t *testing.T) *formClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &formClient{c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (f *formClient) get(t *testing.T, u string) string {
	t.Helper()
	resp, err := f.c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d\n%s", u, resp.StatusCode, b)
	}
	return string(b)
}

func (f *formClient) post(t *testing.T, u string, form url.Values) (int, string) {
	t.Helper()
	resp, err := f.c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Location")
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return html.UnescapeString(m[1])
}
