// Package readiness judges a pipeline's promotion-readiness criteria (the
// readiness: block) against the runs it recorded. It is advisory: nothing
// here gates a run or changes one; `stepline readiness PIPELINE` prints
// what it finds.
//
// The work is split in two. Gather is the only I/O: it reads the
// pipeline's runs (store.ListRuns, at most store.MaxRunLimit, newest
// first), their step records (ListSteps) and, when the accuracy or
// calibration tier is configured and the store keeps feedback, the runs'
// and steps' feedback. Evaluate is pure: it applies the criteria to that
// Evidence at a given time, so every verdict is unit-tested without a
// store.
//
// # What counts
//
// Evidence is the pipeline's own runs at its own stage (a testing
// pipeline is judged on its testing runs, a production one on its
// production runs) that have ended (completed, stopped, escalated,
// aborted, failed). Each tier is judged per step — each top-level step,
// parallel group or fan-out, by its own record (a group's join record;
// branches and items are not judged apart) — with the pipeline's tiers;
// the pipeline's verdict for a tier is the worst of its steps' (fail,
// then insufficient_data, then pass). In a run a step is represented by
// its last attempt; a step skipped by when: (or never reached) has no
// result in that run.
//
// "Current config" is the run's compiled definition: a run records the
// fingerprint of the state machine it ran (store.Run.ConfigFingerprint,
// compiler.ConfigOf); a tier with require_current_config counts only
// runs of the definition the pipeline compiles to now. Editing any step
// (a prompt, a model, a threshold) or upgrading Stepline in a way that
// changes the compiled form starts a new config; editing readiness:
// itself does not. Runs recorded before runs carried the fingerprint
// never count as current.
//
// # Tiers
//
//   - operational: runs in which the step ended in one of
//     acceptable_statuses (newer than max_age_days, when set). pass at
//     min_runs such runs, else insufficient_data; it never fails (as in
//     the reference): runs that ended otherwise simply do not count.
//   - confidence: the mean effective confidence (after the verifier,
//     before grounding, checks and calibration change the trust: the
//     trust report's S_after_V) of the step's answers; failed results
//     have no answer and do not count. insufficient_data with no result
//     or fewer than min_runs; fail below min_confidence; pass at or
//     above it.
//   - accuracy: the mean label of the step's marked results. A result's
//     label is, by precedence, the feedback given on the step (a person's
//     mark: correct 1, partial 0.5, incorrect 0), 0 for a failed
//     deterministic check, then the feedback given on its run.
//     insufficient_data below min_marked marked results or below
//     min_human_marked step feedbacks; fail below min_accuracy (when
//     set); pass otherwise.
//   - calibration: the marked results with a confidence, in bins of
//     bin_width ([lo, hi), the last bin including 1). A bin with at least
//     n_min of them is validated; its divergence is the distance between
//     its mean label and its midpoint. fail when a validated bin diverges
//     by max_divergence or more, pass when at least one bin is validated
//     and none diverges, else insufficient_data. require_current_config
//     is always true; require_own_evidence has no effect: evidence is
//     always the pipeline's own (the reference may also borrow production
//     evidence of an identical configuration from another pipeline).
//
// The confidence, accuracy and calibration tiers judge answers that carry
// a confidence of their own: on a human, webhook, notify or sub-pipeline
// step (a group of such branches) they do not apply (not_configured,
// saying why), and when no step of the pipeline has one the pipeline's
// verdict is insufficient_data; compiler warns about that at validate
// time.
//
// Each step also has an overall verdict: not_ready (a tier fails),
// building (a tier lacks data and the step has results), no_data (it has
// none), ready (every configured tier passes) or not_configured.
package readiness
