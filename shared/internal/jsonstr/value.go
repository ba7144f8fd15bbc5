package jsonstr

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// AppendValue appends v as encoding/json writes the values it decodes
// into an any (nil, string, bool, float64, map[string]any, []any): object
// keys sorted, a nil map or slice as null, strings quoted by Append with
// html, finite numbers by AppendFloat. Every other value, and a NaN or an
// infinity, is handed to other, whose error ends the encoding.
func AppendValue(dst []byte, v any, html bool, other func(dst []byte, v any) ([]byte, error)) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return Append(dst, v, html), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return other(dst, v)
		}
		return AppendFloat(dst, v), nil
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		// The members are taken with their values in one walk of the
		// map and sorted by key (a look-up per key after sorting the keys
		// alone was a fifth of an encoding).
		var small [16]member // no allocation for the usual object
		ms := small[:0]
		for k, x := range v {
			ms = append(ms, member{k, x})
		}
		sortMembers(ms)
		dst = append(dst, '{')
		for i := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = Append(dst, ms[i].key, html)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendValue(dst, ms[i].val, html, other); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, x := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendValue(dst, x, html, other); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	return other(dst, v)
}

// member is an object's key and value.
type member struct {
	key string
	val any
}

// maxInsertionSort is the most members sortMembers sorts by insertion.
const maxInsertionSort = 12

// sortMembers sorts ms by key, in byte order as encoding/json sorts a
// map's keys (keys are distinct): by insertion up to maxInsertionSort
// members, by slices.SortFunc beyond.
func sortMembers(ms []member) {
	if len(ms) > maxInsertionSort {
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
		return
	}
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && ms[j].key < ms[j-1].key; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}
