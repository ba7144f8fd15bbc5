package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

const stepColumns = `run_id, name, attempt, step_index, executor, status, error,
	primary_confidence, verifier_confidence, effective_confidence, output, verifier_output,
	raw_response, prompt, model, provider, input_tokens, output_tokens, cost_usd, flags,
	started_at, finished_at, duration_ms, agent, agent_version, iterations, trace, trace_ref, trust_report, prompt_hash`

// PutStep implements store.Store. The insert is skipped when the key is
// taken by a finished record; the stored record's digest, read in the same
// transaction, then tells a repeat from a conflict. A waiting record is
// replaced in the same statement. Under DeferWrites the record is checked
// at once and committed with the next write transaction (see
// DeferWrites).
func (s *Store) PutStep(ctx context.Context, rec store.StepRecord) error {
	rec, err := store.NormalizeStep(rec)
	if err != nil {
		return fmt.Errorf("put step: %w", err)
	}

	var flags any
	if len(rec.Flags) > 0 {
		b, err := json.Marshal(rec.Flags)
		if err != nil {
			return fmt.Errorf("put step %q: %w", rec.Name, err)
		}
		flags = string(b)
	}
	var trust any // the column: JSON, or NULL
	var trustJSON []byte
	if rec.Trust != nil {
		if trustJSON, err = json.Marshal(rec.Trust); err != nil {
			return fmt.Errorf("put step %q: %w", rec.Name, err)
		}
		trust = string(trustJSON)
	}
	digest, err := record.StepDigestTrust(rec, trustJSON)
	if err != nil {
		return fmt.Errorf("put step %q: %w", rec.Name, err)
	}
	args := []any{
		rec.RunID, rec.Name, rec.Attempt, rec.Index, rec.Executor, string(rec.Status), rec.Error,
		nullFloat(rec.PrimaryConfidence), nullFloat(rec.VerifierConfidence), nullFloat(rec.EffectiveConfidence),
		jsonText(rec.Output), jsonText(rec.VerifierOutput), rec.RawResponse, rec.Prompt, rec.Model, rec.Provider,
		rec.InputTokens, rec.OutputTokens, nullFloat(rec.CostUSD), flags,
		record.FormatTime(rec.StartedAt), record.FormatTime(rec.FinishedAt), rec.DurationMS,
		rec.Agent, rec.AgentVersion, rec.Iterations, jsonText(rec.Trace), rec.TraceRef, trust, rec.PromptHash, digest}
	if deferred(ctx) {
		// Committed with the next write transaction; a repeat and a
		// conflict alike leave the stored record as it is.
		s.stage(staged{
			run: rec.RunID,
			what: func() string {
				return fmt.Sprintf("put step %q attempt %d of run %q", rec.Name, rec.Attempt, rec.RunID)
			},
			fn: func(ctx context.Context, tx wtx) error {
				_, err := tx.StmtContext(ctx, s.cp.putStep).ExecContext(ctx, args...)
				return err
			},
		})
		return nil
	}
	var conflict bool
	err = s.write(ctx, func(ctx context.Context, tx wtx) error {
		res, err := tx.StmtContext(ctx, s.cp.putStep).ExecContext(ctx, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 1 {
			return err
		}
		var stored string
		err = tx.StmtContext(ctx, s.cp.stepDigest).QueryRowContext(ctx, rec.RunID, rec.Name, rec.Attempt).Scan(&stored)
		conflict = stored != digest
		return err
	})
	if err != nil {
		return fmt.Errorf("put step %q attempt %d of run %q: %w", rec.Name, rec.Attempt, rec.RunID, err)
	}
	if conflict {
		return fmt.Errorf("put step %q attempt %d of run %q: %w: a different record is stored", rec.Name, rec.Attempt, rec.RunID, store.ErrConflict)
	}
	return nil
}

// putStepSQL inserts a step record, or replaces a stored waiting record
// of the same run, name and attempt (prepared at Open).
var putStepSQL = `INSERT INTO steps (` + stepColumns + `, digest)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (run_id, name, attempt) DO UPDATE SET ` + replaceWaiting + `
	WHERE steps.status = 'waiting'`

// replaceWaiting sets every column of a stored waiting record to the
// new record's.
var replaceWaiting = func() string {
	var b strings.Builder
	for _, c := range strings.Split(stepColumns+", digest", ",") {
		c = strings.TrimSpace(c)
		switch c {
		case "run_id", "name", "attempt":
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = excluded." + c)
	}
	return b.String()
}()

// ListSteps implements store.Store.
func (s *Store) ListSteps(ctx context.Context, runID string) ([]store.StepRecord, error) {
	if err := s.settleRun(ctx, runID); err != nil {
		return nil, fmt.Errorf("list steps of run %q: %w", runID, err)
	}
	recs, err := listSteps(ctx, s.r, runID)
	if err != nil {
		return nil, fmt.Errorf("list steps of run %q: %w", runID, err)
	}
	return recs, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func listSteps(ctx context.Context, q querier, runID string) ([]store.StepRecord, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+stepColumns+` FROM steps WHERE run_id = ?`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []store.StepRecord
	for rows.Next() {
		var r store.StepRecord
		var status, started, finished string
		var pc, vc, ec, cost sql.NullFloat64
		var out, vout, flags, trace, trust sql.NullString
		if err := rows.Scan(&r.RunID, &r.Name, &r.Attempt, &r.Index, &r.Executor, &status, &r.Error,
			&pc, &vc, &ec, &out, &vout, &r.RawResponse, &r.Prompt, &r.Model, &r.Provider,
			&r.InputTokens, &r.OutputTokens, &cost, &flags, &started, &finished, &r.DurationMS,
			&r.Agent, &r.AgentVersion, &r.Iterations, &trace, &r.TraceRef, &trust, &r.PromptHash); err != nil {
			return nil, err
		}
		r.Status = store.StepStatus(status)
		r.PrimaryConfidence, r.VerifierConfidence, r.EffectiveConfidence = floatPtr(pc), floatPtr(vc), floatPtr(ec)
		r.CostUSD = floatPtr(cost)
		r.Output, r.VerifierOutput, r.Trace = rawJSON(out), rawJSON(vout), rawJSON(trace)
		if trust.Valid {
			r.Trust = new(store.TrustReport)
			if err := json.Unmarshal([]byte(trust.String), r.Trust); err != nil {
				return nil, fmt.Errorf("step %q trust report: %w", r.Name, err)
			}
		}
		if flags.Valid {
			if err := json.Unmarshal([]byte(flags.String), &r.Flags); err != nil {
				return nil, fmt.Errorf("step %q flags: %w", r.Name, err)
			}
		}
		if r.StartedAt, err = record.ParseTime(started); err != nil {
			return nil, err
		}
		if r.FinishedAt, err = record.ParseTime(finished); err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	store.SortSteps(recs)
	return recs, nil
}
