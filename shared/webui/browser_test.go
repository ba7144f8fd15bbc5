package webui_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stepline/stepline/shared/store"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the README's screenshots to docs/screenshots")

// chromium finds a Chromium to drive: $STEPLINE_CHROMIUM, else the first
// of the usual names on PATH. Without one the browser test is skipped,
// except in CI (CI=true), where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STEPLINE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium found (install Debian's chromium package: make tools does, or set STEPLINE_CHROMIUM)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// shots is where the test's screenshots go: $STEPLINE_SCREENSHOTS, else
// a temporary directory.
func shots(t *testing.T) string {
	dir := os.Getenv("STEPLINE_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBrowser drives headless Chromium through the main flows: sign in,
// open a run and watch it reach its approval live, approve it on the
// page, watch it finish live with the graph coloured, decide another
// run's approval from the approvals page.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	if testing.Short() {
		t.Skip("a browser test")
	}
	dir := shots(t)
	ts := serve(t, testTokens, 700*time.Millisecond)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 1000), chromedp.Flag("hide-scrollbars", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first Run starts the browser; it must not have a deadline.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	shot := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			png, err := chromedp.CaptureScreenshot()(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
				return chromedp.Void{}, err
			}
			if *updateScreenshots {
				return chromedp.Void{}, os.WriteFile(filepath.Join("..", "..", "docs", "screenshots", name+".png"), png, 0o644)
			}
			return chromedp.Void{}, nil
		}
	}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	class := func(state string) string {
		t.Helper()
		return eval(`document.querySelector('svg.graph g[data-state="` + state + `"]').getAttribute("class")`)
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	// mark sets a value on the page's window: it survives only while no
	// navigation happens, so finding it again proves the page changed
	// live.
	mark := chromedp.Steps(func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](`window.stillHere = true`)(ctx, tg)
		return chromedp.Void{}, err
	})
	still := func() bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.stillHere === true)`))
		return err == nil && v == "true" // an error: the page is going away
	}

	do("sign in",
		chromedp.Navigate(ts.base+"/ui/runs"),
		chromedp.WaitVisible(css(`input[name=token]`)),
		chromedp.SendKeys(css(`input[name=token]`), tokOps),
		chromedp.Submit(css(`input[name=token]`)),
		chromedp.WaitVisible(css(`table#runs`)),
	)

	// The runs list picks a new run up by itself.
	do("mark the list", mark)
	id := ts.startRun(t, tokOps, `{"summary": "checkout-api p99 above 2s since the 17:30 deploy", "severity": "critical"}`)
	do("the new run shows in the list", chromedp.WaitVisible(css(`table#runs a[href="/ui/runs/`+id+`"]`)))
	if !still() {
		t.Fatal("the runs list reloaded: the new run should have come by the list's refresh")
	}
	do("open the run while it runs",
		chromedp.Navigate(ts.base+"/ui/runs/"+id),
		chromedp.WaitVisible(css(`#live[data-sse]`)),
		mark,
		// The approval form arrives through the live view.
		chromedp.WaitVisible(css(`#live .approval button.approve`)),
	)
	if !still() {
		t.Fatal("the page reloaded: the approval should have come live")
	}
	if c := class("triage"); !strings.Contains(c, "s-completed") {
		t.Errorf("triage's node: class %q, want s-completed", c)
	}
	if c := class("approve"); !strings.Contains(c, "s-waiting") {
		t.Errorf("approve's node: class %q, want s-waiting", c)
	}
	if c := class("notify"); !strings.Contains(c, "s-none") {
		t.Errorf("notify's node before the approval: class %q, want s-none", c)
	}
	reply := eval(`[...document.querySelectorAll("pre.reply")].map(p => p.textContent).join("")`)
	if !strings.Contains(reply, `<script>alert(`) {
		t.Errorf("the reply is not shown as text: %q", reply)
	}
	if n := eval(`String(document.querySelectorAll("#live script").length)`); n != "0" {
		t.Errorf("the reply's script became an element (%s)", n)
	}
	do("screenshot waiting", chromedp.ScrollIntoView(css(`#live .approval`)), shot("run-waiting"))

	do("approve on the run's page",
		chromedp.SendKeys(css(`#live .approval input[name=by]`), "Dana"),
		chromedp.Click(css(`#live .approval button.approve`)),
	)
	// The form posts and comes back to the run's page, a new document.
	for deadline := time.Now().Add(10 * time.Second); still(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the approval form did not post")
		}
	}
	do("watch the run finish",
		chromedp.WaitVisible(css(`#live[data-sse]`)),
		mark,
		chromedp.WaitVisible(css(`#live[data-ended="completed"]`)),
	)
	if !still() {
		t.Error("the run's end should have come live")
	}
	ts.waitStatus(t, id, store.RunCompleted)
	if c := class("notify"); !strings.Contains(c, "s-completed") {
		t.Errorf("notify's node: class %q, want s-completed", c)
	}
	if got := eval(`document.querySelector("#live h1 .badge").textContent`); got != "completed" {
		t.Errorf("status badge %q", got)
	}
	do("screenshot", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`), shot("run-detail"))

	// A second run waits; it is rejected from the approvals page.
	id2 := ts.startRun(t, tokOps, `{"summary": "disk 91% on db-2", "severity": "warning"}`)
	ts.waitStatus(t, id2, store.RunWaiting)
	sel := `[id="approval-` + approvalID(t, ts, id2) + `"]`
	do("approvals page",
		chromedp.Navigate(ts.base+"/ui/approvals"),
		chromedp.WaitVisible(css(sel+` button.approve`)),
		shot("approvals"),
		chromedp.Click(css(sel+` button.reject`)),
		chromedp.WaitVisible(css(`main h1`)),
	)
	deadline := time.Now().Add(15 * time.Second)
	for {
		r2, err := ts.runner.Store.GetRun(context.Background(), id2)
		if err == nil && r2.Status.Terminal() {
			if r2.Status == store.RunCompleted {
				t.Errorf("a rejected run completed")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rejected run did not end: %q", r2.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Earlier runs, for the list's screenshot.
	for i, r := range []struct {
		status store.RunStatus
		reason string
	}{
		{store.RunCompleted, ""},
		{store.RunEscalated, `step "triage" escalated: confidence 0.41 is below the threshold 0.5`},
		{store.RunStopped, "no action needed: the alert resolved itself"},
		{store.RunFailed, `step "notify" failed: ExecutorUnavailable: webhook answered HTTP 503`},
	} {
		start := time.Now().Add(-time.Duration(i+1) * 47 * time.Minute)
		end := start.Add(time.Duration(20+i*13) * time.Second)
		err := ts.runner.Store.CreateRun(context.Background(), store.Run{ID: fmt.Sprintf("run-%024x", 0x5eed0+i), Pipeline: "incident-review",
			Status: r.status, Reason: r.reason, Team: "ops", Stage: "production", Source: "alertmanager", StartedAt: start, CompletedAt: &end})
		if err != nil {
			t.Fatal(err)
		}
	}
	do("runs list and pipeline",
		chromedp.Navigate(ts.base+"/ui/runs"),
		chromedp.WaitVisible(css(`table#runs`)),
		shot("runs"),
		chromedp.Navigate(ts.base+"/ui/pipelines/incident-review"),
		chromedp.WaitVisible(css(`svg.graph`)),
		shot("pipeline"),
	)
	t.Logf("screenshots in %s", dir)
}

func approvalID(t *testing.T, ts *testServer, runID string) string {
	t.Helper()
	as, err := ts.runner.Store.RunApprovals(context.Background(), runID)
	if err != nil || len(as) == 0 {
		t.Fatalf("approvals of %s: %v", runID, err)
	}
	return as[len(as)-1].ID
}
