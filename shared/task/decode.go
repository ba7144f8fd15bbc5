package task

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/internal/jsonstr"
	"github.com/stepline/stepline/shared/pipeline"
)

// DecodeRequest decodes a Task's payload: its Request and its error are
// what json.Unmarshal into a Request gives, for any input.
//
// The payloads the compiler's machines send (keys spelled as the fields'
// tags, each once, no nulls, plain strings) are decoded by hand: the
// raw values (step, trigger, the earlier steps' outputs) are sliced out,
// the run and the usage read directly, and only the pipeline's facts and
// the rarer structured fields go through reflection, each on its own
// small slice. Anything else (another spelling of a key, a repeated or
// unknown key, a null, an escaped or non-ASCII string, a number that is
// not a plain integer where one is expected) is left to json.Unmarshal.
// In BenchmarkRun's CPU profile json.Unmarshal of the payload was the
// largest single cost of the local step handler outside SQLite; the
// hand-decoding takes about 0.6 of its time with 14 allocations instead
// of 23 (BenchmarkDecodeRequest), and a fresh process's first decode
// 34-97 µs instead of 315-615 µs (json.Unmarshal's first use of a type
// builds its decoders: a cold start's cost in the step function).
func DecodeRequest(b []byte) (Request, error) {
	return decodeRequest(b, json.Valid(b))
}

// DecodeEncoded is DecodeRequest for a payload this process encoded
// itself and knows to be valid JSON (the local engine's, written by
// appendJSON): it leaves out the scan that checks b is valid JSON first
// (2.4% of a step's CPU in BenchmarkRun of shared/local). Text that is
// not valid JSON must not be given to it: it may decode it.
func DecodeEncoded(b []byte) (Request, error) {
	return decodeRequest(b, true)
}

func decodeRequest(b []byte, valid bool) (Request, error) {
	var r Request
	if valid {
		d := decoder{b: b}
		if d.request(&r) {
			return r, nil
		}
		r = Request{}
	}
	err := json.Unmarshal(b, &r)
	return r, err
}

// decoder reads a payload already known to be valid JSON; each method
// reports false when the input is not of the simple form it decodes,
// and the caller then leaves the whole payload to json.Unmarshal.
type decoder struct {
	b []byte
	i int
}

func (d *decoder) space() { d.i = jsonstr.SkipSpace(d.b, d.i) }

// next skips white space and reports whether the next byte is c, which
// it consumes.
func (d *decoder) next(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// plainString reads a string without escapes and of ASCII only (what
// json.Unmarshal would give as is); false otherwise.
func (d *decoder) plainString() (string, bool) {
	b, ok := d.plainBytes()
	return string(b), ok
}

// plainBytes is plainString's bytes, not copied.
func (d *decoder) plainBytes() ([]byte, bool) {
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return d.b[start:j], true
		case c == '\\' || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// value skips one value and returns its bytes.
func (d *decoder) value() []byte {
	d.space()
	start := d.i
	if d.i >= len(d.b) {
		return nil
	}
	switch d.b[d.i] {
	case '"':
		d.skipString()
	case '{', '[':
		depth := 0
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case '"':
				d.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			d.i++
			if depth == 0 {
				return d.b[start:d.i]
			}
		}
	default: // a number, true, false or null
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return d.b[start:d.i]
			}
			d.i++
		}
	}
	return d.b[start:d.i]
}

// skipString moves past the string that starts at d.i.
func (d *decoder) skipString() {
	d.i++
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '\\' {
			d.i += 2
			continue
		}
		d.i++
		if c == '"' {
			return
		}
	}
}

// An object is read by fields (a struct's) or entries (a map's), with
// open, empty, key and more: the payload is valid JSON, so an object's
// punctuation is where these expect it.

// open reads an object's '{'; false when the value is not an object.
func (d *decoder) open() bool { return d.next('{') }

// empty reads the '}' of an object with no members.
func (d *decoder) empty() bool { return d.next('}') }

// key reads a member's key (a plain string, not copied) and its ':'.
func (d *decoder) key() ([]byte, bool) {
	k, ok := d.plainBytes()
	return k, ok && d.next(':')
}

// more reads what follows a member's value: a ',' (true) or the
// object's '}' (false).
func (d *decoder) more() bool {
	if d.next(',') {
		return true
	}
	d.next('}')
	return false
}

// raw reads a value that is not null, copied.
func (d *decoder) raw() (json.RawMessage, bool) {
	v := d.value()
	if len(v) == 0 || v[0] == 'n' {
		return nil, false
	}
	return bytes.Clone(v), true
}

// integer reads a plain integer (no fraction, no exponent) that fits.
func (d *decoder) integer(bits int) (int64, bool) {
	v := d.value()
	if len(v) == 0 || bytes.ContainsAny(v, ".eE") || v[0] == 'n' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, bits)
	return n, err == nil
}

