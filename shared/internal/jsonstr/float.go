package jsonstr

import (
	"math"
	"strconv"
)

// AppendFloat appends f as encoding/json writes a float64: the shortest
// text that reads back as f, in exponent form below 1e-6 and from 1e21 on,
// with a one-digit negative exponent written without its zero (1e-7, not
// 1e-07). f must be finite: encoding/json refuses NaN and the infinities,
// and so must its callers.
func AppendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
