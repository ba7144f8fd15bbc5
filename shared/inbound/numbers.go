package inbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// errNumberRange reports an event number the engine cannot hold.
var errNumberRange = errors.New("out of range")

// CheckNumbers reports the first number of the JSON document b, in key
// order, that a float64 does not hold (1e999, -1e999): the engines (the
// local one, Step Functions' JSONata) read a run's input as float64s and
// would refuse it only once the run is recorded. The error names the
// number's path ("metadata.order.total", "labels.sizes[1]").
func CheckNumbers(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return err
	}
	return walkNumbers(v, "")
}

func walkNumbers(v any, path string) error {
	switch v := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			at := path
			if at == "" {
				at = "the event"
			}
			return fmt.Errorf("%s: the number %s is %w: a number must lie within ±1.7976931348623157e308", at, v, errNumberRange)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if err := walkNumbers(v[k], p); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := walkNumbers(e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}