// number reads a float64 as json.Unmarshal does (strconv.ParseFloat).
func (d *decoder) number() (float64, bool) {
	v := d.value()
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// reflected decodes a value that is not null with json.Unmarshal.
func (d *decoder) reflected(dst any) bool {
	v := d.value()
	return len(v) > 0 && v[0] != 'n' && json.Unmarshal(v, dst) == nil
}

// keys tells a key seen before from a new one: bit i stands for the
// i-th key of the list an object's decoder knows.
type keys uint32

// first marks a key, known as the i-th, as seen; false when it was seen
// before or is not known (i < 0).
func (k *keys) first(i int) bool {
	if i < 0 || *k&(1<<i) != 0 {
		return false
	}
	*k |= 1 << i
	return true
}

// indexOf is key's place in known, or -1.
func indexOf(known []string, key []byte) int {
	for i, k := range known {
		if k == string(key) {
			return i
		}
	}
	return -1
}

// The keys each object's decoder knows, in the order of their bits.
var (
	requestKeys = []string{"mode", "group", "task_token", "step", "trigger", "item", "child", "final", "steps", "run",
		"usage", "attempt", "index", "total", "pipeline", "branches", "error", "decision", "agent_loop", "check"}
	runKeys      = []string{"id", "execution", "started_at", "parent_run_id"}
	usageKeys    = []string{"input_tokens", "output_tokens", "cost_usd"}
	pipelineKeys = []string{"name", "stage", "config", "workflow", "run_ended_error", "vars", "include", "budget", "notifications"}
)

// fields reads an object whose keys are among known, each at most once,
// calling field for each key with the decoder at its value; false when
// the value is not such an object or field refused a value.
func (d *decoder) fields(known []string, field func(key []byte) bool) bool {
	if !d.open() {
		return false
	}
	var seen keys
	for more := !d.empty(); more; more = d.more() {
		k, ok := d.key()
		if !ok || !seen.first(indexOf(known, k)) || !field(k) {
			return false
		}
	}
	return true
}

// entries reads an object of any keys, each at most once, into a map,
// each value read by value.
func entries[V any](d *decoder, value func() (V, bool)) (map[string]V, bool) {
	if !d.open() {
		return nil, false
	}
	m := map[string]V{}
	for more := !d.empty(); more; more = d.more() {
		k, ok := d.key()
		if !ok {
			return nil, false
		}
		if _, dup := m[string(k)]; dup {
			return nil, false
		}
		v, ok := value()
		if !ok {
			return nil, false
		}
		m[string(k)] = v
	}
	return m, true
}

func (d *decoder) request(r *Request) bool {
	ok := d.fields(requestKeys, func(k []byte) (ok bool) {
		switch string(k) {
		case "mode":
			r.Mode, ok = d.plainString()
		case "group":
			r.Group, ok = d.plainString()
		case "task_token":
			r.TaskToken, ok = d.plainString()
		case "step":
			r.Step, ok = d.raw()
		case "trigger":
			r.Trigger, ok = d.raw()
		case "item":
			r.Item, ok = d.raw()
		case "child":
			r.Child, ok = d.raw()
		case "final":
			r.Final, ok = d.raw()
		case "steps":
			r.Steps, ok = entries(d, d.raw)
		case "run":
			ok = d.run(&r.Run)
		case "usage":
			ok = d.usage(&r.Usage)
		case "attempt":
			r.Attempt, ok = d.int()
		case "index":
			r.Index, ok = d.int()
		case "total":
			r.Total, ok = d.int()
		case "pipeline":
			ok = d.pipeline(&r.Pipeline)
		case "branches":
			ok = d.reflected(&r.Branches)
		case "error":
			ok = d.reflected(&r.Error)
		case "decision":
			ok = d.reflected(&r.Decision)
		case "agent_loop":
			ok = d.reflected(&r.AgentLoop)
		case "check":
			ok = d.reflected(&r.Check)
		}
		return ok
	})
	d.space()
	return ok && d.i == len(d.b)
}

func (d *decoder) run(run *Run) bool {
	return d.fields(runKeys, func(k []byte) (ok bool) {
		switch string(k) {
		case "id":
			run.ID, ok = d.plainString()
		case "execution":
			run.Execution, ok = d.plainString()
		case "started_at":
			run.StartedAt, ok = d.plainString()
		case "parent_run_id":
			run.ParentRunID, ok = d.plainString()
		}
		return ok
	})
}

func (d *decoder) usage(u *Usage) bool {
	return d.fields(usageKeys, func(k []byte) (ok bool) {
		switch string(k) {
		case "input_tokens":
			u.InputTokens, ok = d.integer(64)
		case "output_tokens":
			u.OutputTokens, ok = d.integer(64)
		case "cost_usd":
			u.CostUSD, ok = d.number()
		}
		return ok
	})
}

func (d *decoder) pipeline(p *Pipeline) bool {
	return d.fields(pipelineKeys, func(k []byte) (ok bool) {
		switch string(k) {
		case "name":
			p.Name, ok = d.plainString()
		case "stage":
			var s string
			s, ok = d.plainString()
			p.Stage = pipeline.Stage(s)
		case "config":
			p.Config, ok = d.plainString()
		case "workflow":
			p.Workflow, ok = d.plainString()
		case "run_ended_error":
			p.RunEndedError, ok = d.boolean()
		case "vars":
			p.Vars, ok = entries(d, d.plainString)
		case "include":
			ok = d.reflected(&p.Include)
		case "budget":
			ok = d.reflected(&p.Budget)
		case "notifications":
			ok = d.reflected(&p.Notifications)
		}
		return ok
	})
}

// boolean reads true or false.
func (d *decoder) boolean() (bool, bool) {
	switch v := d.value(); string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// int reads a plain integer that fits an int.
func (d *decoder) int() (int, bool) {
	n, ok := d.integer(strconv.IntSize)
	return int(n), ok
}

// Decoding adapts a Task handler to the Lambda runtime's raw event: the
// payload is decoded by DecodeRequest, not by the runtime's
// json.Unmarshal, whose first use of the Request type builds its
// decoders (0.3-0.6 ms of a function's cold start). A payload that does
// not decode is the handler's error, as the runtime's would be.
func Decoding[Out any](h func(context.Context, Request) (Out, error)) func(context.Context, json.RawMessage) (Out, error) {
	return func(ctx context.Context, payload json.RawMessage) (Out, error) {
		req, err := DecodeRequest(payload)
		if err != nil {
			var zero Out
			return zero, err
		}
		return h(ctx, req)
	}
}
