package task

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/stepline/stepline/shared/internal/jsonstr"
)

// MarshalResponse returns what json.Marshal(r) returns, byte for byte and
// error for error, without reflection: the local runner encodes every
// Task's answer. The JSON values r carries (Output, Steps) are checked and
// compacted as json.Marshal does; when one is not valid JSON, or a number
// is not finite, the answer is json.Marshal's own.
func MarshalResponse(r Response) ([]byte, error) {
	if b, ok := appendResponse(make([]byte, 0, 256+2*len(r.Output)), &r); ok {
		return b, nil
	}
	return json.Marshal(r)
}

// appendResponse appends r as json.Marshal writes it; false when
// json.Marshal would fail (see MarshalResponse).
func appendResponse(b []byte, r *Response) ([]byte, bool) {
	ok := true
	b = append(b, `{"status":`...)
	b = jsonstr.Append(b, r.Status, true)
	b = append(b, `,"step":`...)
	b = jsonstr.Append(b, r.Step, true)
	if len(r.Output) > 0 {
		b = append(b, `,"output":`...)
		if b, ok = jsonstr.AppendCompact(b, r.Output, true); !ok {
			return nil, false
		}
	}
	if len(r.Steps) > 0 {
		b = append(b, `,"steps":{`...)
		var small [8]string // no allocation for the usual few entries
		keys := small[:0]
		for k := range r.Steps {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, k, true)
			b = append(b, ':')
			if b, ok = appendRaw(b, r.Steps[k]); !ok {
				return nil, false
			}
		}
		b = append(b, '}')
	}
	b = append(b, `,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, r.Usage.InputTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, r.Usage.OutputTokens, 10)
	b = append(b, `,"cost_usd":`...)
	if b, ok = appendFloat(b, r.Usage.CostUSD); !ok {
		return nil, false
	}
	b = append(b, '}')
	if r.Reason != "" {
		b = append(b, `,"reason":`...)
		b = jsonstr.Append(b, r.Reason, true)
	}
	if l := r.AgentLoop; l != nil {
		b = append(b, `,"agent_loop":{"turn":`...)
		b = strconv.AppendInt(b, int64(l.Turn), 10)
		b = append(b, `,"tasks":`...)
		b = strconv.AppendInt(b, int64(l.Tasks), 10)
		b = append(b, `,"retries":`...)
		b = strconv.AppendInt(b, int64(l.Retries), 10)
		b = append(b, `,"started_at":`...)
		b = jsonstr.Append(b, l.StartedAt, true)
		b = append(b, `,"deadline":`...)
		b = jsonstr.Append(b, l.Deadline, true)
		b = append(b, '}')
	}
	if a := r.Agent; a != nil {
		b = append(b, `,"agent":{"agent":`...)
		b = jsonstr.Append(b, a.Agent, true)
		b = append(b, `,"iterations":`...)
		b = strconv.AppendInt(b, int64(a.Iterations), 10)
		b = append(b, `,"tool_calls":`...)
		b = strconv.AppendInt(b, int64(a.ToolCalls), 10)
		if a.Tasks != 0 {
			b = append(b, `,"tasks":`...)
			b = strconv.AppendInt(b, int64(a.Tasks), 10)
		}
		b = append(b, '}')
	}
	if c := r.Check; c != nil {
		b = append(b, `,"check":{"index":`...)
		b = strconv.AppendInt(b, int64(c.Index), 10)
		b = append(b, `,"name":`...)
		b = jsonstr.Append(b, c.Name, true)
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(c.Attempt), 10)
		b = append(b, '}')
	}
	if t := r.Trust; t != nil {
		b = append(b, `,"trust":{"policy":`...)
		b = jsonstr.Append(b, t.Policy, true)
		b = append(b, `,"combined":`...)
		if b, ok = appendFloat(b, t.Combined); !ok {
			return nil, false
		}
		for _, f := range []struct {
			key string
			v   *float64
		}{{`,"G":`, t.G}, {`,"C":`, t.C}} {
			if f.v != nil {
				b = append(b, f.key...)
				if b, ok = appendFloat(b, *f.v); !ok {
					return nil, false
				}
			}
		}
		if t.D != nil {
			b = append(b, `,"D":`...)
			b = strconv.AppendBool(b, *t.D)
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// appendRaw appends a json.RawMessage as json.Marshal does: nil as null.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), true
	}
	return jsonstr.AppendCompact(b, raw, true)
}

// appendFloat appends a finite f as json.Marshal does; false for NaN and
// the infinities, which json.Marshal refuses.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	return jsonstr.AppendFloat(b, f), true
}
