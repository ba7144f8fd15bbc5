package jsonstr

import (
	"math"
	"slices"
	"strconv"
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
		var small [32]string // no allocation for the usual object
		keys := small[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = Append(dst, k, html)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendValue(dst, v[k], html, other); err != nil {
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
