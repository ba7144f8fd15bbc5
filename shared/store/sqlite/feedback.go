package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// schemaFeedback (version 6) records the prompt hash of every step
// record, feedback on runs and steps (an empty step is the run's), and the
// calibration samples of steps by bucket. A sample's labels are read
// through joins with the feedback table, so feedback is written once.
const schemaFeedback = `
ALTER TABLE steps ADD COLUMN prompt_hash TEXT NOT NULL DEFAULT '';

CREATE TABLE feedback (
	run_id       TEXT NOT NULL,
	step         TEXT NOT NULL,
	outcome      TEXT NOT NULL,
	notes        TEXT NOT NULL DEFAULT '',
	submitted_at TEXT NOT NULL,
	PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE samples (
	bucket               TEXT NOT NULL,
	started_at           TEXT NOT NULL,
	run_id               TEXT NOT NULL,
	step                 TEXT NOT NULL,
	pipeline             TEXT NOT NULL,
	bucket_step          TEXT NOT NULL,
	executor             TEXT NOT NULL DEFAULT '',
	model                TEXT NOT NULL DEFAULT '',
	provider             TEXT NOT NULL DEFAULT '',
	prompt_hash          TEXT NOT NULL DEFAULT '',
	agent_version        TEXT NOT NULL DEFAULT '',
	trust                REAL NOT NULL,
	deterministic_failed INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (bucket, started_at, run_id, step)
) WITHOUT ROWID;
CREATE INDEX samples_by_pipeline ON samples (pipeline, bucket_step, bucket);
`

// PutRunFeedback implements store.FeedbackStore.
func (s *Store) PutRunFeedback(ctx context.Context, runID string, f store.Feedback) error {
	if err := s.putFeedback(ctx, runID, "", f); err != nil {
		return fmt.Errorf("put feedback on run %q: %w", runID, err)
	}
	return nil
}

// PutStepFeedback implements store.FeedbackStore.
func (s *Store) PutStepFeedback(ctx context.Context, runID, step string, f store.Feedback) error {
	if step == "" {
		return fmt.Errorf("put feedback on a step of run %q: %w: empty step name", runID, store.ErrInvalid)
	}
	if err := s.putFeedback(ctx, runID, step, f); err != nil {
		return fmt.Errorf("put feedback on step %q of run %q: %w", step, runID, err)
	}
	return nil
}

func (s *Store) putFeedback(ctx context.Context, runID, step string, f store.Feedback) error {
	f, err := store.NormalizeFeedback(f)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, tx wtx) error {
		if err := runExists(ctx, tx, runID); err != nil {
			return err
		}
		if step != "" {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM steps WHERE run_id = ? AND name = ? LIMIT 1`, runID, step).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: the run has no record of the step", store.ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO feedback (run_id, step, outcome, notes, submitted_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (run_id, step) DO UPDATE SET outcome = excluded.outcome, notes = excluded.notes, submitted_at = excluded.submitted_at`,
			runID, step, string(f.Outcome), f.Notes, record.FormatTime(f.SubmittedAt))
		return err
	})
}

