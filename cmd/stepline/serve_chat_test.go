package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/telegram"
	"github.com/stepline/stepline/shared/telegram/telegramtest"
)

// TestServeTelegram: serve in a project whose human_approval routes to
// Telegram sends the request to the chat and long-polls the bot; the
// Approve button resumes the run; the bot token shows nowhere.
func TestServeTelegram(t *testing.T) {
	const token = "6060:AAE-serve-cli-bot-token-abcd"
	bot := telegramtest.New(t, token)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pipelines"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"stepline.yaml": "human_approval:\n  default:\n    channel: telegram\n    telegram: {bot_token: '${OPS_BOT}', chat_id: -1005550001}\n",
		"pipelines/gate.yaml": "name: gate\nstage: production\nsteps:\n" +
			"  - {name: approve, executor: human, prompt_template: 'Ship it?', timeout_seconds: 600}\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{"OPS_BOT": token, "STEPLINE_TELEGRAM_API": bot.URL}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--dir", filepath.Join(dir, "state"), "--config", filepath.Join(dir, "stepline.yaml")},
			env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(k string) string { return vars[k] }})
	}()
	base := ""
	for deadline := time.Now().Add(20 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`serving on (http://\S+)`).FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("serve did not start:\n%s\n%s", out.String(), errOut.String())
	}
	resp, err := http.Post(base+"/pipelines/gate/runs", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&started)
	resp.Body.Close()
	var sent []telegramtest.Call
	for deadline := time.Now().Add(20 * time.Second); len(sent) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sent = bot.Calls("sendMessage")
	}
	if len(sent) == 0 {
		t.Fatalf("no request sent:\n%s", errOut.String())
	}
	if sent[0].Params["chat_id"] != "-1005550001" || !strings.Contains(sent[0].Params["text"].(string), "Ship it?") {
		t.Errorf("request %v", sent[0].Params)
	}
	row := sent[0].Params["reply_markup"].(map[string]any)["inline_keyboard"].([]any)[0].([]any)
	bot.Push(telegram.Update{CallbackQuery: &telegram.CallbackQuery{ID: "q1", From: telegram.User{ID: 1, Username: "dana"},
		Message: &telegram.Message{MessageID: 5, Chat: telegram.Chat{ID: -1005550001}}, Data: row[0].(map[string]any)["callback_data"].(string)}})
	status := ""
	for deadline := time.Now().Add(20 * time.Second); status != "completed" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, err := http.Get(base + "/runs/" + started.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Run struct{ Status string } }
		_ = json.NewDecoder(r.Body).Decode(&v)
		r.Body.Close()
		status = v.Run.Status
	}
	if status != "completed" {
		t.Fatalf("run %s is %q\n%s", started.RunID, status, errOut.String())
	}
	cancel()
	select {
	case c := <-done:
		if c != 0 {
			t.Errorf("serve exited %d: %s", c, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
	if all := out.String() + errOut.String(); strings.Contains(all, token) {
		t.Errorf("the bot token is in serve's output:\n%s", all)
	}
}
