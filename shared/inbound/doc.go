// Package inbound turns inbound events into pipeline runs: it authenticates
// the sender, normalizes the payload into a [Context] (the run's trigger),
// picks the pipeline, applies the stage gate, deduplicates and starts the
// run through a [Starter].
//
// It reads no files and compiles nothing: it takes pipelines already
// compiled, so that the ingest function, which routes with the compiled
// models of its bundles (package shared/catalog), links no compiler and no
// YAML parser. Package shared/intake adds what reads files (pipeline
// directories compiled through package gate, YAML tokens files) and
// names this package's API for the callers that use both.
//
// # Normalizers
//
// [NormalizeAlertmanager] reads an Alertmanager webhook (payload version 4).
// With strategy "most_severe" (the default) the context describes one alert:
// the firing alert of the lowest severity rank (critical, then warning, then
// info, then anything else; resolved alerts only when none fires), ties
// going to the earlier alert. Its labels, its summary (annotation summary,
// else description) and its fingerprint plus ":firing" or ":resolved" make
// the context. With strategy "common_labels" the context describes the group:
// the common labels, the common annotations' summary, and the group key plus
// the group status as fingerprint; a severity or summary the group does not
// share is the most severe alert's. Either way metadata carries the group's
// status, receiver, group key, group/common labels and annotations, external
// URL, counts and times.
//
// [NormalizeGeneric] reads {pipeline, event, source, summary,
// idempotency_key, data} (plus the optional extensions severity and labels):
// event becomes labels.event, idempotency_key the fingerprint, data the
// metadata.
//
// # Routing
//
// A [Router] holds the loaded pipelines in file-name order (package
// intake's LoadPipelines sorts by file name). An explicit pipeline name in the context wins; an
// unknown name is [ErrUnknownPipeline]. Otherwise the first pipeline whose
// trigger.match holds is chosen ([Match]); none is [ErrNoMatch]. A
// pipeline without a trigger block is only started by name. File names are
// thus the only priority: name files "10-critical.yaml", "20-default.yaml"
// to order them.
//
// # Accepting an event
//
// [Intake.Accept] runs the whole path in this order: bearer token (webhooks
// always when tokens are configured; manual runs only when a token is
// given), normalization, routing, the stage gate (a testing pipeline is
// skipped for webhooks unless allow_testing=true; manual runs always pass),
// the concurrency [Limiter], the dedup claim (an atomic conditional write
// in the store, so of concurrent identical events exactly one starts a run),
// the run record, and [Starter.Start]. The limiter is asked before the
// dedup claim so that a refused event never leaves a claim behind.
//
// The run record is written here, with status running, before the run is
// started: the run is visible at once, and a run whose start fails is marked
// failed, so its dedup claim lapses after the window instead of blocking
// the fingerprint. The step function tolerates the existing record.
//
// Errors map to HTTP statuses through [HTTPStatus]: 400 bad payload or
// query, 401 bad token, 404 unknown pipeline of a manual run, 413 payload
// too large, 422 no pipeline for the event, 429 overloaded.
package inbound
