package asl

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/internal/jsonstr"
)

// fastDecode reads a definition written the way Marshal and the compiler
// write one, by hand and in one pass over the text, without encoding/json's
// reflection, its RawMessage copies of every state or its second scan of
// each. It accepts only what it is sure UnmarshalJSON accepts and decodes
// to the same values; anything else (an error, but also a valid shape it
// does not take: a state whose first member is not its Type, a field name
// in another case, a repeated field, a null where a field is not "any", a
// string with invalid UTF-8) returns errSlowPath, and Decode then decodes
// the definition with UnmarshalJSON, whose result and errors are the
// reference.
//
// Its strings are substrings of one copy of data (text) rather than a
// copy each: a 100-step pipeline's definition decodes in 6,264
// allocations instead of 16,006.
func fastDecode(data []byte) (*StateMachine, error) {
	d := &decoder{data: data, text: string(data)}
	m, err := d.machine()
	if err != nil {
		return nil, err
	}
	d.ws()
	if d.pos != len(d.data) {
		return nil, errSlowPath
	}
	return m, nil
}

// errSlowPath says the fast decoder leaves the text to UnmarshalJSON.
var errSlowPath = errors.New("asl: decode by the slow path")

// maxFastDepth bounds the nesting the fast decoder follows (encoding/json
// follows 10,000 levels); deeper text takes the slow path.
const maxFastDepth = 1000

type decoder struct {
	data  []byte
	text  string // data's bytes, whose substrings str returns
	pos   int
	depth int
}

// ws skips JSON whitespace.
func (d *decoder) ws() { d.pos = jsonstr.SkipSpace(d.data, d.pos) }

// consume skips whitespace and reports whether c follows, consuming it.
func (d *decoder) consume(c byte) bool {
	d.ws()
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// object reads an object, calling member for each key with the decoder
// at its value; member must read the value. Keys repeated within the
// object take the slow path when unique is set.
func (d *decoder) object(unique bool, member func(key string) error) error {
	if !d.consume('{') {
		return errSlowPath
	}
	if d.depth++; d.depth > maxFastDepth {
		return errSlowPath
	}
	var seen []string
	if d.consume('}') {
		d.depth--
		return nil
	}
	for {
		d.ws()
		k, err := d.str()
		if err != nil {
			return err
		}
		if unique {
			for _, s := range seen {
				if s == k {
					return errSlowPath
				}
			}
			seen = append(seen, k)
		}
		if !d.consume(':') {
			return errSlowPath
		}
		if err := member(k); err != nil {
			return err
		}
		if d.consume(',') {
			continue
		}
		if d.consume('}') {
			d.depth--
			return nil
		}
		return errSlowPath
	}
}

// array reads an array, calling elem with the decoder at each element;
// elem must read it.
func (d *decoder) array(elem func() error) error {
	if !d.consume('[') {
		return errSlowPath
	}
	if d.depth++; d.depth > maxFastDepth {
		return errSlowPath
	}
	if d.consume(']') {
		d.depth--
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if d.consume(',') {
			continue
		}
		if d.consume(']') {
			d.depth--
			return nil
		}
		return errSlowPath
	}
}

// str reads a string. One with an escape is unquoted by encoding/json;
// one with a control character or invalid UTF-8 takes the slow path.
func (d *decoder) str() (string, error) {
	d.ws()
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return "", errSlowPath
	}
	start := d.pos
	escaped := false
	i := d.pos + 1
	for ; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			break
		}
		if c < 0x20 {
			return "", errSlowPath
		}
		if c == '\\' {
			escaped = true
			i++ // the escaped byte (a quote cannot end the string)
		}
	}
	if i >= len(d.data) {
		return "", errSlowPath
	}
	d.pos = i + 1
	body := d.data[start+1 : i]
	if !utf8.Valid(body) {
		return "", errSlowPath
	}
	if !escaped {
		return d.text[start+1 : i], nil
	}
	var s string
	if err := json.Unmarshal(d.data[start:d.pos], &s); err != nil {
		return "", errSlowPath
	}
	return s, nil
}

// number reads a number's text, checked against JSON's grammar.
func (d *decoder) number() ([]byte, bool, error) {
	d.ws()
	start, i, b := d.pos, d.pos, d.data
	integer := true
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return nil, false, errSlowPath
	}
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return nil, false, errSlowPath
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return nil, false, errSlowPath
		}
	}
	d.pos = i
	return b[start:i], integer, nil
}

