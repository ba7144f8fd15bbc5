package compiler

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/asl"
)

// jsonataValue writes a literal value (null, a boolean, a number, a
// string, a list of them, as a when: or over: literal holds) as JSONata,
// its strings with asl.Quote, so that no delimiter or line break occurs
// in the expression it is part of.
func jsonataValue(v any) string {
	switch v := v.(type) {
	case string:
		return asl.Quote(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = jsonataValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, asl.Quote(k)+": "+jsonataValue(v[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
