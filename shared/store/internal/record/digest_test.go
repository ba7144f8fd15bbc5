package record

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// marshalDigest is the digest as json.Marshal writes the record: what
// StepDigest must return for every record.
func marshalDigest(rec store.StepRecord) (string, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func ptr(f float64) *float64 { return &f }

// stepRecords are records that use every field, the escapes json.Marshal
// makes and what the hand encoder leaves to it.
func stepRecords() []store.StepRecord {
	at := time.Date(2026, 12, 3, 9, 0, 0, 123_000_000, time.UTC)
	full := store.StepRecord{RunID: "run-<1>", Name: "s&1", Index: 3, Attempt: 2, Executor: "gateway",
		Status: store.StepCompleted, Error: "bad \"thing\"\n\u2028", PrimaryConfidence: ptr(0.9),
		VerifierConfidence: ptr(1e-7), EffectiveConfidence: ptr(1e21), Output: json.RawMessage(" {\"a\" : \"<b>\", \"c\":[1, 2.50]}"),
		VerifierOutput: json.RawMessage(`"x\u2028y"`), RawResponse: "raw \x01 \xff", Prompt: "p", PromptHash: "h",
		Model: "m", Provider: "p", InputTokens: 10, OutputTokens: -3, CostUSD: ptr(0), Flags: []string{"a", "<b>"},
		StartedAt: at, FinishedAt: at.Add(time.Second), DurationMS: 1000, Agent: "ag", AgentVersion: "v",
		Iterations: 4, Trace: json.RawMessage("[ {\"k\": \"e\u2029\"} ]"), TraceRef: "ref",
		Trust: &store.TrustReport{CombinedTrust: 0.5}}
	var recs []store.StepRecord
	recs = append(recs, full, store.StepRecord{}, store.StepRecord{RunID: "r", Name: "s", Attempt: 1, Status: store.StepFailed, StartedAt: at, FinishedAt: at})
	withRaw := func(f func(r *store.StepRecord)) {
		r := full
		f(&r)
		recs = append(recs, r)
	}
	withRaw(func(r *store.StepRecord) { r.Output = json.RawMessage(`{"a":`) })                        // invalid JSON
	withRaw(func(r *store.StepRecord) { r.Trace = json.RawMessage(`nul`) })                           // invalid JSON
	withRaw(func(r *store.StepRecord) { r.PrimaryConfidence = ptr(math.NaN()) })                      // not finite
	withRaw(func(r *store.StepRecord) { r.CostUSD = ptr(math.Inf(-1)) })                              // not finite
	withRaw(func(r *store.StepRecord) { r.StartedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }) // refused
	withRaw(func(r *store.StepRecord) { r.FinishedAt = at.In(time.FixedZone("X", 3600)) })            // not UTC
	withRaw(func(r *store.StepRecord) { r.Output, r.Flags, r.Trust = json.RawMessage(`null`), []string{}, nil })
	return recs
}

// TestStepDigestIsMarshals holds StepDigest to the digest of json.Marshal's
// text, errors included: records stored before keep their digests.
func TestStepDigestIsMarshals(t *testing.T) {
	for i, rec := range stepRecords() {
		want, werr := marshalDigest(rec)
		got, err := StepDigest(rec)
		if (err == nil) != (werr == nil) || got != want {
			t.Errorf("record %d: %q, %v; json.Marshal's %q, %v", i, got, err, want, werr)
		}
	}
}

// FuzzStepText compares the hand encoder with json.Marshal on records
// built from fuzzed strings and numbers.
func FuzzStepText(f *testing.F) {
	f.Add("r", "s", "completed", "{\"a\":1}", "<&>", int64(3), 0.5, int64(1_700_000_000_123))
	f.Add("\xff", "\u2028", "", "[1, 2 ]", "", int64(-1), 1e-9, int64(0))
	f.Fuzz(func(t *testing.T, id, name, status, raw, text string, n int64, conf float64, ms int64) {
		at := time.UnixMilli(ms).UTC()
		rec := store.StepRecord{RunID: id, Name: name, Index: int(n), Attempt: int(n >> 3), Status: store.StepStatus(status),
			Error: text, PrimaryConfidence: &conf, Output: json.RawMessage(raw), Trace: json.RawMessage(raw),
			Prompt: text, InputTokens: n, Flags: []string{text, name}, StartedAt: at, FinishedAt: at, DurationMS: n}
		want, werr := marshalDigest(rec)
		got, err := StepDigest(rec)
		if (err == nil) != (werr == nil) || got != want {
			var d digestBuf
			b, ok := d.appendStep(nil, &rec, nil)
			m, _ := json.Marshal(rec)
			t.Fatalf("%q, %v (hand: %s, %v); json.Marshal's %q, %v (%s)", got, err, b, ok, want, werr, m)
		}
	})
}

// BenchmarkStepDigest digests a step record with most fields set, by
// hand and through json.Marshal.
func BenchmarkStepDigest(b *testing.B) {
	rec := stepRecords()[0]
	rec.Trust = nil
	for name, digest := range map[string]func(store.StepRecord) (string, error){
		"hand": StepDigest, "marshal": marshalDigest} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := digest(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
