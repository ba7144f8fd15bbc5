package store

// FlagReused marks a step record a rerun copied from the run it reruns:
// the step did not run again, its output was reused (see CopyForRerun).
const FlagReused = "reused"

// CopyForRerun returns rec as the record of a step a rerun reuses: the same
// step, outcome and output, recorded in run runID as its first attempt,
// flagged FlagReused. Usage is left out: the rerun spent nothing on it.
// Its Index is 0, so that it is listed before the rerun's own records,
// and among the other reused ones by its StartedAt (kept): the
// milliseconds it started at into the original run say nothing of the
// rerun (see SortSteps).
func CopyForRerun(rec StepRecord, runID string) StepRecord {
	rec.RunID = runID
	rec.Attempt = 1
	rec.Index = 0
	rec.InputTokens, rec.OutputTokens, rec.CostUSD = 0, 0, nil
	flags := make([]string, 0, len(rec.Flags)+1)
	for _, f := range rec.Flags {
		if f != FlagReused {
			flags = append(flags, f)
		}
	}
	rec.Flags = append(flags, FlagReused)
	return rec
}
