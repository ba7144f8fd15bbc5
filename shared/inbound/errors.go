package inbound

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Errors of Accept and the normalizers. They are wrapped with detail;
// test with errors.Is and map to a status with HTTPStatus.
var (
	// ErrBadRequest: a payload, source, strategy or query value the intake
	// cannot use (400).
	ErrBadRequest = errors.New("bad request")
	// ErrUnauthorized: a missing or wrong bearer token (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNotFound: a manual run of a pipeline that is not loaded (404).
	ErrNotFound = errors.New("pipeline not found")
	// ErrTooLarge: a payload above MaxBodyBytes (413).
	ErrTooLarge = errors.New("payload too large")
	// ErrUnknownPipeline: the event names a pipeline that is not loaded (422).
	ErrUnknownPipeline = errors.New("unknown pipeline")
	// ErrNoMatch: no pipeline's trigger.match holds for the event (422).
	ErrNoMatch = errors.New("no pipeline matched")
	// ErrOverloaded: the concurrency cap is reached (429). The error is an
	// *OverloadedError carrying the counts.
	ErrOverloaded = errors.New("overloaded")
)

// OverloadedError reports the concurrency cap being reached.
type OverloadedError struct {
	Active int // runs under way
	Max    int // the cap
}

func (e *OverloadedError) Error() string {
	return fmt.Sprintf("overloaded: %d active runs, limit %d", e.Active, e.Max)
}

// Is makes errors.Is(err, ErrOverloaded) hold.
func (e *OverloadedError) Is(target error) bool { return target == ErrOverloaded }

// HTTPStatus is the response status for an error of Accept: 400, 401, 404,
// 413, 422 or 429 for the errors above, 500 for anything else, 200 for nil.
func HTTPStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrUnknownPipeline), errors.Is(err, ErrNoMatch):
		return http.StatusUnprocessableEntity
	case errors.Is(err, ErrOverloaded):
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// badRequest returns an ErrBadRequest with a detail under op.
func badRequest(op, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", op, ErrBadRequest, fmt.Sprintf(format, args...))
}

// jsonProblem describes a decoding error in the payload's terms.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Sprintf("the payload must be a JSON object, not %s", article(te.Value))
		}
		return fmt.Sprintf("%s must be %s, not %s", te.Field, kindOf(te.Type.Kind().String()), article(te.Value))
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// kindOf names a Go kind as a JSON type.
func kindOf(k string) string {
	switch k {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	case "int", "int64", "float64":
		return "a number"
	}
	return k
}

// article names a JSON value kind as reported by UnmarshalTypeError.
func article(v string) string {
	switch v {
	case "object", "array":
		return "an " + v
	case "bool":
		return "a boolean"
	case "":
		return "that value"
	}
	return "a " + v
}
