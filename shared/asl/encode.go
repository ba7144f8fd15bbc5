package asl

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/stepline/stepline/shared/internal/jsonstr"
)

// appendState appends st as encoding/json writes the struct
// {Type string; *T} for its type T without escaping HTML, "Type" first
// and the other fields in the order T declares them, omitempty as T's
// tags say; by hand, without reflection. A value of an any field that is
// not one of the JSON shapes json.Unmarshal produces (map[string]any,
// []any, string, float64, bool, nil) is written by encoding/json.
func appendState(b []byte, st State) ([]byte, error) {
	e := stateEncoder{b: b}
	switch v := st.(type) {
	case *Pass:
		e.head(TypePass, v.Comment, v.QueryLanguage)
		e.value("Output", v.Output, true)
		e.assign(v.Assign)
		e.str("Next", v.Next, true)
		e.end(v.End)
	case *Task:
		e.head(TypeTask, v.Comment, v.QueryLanguage)
		e.str("Resource", v.Resource, false)
		e.value("Arguments", v.Arguments, true)
		e.value("Credentials", v.Credentials, true)
		e.value("TimeoutSeconds", v.TimeoutSeconds, true)
		e.value("HeartbeatSeconds", v.HeartbeatSeconds, true)
		e.value("Output", v.Output, true)
		e.assign(v.Assign)
		e.retry(v.Retry)
		e.catch(v.Catch)
		e.str("Next", v.Next, true)
		e.end(v.End)
	case *Choice:
		e.head(TypeChoice, v.Comment, v.QueryLanguage)
		e.key("Choices")
		if v.Choices == nil {
			e.b = append(e.b, "null"...)
		} else {
			e.b = append(e.b, '[')
			for i, r := range v.Choices {
				if i > 0 {
					e.b = append(e.b, ',')
				}
				e.b = append(e.b, '{')
				e.first = true
				e.str("Comment", r.Comment, true)
				e.value("Condition", r.Condition, false)
				e.value("Output", r.Output, true)
				e.assign(r.Assign)
				e.str("Next", r.Next, false)
				e.b = append(e.b, '}')
				e.first = false
			}
			e.b = append(e.b, ']')
		}
		e.str("Default", v.Default, true)
		e.value("Output", v.Output, true)
		e.assign(v.Assign)
	case *Parallel:
		e.head(TypeParallel, v.Comment, v.QueryLanguage)
		e.value("Arguments", v.Arguments, true)
		e.key("Branches")
		if v.Branches == nil {
			e.b = append(e.b, "null"...)
		} else {
			e.b = append(e.b, '[')
			for i, br := range v.Branches {
				if i > 0 {
					e.b = append(e.b, ',')
				}
				e.b = append(e.b, '{')
				e.first = true
				e.str("Comment", br.Comment, true)
				e.str("StartAt", br.StartAt, false)
				e.states(br.States)
				e.b = append(e.b, '}')
				e.first = false
			}
			e.b = append(e.b, ']')
		}
		e.value("Output", v.Output, true)
		e.assign(v.Assign)
		e.retry(v.Retry)
		e.catch(v.Catch)
		e.str("Next", v.Next, true)
		e.end(v.End)
	case *Map:
		e.head(TypeMap, v.Comment, v.QueryLanguage)
		e.value("Items", v.Items, true)
		e.value("ItemSelector", v.ItemSelector, true)
		e.key("ItemProcessor")
		e.b = append(e.b, '{')
		e.first = true
		if pc := v.ItemProcessor.ProcessorConfig; pc != nil {
			e.key("ProcessorConfig")
			e.b = append(e.b, '{')
			e.first = true
			e.str("Mode", pc.Mode, true)
			e.str("ExecutionType", pc.ExecutionType, true)
			e.b = append(e.b, '}')
			e.first = false
		}
		e.str("StartAt", v.ItemProcessor.StartAt, false)
		e.states(v.ItemProcessor.States)
		e.b = append(e.b, '}')
		e.first = false
		e.value("MaxConcurrency", v.MaxConcurrency, true)
		e.value("Output", v.Output, true)
		e.assign(v.Assign)
		e.retry(v.Retry)
		e.catch(v.Catch)
		e.str("Next", v.Next, true)
		e.end(v.End)
	case *Wait:
		e.head(TypeWait, v.Comment, v.QueryLanguage)
		e.value("Seconds", v.Seconds, true)
		e.str("Timestamp", v.Timestamp, true)
		e.value("Output", v.Output, true)
		e.assign(v.Assign)
		e.str("Next", v.Next, true)
		e.end(v.End)
	case *Succeed:
		e.head(TypeSucceed, v.Comment, v.QueryLanguage)
		e.value("Output", v.Output, true)
	case *Fail:
		e.head(TypeFail, v.Comment, v.QueryLanguage)
		e.str("Error", v.Error, true)
		e.str("Cause", v.Cause, true)
	case nil:
		return nil, errors.New("nil state")
	default:
		return nil, fmt.Errorf("unsupported state type %T", st)
	}
	if e.err != nil {
		return nil, e.err
	}
	return append(e.b, '}'), nil
}

