package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/telegram"
	"github.com/stepline/stepline/shared/telegram/telegramtest"
)

// TestImportVectorStepTelegramApproval imports the importer's reference
// project, whose config.yaml sends approvals to Telegram, and serves the
// imported project: the imported release-gate pipeline's human step sends
// its request with Approve and Reject buttons to the chat config.yaml
// named; a forged button press is refused and leaves the run waiting;
// Approve completes the run, decided by the Telegram user who pressed it.
func TestImportVectorStepTelegramApproval(t *testing.T) {
	const token = "7070:AAE-imported-approval-bot-token"
	const chat = -1005550001 // human_approval.default.telegram.chat_id
	dest := t.TempDir()
	var out, errOut bytes.Buffer
	dispatch(context.Background(), []string{"import", "vectorstep", "../../shared/importer/testdata/vectorstep", dest}, offlineEnv(t, &out, &errOut))
	if !strings.Contains(out.String(), "pipelines/release-gate.yaml: valid") {
		t.Fatalf("release-gate was not imported valid:\n%s\n%s", out.String(), errOut.String())
	}
	// serve loads every pipeline of the project: it serves the imported
	// pipelines that validate, as after a person removed the others.
	entries, err := os.ReadDir(filepath.Join(dest, "pipelines"))
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	for _, e := range entries {
		if strings.Contains(out.String(), "pipelines/"+e.Name()+": valid\n") {
			served++
			continue
		}
		if err := os.Remove(filepath.Join(dest, "pipelines", e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if served < 2 {
		t.Fatalf("%d imported pipelines validate:\n%s", served, out.String())
	}

	bot := telegramtest.New(t, token)
	// The secrets the import asked a person to store; the Slack and
	// Microsoft Teams routes of other teams are not used here.
	vars := map[string]string{"APPROVAL_BOT_TOKEN": token, "STEPLINE_TELEGRAM_API": bot.URL,
		"SLACK_BOT_TOKEN": "xoxb-unused", "SLACK_SIGNING_SECRET": "unused-signing-secret",
		"TEAMS_APPROVAL_WEBHOOK": "https://teams.invalid/unused"}
	state := filepath.Join(t.TempDir(), "state")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sout, serr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--dir", state, "--config", filepath.Join(dest, "stepline.yaml")},
			env{stdin: strings.NewReader(""), stdout: &sout, stderr: &serr, getenv: func(k string) string { return vars[k] }})
	}()
	base := ""
	for deadline := time.Now().Add(20 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`serving on (http://\S+)`).FindStringSubmatch(sout.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("serve did not start:\n%s\n%s", sout.String(), serr.String())
	}
	resp, err := http.Post(base+"/pipelines/release-gate/runs", "application/json", strings.NewReader(`{"source": "generic", "event": "release.ready", "summary": "4.2 is ready", "labels": {"service": "checkout"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&started)
	resp.Body.Close()
	if started.RunID == "" {
		t.Fatalf("no run started: HTTP %d\n%s", resp.StatusCode, serr.String())
	}
	status := func() string {
		r, err := http.Get(base + "/runs/" + started.RunID)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var v struct{ Run struct{ Status string } }
		_ = json.NewDecoder(r.Body).Decode(&v)
		return v.Run.Status
	}

	var sent []telegramtest.Call
	for deadline := time.Now().Add(20 * time.Second); len(sent) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sent = bot.Calls("sendMessage")
	}
	if len(sent) != 1 {
		t.Fatalf("%d requests sent, want 1:\n%s", len(sent), serr.String())
	}
	p := sent[0].Params
	if p["chat_id"] != fmt.Sprint(chat) || !strings.Contains(fmt.Sprint(p["text"]), "Release checkout: 4.2 is ready?") {
		t.Errorf("request %v", p)
	}
	markup, _ := p["reply_markup"].(map[string]any)
	rows, _ := markup["inline_keyboard"].([]any)
	if len(rows) == 0 {
		t.Fatalf("the request has no buttons: %v", p)
	}
	buttons := map[string]string{} // label → callback_data
	for _, b := range rows[0].([]any) {
		b := b.(map[string]any)
		if d, ok := b["callback_data"].(string); ok {
			buttons[fmt.Sprint(b["text"])] = d
		}
	}
	approve := ""
	for label, d := range buttons {
		if strings.Contains(label, "Approve") {
			approve = d
		}
	}
	if approve == "" || len(buttons) != 2 {
		t.Fatalf("buttons %v, want Approve and Reject", buttons)
	}
	press := func(id, data string) {
		bot.Push(telegram.Update{CallbackQuery: &telegram.CallbackQuery{ID: id, From: telegram.User{ID: 77, Username: "dana"},
			Message: &telegram.Message{MessageID: 5, Chat: telegram.Chat{ID: chat}}, Data: data}})
	}
	answer := func(id string) map[string]any {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, c := range bot.Calls("answerCallbackQuery") {
				if c.Params["callback_query_id"] == id {
					return c.Params
				}
			}
		}
		t.Fatalf("button press %s was not answered:\n%s", id, serr.String())
		return nil
	}

	// A forged press: the Approve button's data with its last character
	// changed.
	last := approve[len(approve)-1]
	forged := approve[:len(approve)-1] + map[bool]string{true: "B", false: "A"}[last == 'A']
	press("forged", forged)
	if a := answer("forged"); a["show_alert"] != true || !strings.Contains(fmt.Sprint(a["text"]), "not valid") {
		t.Errorf("forged press answered %v", a)
	}
	if s := status(); s == "completed" {
		t.Fatalf("a forged press completed the run")
	}

	press("real", approve)
	if a := answer("real"); a["show_alert"] == true {
		t.Errorf("approve answered %v", a)
	}
	s := ""
	for deadline := time.Now().Add(20 * time.Second); s != "completed" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s = status()
	}
	if s != "completed" {
		t.Fatalf("run %s is %q\n%s", started.RunID, s, serr.String())
	}
	cancel()
	select {
	case c := <-done:
		if c != 0 {
			t.Errorf("serve exited %d: %s", c, serr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}

	st, err := sqlite.Open(context.Background(), filepath.Join(state, "stepline.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	steps, err := st.ListSteps(context.Background(), started.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].Name != "approve" || steps[0].Status != "completed" {
		t.Fatalf("steps %+v", steps)
	}
	var decided struct {
		DecidedBy string `json:"decided_by"`
		Proceed   bool   `json:"proceed"`
	}
	if err := json.Unmarshal(steps[0].Output, &decided); err != nil || decided.DecidedBy != "@dana (Telegram)" || !decided.Proceed {
		t.Errorf("the approval step's output %s (%v), want approved by @dana (Telegram)", steps[0].Output, err)
	}
	edited := false
	for _, c := range bot.Calls("editMessageText") {
		edited = edited || strings.Contains(fmt.Sprint(c.Params["text"]), "Approved</b> by @dana (Telegram)")
	}
	if !edited {
		t.Errorf("the request message was not edited to show the decision: %v", bot.Calls("editMessageText"))
	}
	if all := sout.String() + serr.String(); strings.Contains(all, token) {
		t.Errorf("the bot token is in serve's output:\n%s", all)
	}
}
