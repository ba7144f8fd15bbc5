package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/stepline/stepline/shared/internal/jsonstr"
)

// encodeJSON encodes v as encoding/json does, byte for byte, but without
// reflection for the plain JSON values the engine holds (maps, slices,
// strings, float64, bool, nil): events and checkpoints encode such values
// at every step. Other types go through encoding/json.
func encodeJSON(v any) ([]byte, error) {
	return appendJSON(make([]byte, 0, 256), v)
}

// rawJSON is JSON text that encodeJSON produced, written again as is.
type rawJSON []byte

// MarshalJSON returns r: encoding/json sees the same text.
func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

func appendJSON(dst []byte, v any) ([]byte, error) {
	return jsonstr.AppendValue(dst, v, true, appendOther)
}

// appendOther writes what jsonstr.AppendValue leaves to its caller: the
// text the engine encoded before (rawJSON), integers, NaN and the
// infinities (refused with encoding/json's message), and any other type
// through encoding/json.
func appendOther(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case rawJSON:
		return append(dst, x...), nil
	case float64:
		return appendJSONFloat(dst, x)
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// appendJSONFloat writes f as encoding/json does, refusing NaN and the
// infinities with its message.
func appendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return jsonstr.AppendFloat(dst, f), nil
}

// jsonObject writes a JSON object field by field, as encoding/json writes
// a struct: fields in order, names as given (they need no escaping).
type jsonObject struct {
	b   []byte
	n   int
	err error
}

func (o *jsonObject) key(name string) {
	if o.n == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonObject) str(name, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	o.key(name)
	o.b = jsonstr.Append(o.b, v, true)
}

func (o *jsonObject) int(name string, v int, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	o.key(name)
	o.b = strconv.AppendInt(o.b, int64(v), 10)
}

func (o *jsonObject) bool(name string, v bool) { // omitempty
	if v {
		o.key(name)
		o.b = append(o.b, "true"...)
	}
}

func (o *jsonObject) time(name string, t time.Time, omitZero bool) {
	if o.err != nil || omitZero && t.IsZero() {
		return
	}
	o.key(name)
	b, err := t.MarshalJSON()
	o.b, o.err = append(o.b, b...), err
}

func (o *jsonObject) value(name string, v any, omitEmpty bool) {
	if o.err != nil || omitEmpty && v == nil {
		return
	}
	o.key(name)
	o.b, o.err = appendJSON(o.b, v)
}

func (o *jsonObject) done() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	if o.n == 0 {
		return append(o.b, '{', '}'), nil
	}
	return append(o.b, '}'), nil
}

// encode is json.Marshal(s), byte for byte (TestSnapshotEncoding), with
// the variables' and values' encoder: a checkpoint encodes it every time.
// size is the expected size.
func (s *snapshot) encode(size int) ([]byte, error) {
	o := &jsonObject{b: make([]byte, 0, max(size, 512))}
	o.int("v", s.V, false)
	o.str("runId", s.RunID, false)
	o.str("machine", s.Machine, true)
	o.str("defHash", s.DefHash, false)
	o.str("status", string(s.Status), false)
	o.value("input", s.V1Input, true)
	o.time("startTime", s.StartTime, false)
	o.time("deadline", s.Deadline, true)
	o.value("output", s.Output, true)
	o.str("error", s.Error, true)
	o.str("cause", s.Cause, true)
	if s.Parent != nil {
		o.key("parent")
		s.Parent.appendJSON(o)
	}
	o.key("root")
	if s.Root == nil {
		o.b = append(o.b, "null"...)
	} else {
		s.Root.appendJSON(o)
	}
	return o.done()
}

// appendJSON writes p as encoding/json does, into o's buffer.
func (p *path) appendJSON(out *jsonObject) {
	if out.err != nil {
		return
	}
	o := &jsonObject{b: out.b}
	o.str("id", p.ID, false)
	o.int("index", p.Index, true)
	o.str("state", p.State, false)
	o.str("phase", string(p.Phase), true)
	o.value("input", p.Input, false)
	if len(p.V1Vars) > 0 {
		o.value("vars", p.V1Vars, false)
	}
	o.time("entered", p.Entered, true)
	o.int("retries", p.Retries, true)
	if len(p.RetryUsed) > 0 {
		o.key("retryUsed")
		o.b = append(o.b, '[')
		for i, n := range p.RetryUsed {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = strconv.AppendInt(o.b, int64(n), 10)
		}
		o.b = append(o.b, ']')
	}
	o.time("until", p.Until, true)
	o.str("token", p.Token, true)
	o.time("deadline", p.Deadline, true)
	o.int("heartbeat", p.Heartbeat, true)
	o.time("beatAt", p.BeatAt, true)
	o.int("timeout", p.Timeout, true)
	if p.Task != nil {
		o.key("task")
		p.Task.appendJSON(o)
	}
	o.value("result", p.Result, true)
	o.bool("tokenDone", p.TokenDone)
	if len(p.Children) > 0 {
		o.key("children")
		o.b = append(o.b, '[')
		for i, c := range p.Children {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			if c == nil {
				o.b = append(o.b, "null"...)
				continue
			}
			c.appendJSON(o)
		}
		o.b = append(o.b, ']')
	}
	if len(p.Items) > 0 {
		o.value("items", p.Items, false)
	}
	o.int("next", p.Next, true)
	o.int("maxConc", p.MaxConc, true)
	if len(p.Results) > 0 {
		o.value("results", p.Results, false)
	}
	if len(p.Done) > 0 {
		o.key("done")
		o.b = append(o.b, '[')
		for i, d := range p.Done {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = strconv.AppendBool(o.b, d)
		}
		o.b = append(o.b, ']')
	}
	o.value("output", p.Output, true)
	if p.Err != nil {
		o.key("err")
		e := &jsonObject{b: o.b}
		e.str("error", p.Err.Error, false)
		e.str("cause", p.Err.Cause, true)
		o.b, o.err = e.done()
	}
	out.b, out.err = o.done()
}

func (c *taskCall) appendJSON(out *jsonObject) {
	if out.err != nil {
		return
	}
	o := &jsonObject{b: out.b}
	o.str("resource", c.Resource, false)
	o.str("function", c.Function, true)
	if c.encoded != nil {
		o.key("payload")
		o.b = append(o.b, c.encoded...)
	} else {
		o.value("payload", c.Payload, false)
	}
	if c.Child != nil {
		o.key("child")
		c.Child.appendJSON(o)
	}
	out.b, out.err = o.done()
}

func (c *ChildRequest) appendJSON(out *jsonObject) {
	if out.err != nil {
		return
	}
	o := &jsonObject{b: out.b}
	o.str("ParentRunID", c.ParentRunID, false)
	o.str("ParentState", c.ParentState, false)
	o.str("RunID", c.RunID, false)
	o.str("StateMachine", c.StateMachine, false)
	o.key("Input")
	if c.Input == nil {
		o.b = append(o.b, "null"...)
	} else {
		b, err := json.Marshal(c.Input)
		o.b, o.err = append(o.b, b...), err
	}
	o.str("Token", c.Token, false)
	out.b, out.err = o.done()
}
