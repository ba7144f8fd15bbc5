package steprun

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

// TestMutedNotificationsRecorded: when a step ends a testing pipeline's
// run, the notifications it fires are muted — logged at warning level,
// never sent — and its record names each one
// (notification_muted:<action>:<channel>), as the reference runner
// records notification_suppressed_testing with the run. In production
// they are sent and the record carries no such flag.
func TestMutedNotificationsRecorded(t *testing.T) {
	for _, stage := range []pipeline.Stage{pipeline.StageTesting, pipeline.StageProduction} {
		t.Run(string(stage), func(t *testing.T) {
			var sent atomic.Int32
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent.Add(1) }))
			defer hook.Close()
			var logs bytes.Buffer
			e := newEnv(t, `triage: [{confidence: 0.4, summary: unsure, next_step_context: ""}]`)
			e.h.Notifications = &notify.Dispatcher{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
			req := newRequest(t, task.ModeStep, seqStep("triage", "Triage {{ severity }}"))
			req.Pipeline.Stage = stage
			req.Pipeline.Notifications = []pipeline.Action{
				{Name: "escalate", Notices: []pipeline.Notification{
					{Channel: pipeline.ChannelWebhook, Template: "escalated", Config: map[string]any{"url": hook.URL}},
					{Channel: pipeline.ChannelLog, Template: "escalated"},
				}},
			}
			resp, err := e.h.Respond(context.Background(), req)
			if err != nil || resp.Status != task.StatusEscalated {
				t.Fatalf("step: %q, %v", resp.Status, err)
			}
			rec := stepRecords(t, e.st, "triage")[0]
			want := []string{FlagNotificationMuted + ":escalate:webhook", FlagNotificationMuted + ":escalate:log"}
			for _, f := range want {
				if got := slices.Contains(rec.Flags, f); got != (stage == pipeline.StageTesting) {
					t.Errorf("flag %s on the record: %v, flags %v", f, got, rec.Flags)
				}
			}
			wantSent := int32(0)
			if stage == pipeline.StageProduction {
				wantSent = 1
			}
			if n := sent.Load(); n != wantSent {
				t.Errorf("%d webhook requests, want %d", n, wantSent)
			}
			if muted := strings.Count(logs.String(), "notification muted: stage testing"); (muted == 2) != (stage == pipeline.StageTesting) {
				t.Errorf("muted lines at warning level: %d\n%s", muted, logs.String())
			}
		})
	}
}

// TestRunRecordsConfig: the run record the first step creates names the
// compiled definition the run runs ($pipeline.config), which readiness's
// require_current_config compares with the pipeline's current one.
func TestRunRecordsConfig(t *testing.T) {
	e := newEnv(t, `triage: [{confidence: 0.9, summary: fine, next_step_context: ""}]`)
	req := newRequest(t, task.ModeStep, seqStep("triage", "Triage"))
	req.Pipeline.Config = "0123456789ab"
	if _, err := e.h.Respond(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := getRun(t, e.st).ConfigFingerprint; got != "0123456789ab" {
		t.Errorf("run's config fingerprint %q, want 0123456789ab", got)
	}
}

// fired records the notifications a Handler fires.
type fired struct{ actions, reasons []string }

func (f *fired) Fire(_ context.Context, _ task.Pipeline, action string, data notify.Context) []notify.Delivery {
	f.actions = append(f.actions, action)
	f.reasons = append(f.reasons, data.EscalationReason)
	return nil
}

// TestBudgetNotification: a run the budget ends fires notify with the
// escalation reason budget_exceeded; a step that stops the run with a
// reason that merely says "budget exceeded" fires stopped, as any stop.
func TestBudgetNotification(t *testing.T) {
	for _, tc := range []struct {
		name, reply         string
		budget              bool
		status, action, why string
	}{
		{"over budget", `{confidence: 0.9, summary: fine, next_step_context: ""}`, true, task.StatusAborted, notify.ActionNotify, "budget_exceeded"},
		{"a stop that says budget exceeded", `{confidence: 0.9, summary: fine, next_step_context: "", proceed: false, proceed_reason: "the cloud budget exceeded its cap"}`, false, task.StatusStopped, notify.ActionStopped, task.StatusStopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, `triage: [`+tc.reply+`]`)
			f := &fired{}
			e.h.Notifications = f
			req := newRequest(t, task.ModeStep, seqStep("triage", "Triage"))
			req.Pipeline.Notifications = []pipeline.Action{{Name: tc.action, Notices: []pipeline.Notification{{Channel: pipeline.ChannelLog, Template: "x"}}}}
			if tc.budget {
				req.Pipeline.Budget = &pipeline.Budget{MaxTokens: ptr(int64(50000))}
				req.Usage = task.Usage{InputTokens: 50000, OutputTokens: 8500}
			}
			resp, err := e.h.Respond(context.Background(), req)
			if err != nil || resp.Status != tc.status {
				t.Fatalf("step: %q, %v", resp.Status, err)
			}
			if !slices.Equal(f.actions, []string{tc.action}) || !slices.Equal(f.reasons, []string{tc.why}) {
				t.Errorf("fired %v with reasons %v, want [%s] with [%s]", f.actions, f.reasons, tc.action, tc.why)
			}
		})
	}
}
