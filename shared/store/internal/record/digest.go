package record

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/stepline/stepline/shared/internal/jsonstr"
	"github.com/stepline/stepline/shared/store"
)

// StepDigest returns a digest of a normalized step record's content. Two
// writes of the same record give the same digest; any difference in a field
// gives another. JSON fields are compared as compact JSON.
//
// The digest is the SHA-256 of the record as json.Marshal writes it, the
// form the stores' records were first digested in, so a record stored
// before keeps telling a repeat from a conflict. appendStep writes that
// text by hand (json.Marshal's reflection was 3% of a step's CPU in
// BenchmarkRun of shared/local); FuzzStepText holds it to json.Marshal.
func StepDigest(rec store.StepRecord) (string, error) {
	var trust []byte
	if rec.Trust != nil {
		var err error
		if trust, err = json.Marshal(rec.Trust); err != nil {
			return "", fmt.Errorf("digest step %q: %w", rec.Name, err)
		}
	}
	return StepDigestTrust(rec, trust)
}

// StepDigestTrust is StepDigest for a store that has the record's trust
// report as json.Marshal writes it already (nil for none), as the column
// it stores.
func StepDigestTrust(rec store.StepRecord, trust []byte) (string, error) {
	bp := digestPool.Get().(*digestBuf)
	defer digestPool.Put(bp)
	b, ok := bp.appendStep(bp.b[:0], &rec, trust)
	if cap(b) <= maxPooled {
		bp.b = b
	}
	if !ok {
		// What the hand encoder leaves to encoding/json: its errors,
		// and records it does not write by hand.
		var err error
		if b, err = json.Marshal(rec); err != nil {
			return "", fmt.Errorf("digest step %q: %w", rec.Name, err)
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// maxPooled is the largest buffer digestPool keeps.
const maxPooled = 64 << 10

var digestPool = sync.Pool{New: func() any { return new(digestBuf) }}

// digestBuf is a record's text being written.
type digestBuf struct {
	b []byte
}

// appendStep appends rec as json.Marshal writes it, or reports false for
// what it leaves to json.Marshal: a JSON field that is not valid JSON, a
// time not in UTC (normalized records' are) or one json.Marshal refuses,
// a confidence or cost that is not finite. trust is rec.Trust as
// json.Marshal writes it.
func (d *digestBuf) appendStep(b []byte, rec *store.StepRecord, trust []byte) ([]byte, bool) {
	ok := true
	str := func(name, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		b = append(b, name...)
		b = jsonstr.Append(b, v, true)
	}
	num := func(name string, v int64, omitEmpty bool) {
		if omitEmpty && v == 0 {
			return
		}
		b = append(b, name...)
		b = strconv.AppendInt(b, v, 10)
	}
	float := func(name string, v *float64) {
		if v == nil {
			return
		}
		if math.IsInf(*v, 0) || math.IsNaN(*v) {
			ok = false
			return
		}
		b = append(b, name...)
		b = jsonstr.AppendFloat(b, *v)
	}
	raw := func(name string, v json.RawMessage) {
		if len(v) == 0 {
			return
		}
		b = append(b, name...)
		// json.Marshal compacts a RawMessage, escaping as it escapes
		// strings ('<', '>', '&', U+2028, U+2029), and fails on one
		// that is not valid JSON.
		var good bool
		if b, good = jsonstr.AppendCompact(b, v, true); !good {
			ok = false
		}
	}
	tm := func(name string, t time.Time) {
		if y := t.Year(); y < 0 || y > 9999 || t.Location() != time.UTC {
			ok = false
			return
		}
		b = append(b, name...)
		b = append(b, '"')
		b = appendRFC3339Nano(b, t)
		b = append(b, '"')
	}
	b = append(b, `{"run_id":`...)
	b = jsonstr.Append(b, rec.RunID, true)
	str(`,"name":`, rec.Name, false)
	num(`,"index":`, int64(rec.Index), false)
	num(`,"attempt":`, int64(rec.Attempt), false)
	str(`,"executor":`, rec.Executor, true)
	str(`,"status":`, string(rec.Status), false)
	str(`,"error":`, rec.Error, true)
	float(`,"primary_confidence":`, rec.PrimaryConfidence)
	float(`,"verifier_confidence":`, rec.VerifierConfidence)
	float(`,"effective_confidence":`, rec.EffectiveConfidence)
	raw(`,"output":`, rec.Output)
	raw(`,"verifier_output":`, rec.VerifierOutput)
	str(`,"raw_response":`, rec.RawResponse, true)
	str(`,"prompt":`, rec.Prompt, true)
	str(`,"prompt_hash":`, rec.PromptHash, true)
	str(`,"model":`, rec.Model, true)
	str(`,"provider":`, rec.Provider, true)
	num(`,"input_tokens":`, rec.InputTokens, true)
	num(`,"output_tokens":`, rec.OutputTokens, true)
	float(`,"cost_usd":`, rec.CostUSD)
	if len(rec.Flags) > 0 {
		b = append(b, `,"flags":[`...)
		for i, f := range rec.Flags {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, f, true)
		}
		b = append(b, ']')
	}
	tm(`,"started_at":`, rec.StartedAt)
	tm(`,"finished_at":`, rec.FinishedAt)
	num(`,"duration_ms":`, rec.DurationMS, false)
	str(`,"agent":`, rec.Agent, true)
	str(`,"agent_version":`, rec.AgentVersion, true)
	num(`,"iterations":`, int64(rec.Iterations), true)
	raw(`,"trace":`, rec.Trace)
	str(`,"trace_ref":`, rec.TraceRef, true)
	if rec.Trust != nil {
		b = append(b, `,"trust_report":`...)
		b = append(b, trust...)
	}
	return append(b, '}'), ok
}

// appendRFC3339Nano appends t, in UTC and in the years 0 to 9999, as
// t.AppendFormat(b, time.RFC3339Nano) does: the nanoseconds without their
// trailing zeros, none at all when they are zero.
func appendRFC3339Nano(b []byte, t time.Time) []byte {
	var buf [len("2006-01-02T15:04:05.999999999Z")]byte
	putDateTime(buf[:], t)
	n := 19
	if ns := t.Nanosecond(); ns != 0 {
		buf[19] = '.'
		digits(buf[20:29], ns)
		n = 29
		for buf[n-1] == '0' {
			n--
		}
	}
	buf[n] = 'Z'
	return append(b, buf[:n+1]...)
}