func runExists(ctx context.Context, tx wtx, runID string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, runID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// GetRunFeedback implements store.FeedbackStore.
func (s *Store) GetRunFeedback(ctx context.Context, runID string) (*store.Feedback, error) {
	f, err := s.getFeedback(ctx, runID, "")
	if err != nil {
		return nil, fmt.Errorf("get feedback on run %q: %w", runID, err)
	}
	return f, nil
}

// GetStepFeedback implements store.FeedbackStore.
func (s *Store) GetStepFeedback(ctx context.Context, runID, step string) (*store.Feedback, error) {
	if step == "" {
		return nil, fmt.Errorf("get feedback on a step of run %q: %w: empty step name", runID, store.ErrInvalid)
	}
	f, err := s.getFeedback(ctx, runID, step)
	if err != nil {
		return nil, fmt.Errorf("get feedback on step %q of run %q: %w", step, runID, err)
	}
	return f, nil
}

func (s *Store) getFeedback(ctx context.Context, runID, step string) (*store.Feedback, error) {
	if err := s.settleRun(ctx, runID); err != nil {
		return nil, fmt.Errorf("feedback of run %q: %w", runID, err)
	}
	var outcome, notes, at string
	var exists int
	err := s.r.QueryRowContext(ctx, `SELECT 1, COALESCE(f.outcome, ''), COALESCE(f.notes, ''), COALESCE(f.submitted_at, '')
		FROM runs r LEFT JOIN feedback f ON f.run_id = r.id AND f.step = ? WHERE r.id = ?`, step, runID).Scan(&exists, &outcome, &notes, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if outcome == "" {
		return nil, nil
	}
	t, err := record.ParseTime(at)
	if err != nil {
		return nil, err
	}
	return &store.Feedback{Outcome: store.Outcome(outcome), Notes: notes, SubmittedAt: t}, nil
}

// RecordSample implements store.FeedbackStore. Feedback lives in its own
// table, so rewriting a sample cannot lose it.
func (s *Store) RecordSample(ctx context.Context, smp store.Sample) error {
	if err := s.settle(ctx); err != nil {
		return fmt.Errorf("record sample: %w", err)
	}
	smp, err := store.NormalizeSample(smp)
	if err != nil {
		return fmt.Errorf("record sample: %w", err)
	}
	b := smp.Bucket
	det := 0
	if smp.DeterministicFailed {
		det = 1
	}
	err = s.write(ctx, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO samples (bucket, started_at, run_id, step, pipeline, bucket_step, executor, model, provider,
		prompt_hash, agent_version, trust, deterministic_failed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (bucket, started_at, run_id, step) DO UPDATE SET trust = excluded.trust, deterministic_failed = excluded.deterministic_failed`,
			b.Key(), record.FormatTime(smp.StartedAt), smp.RunID, smp.Step, b.Pipeline, b.Step, b.Executor, b.Model, b.Provider,
			b.PromptHash, b.AgentVersion, smp.Trust, det)
		return err
	})
	if err != nil {
		return fmt.Errorf("record sample of step %q of run %q: %w", smp.Step, smp.RunID, err)
	}
	return nil
}

// BucketSamples implements store.FeedbackStore: one query over the
// bucket's samples joined with their step's and run's feedback.
func (s *Store) BucketSamples(ctx context.Context, b store.Bucket) ([]store.Sample, error) {
	if err := s.settle(ctx); err != nil {
		return nil, fmt.Errorf("bucket samples: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT * FROM (
		SELECT s.started_at, s.run_id, s.step, s.trust, s.deterministic_failed, COALESCE(sf.outcome, ''), COALESCE(rf.outcome, '')
		FROM samples s
		LEFT JOIN feedback sf ON sf.run_id = s.run_id AND sf.step = s.step
		LEFT JOIN feedback rf ON rf.run_id = s.run_id AND rf.step = ''
		WHERE s.bucket = ? ORDER BY s.started_at DESC, s.run_id DESC, s.step DESC LIMIT ?)
		ORDER BY 1, 2, 3`, b.Key(), store.MaxBucketSamples)
	if err != nil {
		return nil, fmt.Errorf("read bucket %s: %w", b, err)
	}
	defer rows.Close()
	var out []store.Sample
	for rows.Next() {
		smp := store.Sample{Bucket: b}
		var at, sf, rf string
		var det int
		if err := rows.Scan(&at, &smp.RunID, &smp.Step, &smp.Trust, &det, &sf, &rf); err != nil {
			return nil, fmt.Errorf("read bucket %s: %w", b, err)
		}
		if smp.StartedAt, err = record.ParseTime(at); err != nil {
			return nil, fmt.Errorf("read bucket %s: %w", b, err)
		}
		smp.DeterministicFailed = det != 0
		smp.StepFeedback, smp.RunFeedback = store.Outcome(sf), store.Outcome(rf)
		out = append(out, smp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read bucket %s: %w", b, err)
	}
	return out, nil
}

// ListBuckets implements store.FeedbackStore.
func (s *Store) ListBuckets(ctx context.Context, pipeline, step string) ([]store.Bucket, error) {
	if err := s.settle(ctx); err != nil {
		return nil, fmt.Errorf("list buckets: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT bucket, pipeline, bucket_step, executor, model, provider, prompt_hash, agent_version
		FROM samples WHERE pipeline = ? AND (? = '' OR bucket_step = ?) ORDER BY bucket_step, bucket`, pipeline, step, step)
	if err != nil {
		return nil, fmt.Errorf("list buckets of pipeline %q: %w", pipeline, err)
	}
	defer rows.Close()
	var out []store.Bucket
	for rows.Next() {
		var key string
		var b store.Bucket
		if err := rows.Scan(&key, &b.Pipeline, &b.Step, &b.Executor, &b.Model, &b.Provider, &b.PromptHash, &b.AgentVersion); err != nil {
			return nil, fmt.Errorf("list buckets of pipeline %q: %w", pipeline, err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list buckets of pipeline %q: %w", pipeline, err)
	}
	return out, nil
}