// integer reads a number into an int field: one with a fraction or an
// exponent, or out of range, takes the slow path (encoding/json refuses
// it).
func (d *decoder) integer() (int, error) {
	t, isInt, err := d.number()
	if err != nil || !isInt {
		return 0, errSlowPath
	}
	n, err := strconv.ParseInt(string(t), 10, strconv.IntSize)
	if err != nil {
		return 0, errSlowPath
	}
	return int(n), nil
}

// float reads a number into a float64 field.
func (d *decoder) float() (float64, error) {
	t, _, err := d.number()
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil {
		return 0, errSlowPath
	}
	return f, nil
}

// boolean reads true or false.
func (d *decoder) boolean() (bool, error) {
	d.ws()
	switch {
	case d.literal("true"):
		return true, nil
	case d.literal("false"):
		return false, nil
	}
	return false, errSlowPath
}

// literal consumes word when it is next.
func (d *decoder) literal(word string) bool {
	if len(d.data)-d.pos >= len(word) && string(d.data[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

// value reads any JSON value as json.Unmarshal into an any does: objects
// as map[string]any (a repeated key: the last wins), arrays as []any,
// numbers as float64.
func (d *decoder) value() (any, error) {
	d.ws()
	if d.pos >= len(d.data) {
		return nil, errSlowPath
	}
	switch c := d.data[d.pos]; {
	case c == '"':
		return d.str()
	case c == '{':
		m := map[string]any{}
		err := d.object(false, func(k string) error {
			v, err := d.value()
			m[k] = v
			return err
		})
		return m, err
	case c == '[':
		a := []any{}
		err := d.array(func() error {
			v, err := d.value()
			a = append(a, v)
			return err
		})
		return a, err
	case c == '-' || '0' <= c && c <= '9':
		return d.float()
	case d.literal("true"):
		return true, nil
	case d.literal("false"):
		return false, nil
	case d.literal("null"):
		return nil, nil
	}
	return nil, errSlowPath
}

// assign reads an Assign object (not null: that takes the slow path).
func (d *decoder) assign() (map[string]any, error) {
	d.ws()
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return nil, errSlowPath
	}
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// strings reads an array of strings (ErrorEquals).
func (d *decoder) strings() ([]string, error) {
	out := []string{}
	err := d.array(func() error {
		s, err := d.str()
		out = append(out, s)
		return err
	})
	return out, err
}

func (d *decoder) machine() (*StateMachine, error) {
	m := &StateMachine{}
	err := d.object(true, func(k string) error {
		var err error
		switch k {
		case "Comment":
			m.Comment, err = d.str()
		case "QueryLanguage":
			m.QueryLanguage, err = d.str()
		case "StartAt":
			m.StartAt, err = d.str()
		case "TimeoutSeconds":
			m.TimeoutSeconds, err = d.integer()
		case "Version":
			_, err = d.str()
		case "States":
			m.States, err = d.states()
		default:
			err = errSlowPath
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (d *decoder) states() (States, error) {
	d.ws()
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return States{}, errSlowPath
	}
	s := States{}
	err := d.object(false, func(name string) error {
		if _, dup := s.byName[name]; dup || name == "" {
			return errSlowPath
		}
		st, err := d.state()
		if err != nil {
			return err
		}
		if s.byName == nil {
			s.byName = make(map[string]State)
		}
		s.names = append(s.names, name)
		s.byName[name] = st
		return nil
	})
	return s, err
}

// state reads a state whose first member is its Type.
func (d *decoder) state() (State, error) {
	start := d.pos
	if !d.consume('{') {
		return nil, errSlowPath
	}
	if k, err := d.str(); err != nil || k != "Type" || !d.consume(':') {
		return nil, errSlowPath
	}
	typ, err := d.str()
	if err != nil {
		return nil, err
	}
	// The rest is read as the object it is, its Type member skipped.
	d.pos = start
	var (
		st     State
		member func(k string) error
	)
	switch typ {
	case TypePass:
		v := &Pass{}
		st, member = v, func(k string) error { return d.pass(v, k) }
	case TypeTask:
		v := &Task{}
		st, member = v, func(k string) error { return d.task(v, k) }
	case TypeChoice:
		v := &Choice{}
		st, member = v, func(k string) error { return d.choice(v, k) }
	case TypeParallel:
		v := &Parallel{}
		st, member = v, func(k string) error { return d.parallel(v, k) }
	case TypeMap:
		v := &Map{}
		st, member = v, func(k string) error { return d.mapState(v, k) }
	case TypeWait:
		v := &Wait{}
		st, member = v, func(k string) error { return d.wait(v, k) }
	case TypeSucceed:
		v := &Succeed{}
		st, member = v, func(k string) error { return d.succeed(v, k) }
	case TypeFail:
		v := &Fail{}
		st, member = v, func(k string) error { return d.fail(v, k) }
	default:
		return nil, errSlowPath
	}
	err = d.object(true, func(k string) error {
		if k == "Type" {
			_, err := d.str()
			return err
		}
		return member(k)
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// shared points at the fields a state type has of those most types
// share; nil for one it does not have.
type shared struct {
	comment, queryLanguage, next *string
	output                       *any
	assign                       *map[string]any
	retry                        *[]Retrier
	catch                        *[]Catcher
	end                          *bool
}

// common decodes member k into the shared field of that name, or is
// errSlowPath when the state has no such field.
func (d *decoder) common(k string, f shared) (err error) {
	switch {
	case k == "Comment" && f.comment != nil:
		*f.comment, err = d.str()
	case k == "QueryLanguage" && f.queryLanguage != nil:
		*f.queryLanguage, err = d.str()
	case k == "Output" && f.output != nil:
		*f.output, err = d.value()
	case k == "Assign" && f.assign != nil:
		*f.assign, err = d.assign()
	case k == "Retry" && f.retry != nil:
		*f.retry, err = d.retry()
	case k == "Catch" && f.catch != nil:
		*f.catch, err = d.catch()
	case k == "Next" && f.next != nil:
		*f.next, err = d.str()
	case k == "End" && f.end != nil:
		*f.end, err = d.boolean()
	default:
		err = errSlowPath
	}
	return err
}

func (d *decoder) pass(v *Pass, k string) error {
	return d.common(k, shared{comment: &v.Comment, queryLanguage: &v.QueryLanguage, output: &v.Output, assign: &v.Assign, next: &v.Next, end: &v.End})
}

func (d *decoder) task(v *Task, k string) (err error) {
	switch k {
	case "Resource":
		v.Resource, err = d.str()
	case "Arguments":
		v.Arguments, err = d.value()
	case "Credentials":
		v.Credentials, err = d.value()
	case "TimeoutSeconds":
		v.TimeoutSeconds, err = d.value()
	case "HeartbeatSeconds":
		v.HeartbeatSeconds, err = d.value()
	default:
		err = d.common(k, shared{comment: &v.Comment, queryLanguage: &v.QueryLanguage, output: &v.Output, assign: &v.Assign, retry: &v.Retry, catch: &v.Catch, next: &v.Next, end: &v.End})
	}
	return err
}

func (d *decoder) choice(v *Choice, k string) (err error) {
	switch k {
	case "Choices":
		v.Choices = []ChoiceRule{}
		err = d.array(func() error {
			var r ChoiceRule
			err := d.object(true, func(k string) (err error) {
				switch k {
				case "Comment":
					r.Comment, err = d.str()
				case "Condition":
					r.Condition, err = d.value()
				case "Output":
					r.Output, err = d.value()
				case "Assign":
					r.Assign, err = d.assign()
				case "Next":
					r.Next, err = d.str()
				default:
					err = errSlowPath
				}
				return err
			})
			v.Choices = append(v.Choices, r)
			return err
		})
	case "Default":
		v.Default, err = d.str()
	default:
		err = d.common(k, shared{comment: &v.Comment, queryLanguage: &v.QueryLanguage, output: &v.Output, assign: &v.Assign})
	}
	return err
}

func (d *decoder) parallel(v *Parallel, k string) (err error) {
	switch k {
	case "Arguments":
		v.Arguments, err = d.value()
	case "Branches":
		v.Branches = []Branch{}
		err = d.array(func() error {
			var b Branch
			err := d.object(true, func(k string) (err error) {
				switch k {
				case "Comment":
					b.Comment, err = d.str()
				case "StartAt":
					b.StartAt, err = d.str()
				case "States":
					b.States, err = d.states()
				default:
					err = errSlowPath
				}
				return err
			})
			v.Branches = append(v.Branches, b)
			return err
		})
	default:
		err = d.common(k, shared{comment: &v.Comment, queryLanguage: &v.QueryLanguage, output: &v.Output, assign: &v.Assign, retry: &v.Retry, catch: &v.Catch, next: &v.Next, end: &v.End})
	}
	return err
}

func (d *decoder) mapState(v *Map, k string) (err error) {
	switch k {
	case "Items":
		v.Items, err = d.value()
	case "ItemSelector":
		v.ItemSelector, err = d.value()
	case "ItemProcessor":
		err = d.object(true, func(k string) (err error) {
			switch k {
			case "ProcessorConfig":
				pc := &ProcessorConfig{}
				v.ItemProcessor.ProcessorConfig = pc
				err = d.object(true, func(k string) (err error) {
					switch k {
					case "Mode":
						pc.Mode, err = d.str()
					case "ExecutionType":
						pc.ExecutionType, err = d.str()
					default:
						err = errSlowPath
					}
					return err
				})
			case "StartAt":
				v.ItemProcessor.StartAt, err = d.str()
			case "States":
				v.ItemProcessor.States, err = d.states()
			default:
				err = errSlowPath
			}
			return err
		})
	case "MaxConcurrency":
		v.MaxConcurrency, err = d.value()
	default:
		err = d.common(k, shared{comment: &v.Comment, queryLanguage: &v.QueryLanguage, output: &v.Output, assign: &v.Assign, retry: &v.Retry, catch: &v.Catch, next: &v.Next, end: &v.End})
	}
	return err
}

func (d *decoder) wait(v *Wait, k string) (err error) {
	switch k {
	case "Seconds":
		v.Seconds, err = d.value()
	case "Timestamp":
		v.Timestamp, err = d.str()
	default:
		err = d.common(k, shared{comment: &v.Comment, queryLanguage: &v.QueryLanguage, output: &v.Output, assign: &v.Assign, next: &v.Next, end: &v.End})
	}
	return err
}

func (d *decoder) succeed(v *Succeed, k string) (err error) {
	switch k {
	default:
		err = d.common(k, shared{comment: &v.Comment, queryLanguage: &v.QueryLanguage, output: &v.Output})
	}
	return err
}

func (d *decoder) fail(v *Fail, k string) (err error) {
	switch k {
	case "Error":
		v.Error, err = d.str()
	case "Cause":
		v.Cause, err = d.str()
	default:
		err = d.common(k, shared{comment: &v.Comment, queryLanguage: &v.QueryLanguage})
	}
	return err
}

func (d *decoder) retry() ([]Retrier, error) {
	out := []Retrier{}
	err := d.array(func() error {
		var r Retrier
		err := d.object(true, func(k string) (err error) {
			switch k {
			case "ErrorEquals":
				r.ErrorEquals, err = d.strings()
			case "IntervalSeconds":
				r.IntervalSeconds, err = d.integer()
			case "MaxAttempts":
				var n int
				n, err = d.integer()
				r.MaxAttempts = &n
			case "BackoffRate":
				r.BackoffRate, err = d.float()
			case "MaxDelaySeconds":
				r.MaxDelaySeconds, err = d.integer()
			case "JitterStrategy":
				r.JitterStrategy, err = d.str()
			case "Comment":
				r.Comment, err = d.str()
			default:
				err = errSlowPath
			}
			return err
		})
		out = append(out, r)
		return err
	})
	return out, err
}

func (d *decoder) catch() ([]Catcher, error) {
	out := []Catcher{}
	err := d.array(func() error {
		var c Catcher
		err := d.object(true, func(k string) (err error) {
			switch k {
			case "ErrorEquals":
				c.ErrorEquals, err = d.strings()
			case "Output":
				c.Output, err = d.value()
			case "Assign":
				c.Assign, err = d.assign()
			case "Next":
				c.Next, err = d.str()
			case "Comment":
				c.Comment, err = d.str()
			default:
				err = errSlowPath
			}
			return err
		})
		out = append(out, c)
		return err
	})
	return out, err
}
