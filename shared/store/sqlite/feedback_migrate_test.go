package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// TestMigrateVersion5Feedback opens a file written by schema version 5,
// before feedback and prompt hashes: its record, with a version 1 trust
// report, reads back unchanged (no prompt hash, C null), a repeat of it
// is still a repeat, and the run takes feedback.
func TestMigrateVersion5Feedback(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const v1 = `{"version":1,"mode":"shadow","signals":{"S":0.9,"S_after_V":0.9,"V":null,"G":null,"C":null,"D":null},"combined_trust":0.9,` +
		`"gate":{"policy":"legacy_confidence","confidence_threshold":0.75,"on_low_confidence":"escalate","decision":"completed"}}`
	rec := store.StepRecord{RunID: "r1", Name: "triage", Attempt: 1, Status: store.StepCompleted, Executor: "gateway", StartedAt: at, FinishedAt: at,
		Trust: &store.TrustReport{Version: 1, Mode: store.TrustShadow, Signals: store.TrustSignals{S: 0.9, SAfterV: 0.9}, CombinedTrust: 0.9,
			Gate: store.TrustGate{Policy: store.PolicyLegacyConfidence, ConfidenceThreshold: 0.75, OnLowConfidence: "escalate", Decision: "completed"}}}
	norm, err := store.NormalizeStep(rec)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := record.StepDigest(norm)
	if err != nil {
		t.Fatal(err)
	}
	s := migrated(t, 5, func(ctx context.Context, tx wtx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, pipeline, status, started_at) VALUES ('r1', 'p', 'completed', ?)`, record.FormatTime(at)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO steps (run_id, name, attempt, step_index, executor, status, started_at, finished_at, digest, trust_report)
			VALUES ('r1', 'triage', 1, 0, 'gateway', 'completed', ?, ?, ?, ?)`, record.FormatTime(at), record.FormatTime(at), digest, v1)
		return err
	})
	if err := s.PutStep(ctx, rec); err != nil {
		t.Fatalf("the same record again: %v", err)
	}
	got, err := s.ListSteps(ctx, "r1")
	if err != nil || len(got) != 1 {
		t.Fatalf("%d steps, %v", len(got), err)
	}
	if got[0].PromptHash != "" || got[0].Trust == nil || got[0].Trust.Version != 1 || got[0].Trust.Signals.C != nil || got[0].Trust.Calibration != nil {
		t.Errorf("read back %+v, trust %+v", got[0], got[0].Trust)
	}
	if err := s.PutStepFeedback(ctx, "r1", "triage", store.Feedback{Outcome: store.OutcomeCorrect, SubmittedAt: at}); err != nil {
		t.Fatal(err)
	}
}