// stateEncoder appends one state's members to b; the first error stops
// it.
type stateEncoder struct {
	b     []byte
	first bool // no member written yet in the current object
	err   error
}

// head opens the state's object with its Type, Comment and QueryLanguage.
func (e *stateEncoder) head(typ, comment, queryLanguage string) {
	e.b = append(e.b, `{"Type":`...)
	e.b = appendString(e.b, typ)
	e.first = false
	e.str("Comment", comment, true)
	e.str("QueryLanguage", queryLanguage, true)
}

func (e *stateEncoder) key(name string) {
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

func (e *stateEncoder) str(name, s string, omitEmpty bool) {
	if omitEmpty && s == "" {
		return
	}
	e.key(name)
	e.b = appendString(e.b, s)
}

func (e *stateEncoder) value(name string, v any, omitEmpty bool) {
	if omitEmpty && v == nil || e.err != nil {
		return
	}
	e.key(name)
	e.b, e.err = appendValue(e.b, v)
}

func (e *stateEncoder) end(end bool) {
	if end {
		e.key("End")
		e.b = append(e.b, "true"...)
	}
}

func (e *stateEncoder) assign(m map[string]any) {
	if len(m) == 0 || e.err != nil {
		return
	}
	e.key("Assign")
	e.b, e.err = appendValue(e.b, m)
}

func (e *stateEncoder) states(s States) {
	if e.err != nil {
		return
	}
	e.key("States")
	e.b, e.err = s.appendJSON(e.b)
}

func (e *stateEncoder) errorEquals(names []string) {
	e.key("ErrorEquals")
	if names == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i, n := range names {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = appendString(e.b, n)
	}
	e.b = append(e.b, ']')
}

func (e *stateEncoder) int(name string, n int) {
	if n != 0 {
		e.key(name)
		e.b = strconv.AppendInt(e.b, int64(n), 10)
	}
}

func (e *stateEncoder) retry(rs []Retrier) {
	if len(rs) == 0 || e.err != nil {
		return
	}
	e.key("Retry")
	e.b = append(e.b, '[')
	for i, r := range rs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, '{')
		e.first = true
		e.errorEquals(r.ErrorEquals)
		e.int("IntervalSeconds", r.IntervalSeconds)
		if r.MaxAttempts != nil {
			e.key("MaxAttempts")
			e.b = strconv.AppendInt(e.b, int64(*r.MaxAttempts), 10)
		}
		if r.BackoffRate != 0 {
			e.key("BackoffRate")
			if e.b, e.err = appendFloat(e.b, r.BackoffRate); e.err != nil {
				return
			}
		}
		e.int("MaxDelaySeconds", r.MaxDelaySeconds)
		e.str("JitterStrategy", r.JitterStrategy, true)
		e.str("Comment", r.Comment, true)
		e.b = append(e.b, '}')
		e.first = false
	}
	e.b = append(e.b, ']')
	e.first = false
}

func (e *stateEncoder) catch(cs []Catcher) {
	if len(cs) == 0 || e.err != nil {
		return
	}
	e.key("Catch")
	e.b = append(e.b, '[')
	for i, c := range cs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, '{')
		e.first = true
		e.errorEquals(c.ErrorEquals)
		e.value("Output", c.Output, true)
		e.assign(c.Assign)
		e.str("Next", c.Next, false)
		e.str("Comment", c.Comment, true)
		e.b = append(e.b, '}')
		e.first = false
	}
	e.b = append(e.b, ']')
	e.first = false
}

// appendValue appends v as encoding/json writes it without escaping
// HTML (jsonstr.AppendValue); values of other types, and NaN and the
// infinities, are written (or refused) by encoding/json itself.
func appendValue(b []byte, v any) ([]byte, error) {
	return jsonstr.AppendValue(b, v, false, func(b []byte, v any) ([]byte, error) {
		j, err := encode(v)
		if err != nil {
			return nil, err
		}
		return append(b, j...), nil
	})
}

// appendFloat appends f as encoding/json's float64 encoder does
// (jsonstr.AppendFloat); encoding/json reports NaN and the infinities.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		j, err := encode(f)
		if err != nil {
			return nil, err
		}
		return append(b, j...), nil
	}
	return jsonstr.AppendFloat(b, f), nil
}

// appendString appends s quoted as encoding/json quotes a string without
// escaping HTML (jsonstr.Append).
func appendString(b []byte, s string) []byte { return jsonstr.Append(b, s, false) }
