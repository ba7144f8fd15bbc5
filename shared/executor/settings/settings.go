package settings

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/pipeline"
)

// ConfigIssue is one problem in an executor_config. Key is the offending
// key ("" for the config as a whole), so the compiler can point at it.
// Warnings (unknown keys, a value left to where the step runs) do not stop
// a pipeline from compiling or running.
type ConfigIssue struct {
	Key     string
	Msg     string
	Warning bool
}

// ConfigKey names the offending key.
func (e *ConfigIssue) ConfigKey() string { return e.Key }

// IsWarning reports whether the issue is a warning.
func (e *ConfigIssue) IsWarning() bool { return e.Warning }

func (e *ConfigIssue) Error() string {
	if e.Key == "" {
		return "executor_config: " + e.Msg
	}
	return "executor_config." + e.Key + ": " + e.Msg
}

// Defaults are the values an executor_config falls back on that come from
// where a pipeline runs rather than from its file. Libraries do not read
// the environment: main does (DefaultsFromEnv) and passes them in, to the
// Registry (Deps.Defaults) and to the checks (Defaults.CheckConfig).
type Defaults struct {
	// OpenAIBaseURL is the base URL of a gateway step without
	// executor_config.base_url: OPENAI_BASE_URL, the convention of the
	// OpenAI SDKs. "" when unset.
	OpenAIBaseURL string
}

// Environment variables DefaultsFromEnv reads, and the secret a gateway
// step without api_key sends (resolved like any ${NAME}).
const (
	EnvOpenAIBaseURL   = "OPENAI_BASE_URL"
	OpenAIAPIKeySecret = "OPENAI_API_KEY"
)

// DefaultsFromEnv reads the Defaults from an environment lookup such as
// os.Getenv.
func DefaultsFromEnv(getenv func(string) string) Defaults {
	return Defaults{OpenAIBaseURL: strings.TrimSpace(getenv(EnvOpenAIBaseURL))}
}

// CheckConfig is Defaults.CheckConfig where no default is known.
func CheckConfig(executor string, cfg map[string]any) []error {
	return Defaults{}.CheckConfig(executor, cfg)
}

// CheckConfig checks an executor_config as written in a pipeline file,
// without network: required keys, value types and ranges, URL syntax. A
// string holding a Liquid tag or a ${NAME} reference stands for any type;
// it is checked when the step runs. Every returned error is a
// *ConfigIssue; those with Warning set name keys the executor ignores, or
// a value the step will only have if the place it runs provides it (a
// gateway step without base_url when d has no OpenAIBaseURL).
func (d Defaults) CheckConfig(executor string, cfg map[string]any) []error {
	if !Known(executor) {
		return []error{&ConfigIssue{Msg: fmt.Sprintf("unknown executor %q (known: %s)", executor, strings.Join(Names(), ", "))}}
	}
	var out []error
	for _, is := range Check(executor, cfg, ModeCompile, d) {
		out = append(out, is)
	}
	return out
}

// Mode says which values may still be unresolved when a config is read.
type Mode int

const (
	ModeCompile Mode = iota // Liquid and ${NAME} unresolved
	ModeBuild               // ${NAME} unresolved
	ModeCall                // everything resolved
)

// Check reads cfg as executor's configuration and returns its issues.
func Check(executor string, cfg map[string]any, m Mode, d Defaults) []*ConfigIssue {
	r := NewReader(cfg, m)
	switch executor {
	case pipeline.ExecGateway:
		ReadGateway(r, d)
	case pipeline.ExecAnthropic:
		ReadAnthropic(r)
	case pipeline.ExecBedrock:
		ReadBedrock(r)
	case pipeline.ExecWebhook:
		ReadWebhook(r)
	case pipeline.ExecNotify:
		ReadNotify(r)
	case pipeline.ExecPipeline:
		r.str("pipeline", true)
		r.object("context")
	case pipeline.ExecHuman:
		// The human step's keys belong to the approval flow, which reads
		// and checks them; here every key is accepted.
		return nil
	case pipeline.ExecOpenClaw:
		_, issues := ReadRemote(agent.RuntimeOpenClaw, cfg, m)
		return issues
	}
	return r.Done()
}

// IssuesError joins the errors (not warnings) among issues into one
// ConfigError, or returns nil.
func IssuesError(executor string, issues []*ConfigIssue) error {
	var msgs []string
	for _, is := range issues {
		if !is.Warning {
			msgs = append(msgs, is.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fault.Errorf[fault.ConfigError]("%s: %s", executor, strings.Join(msgs, "; "))
}

// Reader reads typed values out of a config map, collecting issues.
type Reader struct {
	Config map[string]any
	mode   Mode
	read   map[string]bool
	issues []*ConfigIssue
}

// NewReader returns a reader of cfg in mode m.
func NewReader(cfg map[string]any, m Mode) *Reader {
	return &Reader{Config: cfg, mode: m, read: map[string]bool{}}
}

func (r *Reader) fail(key, format string, args ...any) {
	r.issues = append(r.issues, &ConfigIssue{Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (r *Reader) warn(key, format string, args ...any) {
	r.issues = append(r.issues, &ConfigIssue{Key: key, Msg: fmt.Sprintf(format, args...), Warning: true})
}

// Done adds warnings for keys nobody read and returns the issues, errors
// first, each group sorted by key.
func (r *Reader) Done() []*ConfigIssue {
	for k := range r.Config {
		if !r.read[k] {
			r.issues = append(r.issues, &ConfigIssue{Key: k, Msg: "unknown key, ignored", Warning: true})
		}
	}
	sort.SliceStable(r.issues, func(i, j int) bool {
		a, b := r.issues[i], r.issues[j]
		if a.Warning != b.Warning {
			return !a.Warning
		}
		return a.Key < b.Key
	})
	return r.issues
}

// Get returns the value of key, or nil when it is absent or null.
func (r *Reader) Get(key string) any {
	r.read[key] = true
	return r.Config[key]
}

// pending reports whether v is a string that will only take its final
// value later: a Liquid template at compile time, a ${NAME} before a call.
func (r *Reader) pending(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	switch r.mode {
	case ModeCompile:
		return strings.Contains(s, "{{") || strings.Contains(s, "{%") || strings.Contains(s, "${")
	case ModeBuild:
		return strings.Contains(s, "${")
	}
	return false
}

// str reads a string. Numbers and booleans are accepted as their text.
func (r *Reader) str(key string, required bool) string {
	v := r.Get(key)
	switch x := v.(type) {
	case nil:
		if required {
			r.fail(key, "required")
		}
		return ""
	case string:
		if required && strings.TrimSpace(x) == "" {
			r.fail(key, "must not be empty")
		}
		return x
	case bool:
		return strconv.FormatBool(x)
	}
	if f, ok := Number(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	r.fail(key, "want a string, got %s", TypeName(v))
	return ""
}

// num reads a number within [lo, hi]. Numeric strings are accepted (a
// rendered template is a string).
func (r *Reader) num(key string, lo, hi float64) (float64, bool) {
	v := r.Get(key)
	if v == nil || r.pending(v) {
		return 0, false
	}
	f, ok := Number(v)
	if s, isStr := v.(string); isStr {
		p, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		f, ok = p, err == nil
	}
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		r.fail(key, "want a number, got %s", r.describe(v))
		return 0, false
	}
	if f < lo || f > hi {
		r.fail(key, "must be between %v and %v, got %v", lo, hi, f)
		return 0, false
	}
	return f, true
}

// integer reads a whole number of at least lo.
func (r *Reader) integer(key string, lo int64) (int64, bool) {
	f, ok := r.num(key, float64(lo), math.MaxInt32)
	if !ok {
		return 0, false
	}
	if f != math.Trunc(f) {
		r.fail(key, "want a whole number, got %v", f)
		return 0, false
	}
	return int64(f), true
}

// boolean reads true or false (also as the strings "true" and "false").
func (r *Reader) boolean(key string, def bool) bool {
	v := r.Get(key)
	if v == nil || r.pending(v) {
		return def
	}
	switch x := v.(type) {
	case bool:
		return x
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
			return b
		}
	}
	r.fail(key, "want true or false, got %s", r.describe(v))
	return def
}

// Seconds reads timeout_seconds-like keys: a positive number of Seconds.
func (r *Reader) Seconds(key string) time.Duration {
	f, ok := r.num(key, 0, 7*24*3600)
	if !ok {
		return 0
	}
	if f <= 0 {
		r.fail(key, "must be positive")
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// headers reads a map of header names to string values.
func (r *Reader) headers(key string) map[string]string {
	v := r.Get(key)
	if v == nil || r.pending(v) {
		return nil
	}
	m, ok := stringMap(v)
	if !ok {
		r.fail(key, "want a mapping of header names to strings, got %s", TypeName(v))
		return nil
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		if !ValidHeaderName(k) {
			r.fail(key, "%q is not a valid header name", k)
			continue
		}
		switch x := val.(type) {
		case string:
			if strings.ContainsAny(x, "\r\n") {
				r.fail(key+"."+k, "must not contain line breaks")
				continue
			}
			out[k] = x
		case bool:
			out[k] = strconv.FormatBool(x)
		default:
			if f, ok := Number(x); ok {
				out[k] = strconv.FormatFloat(f, 'f', -1, 64)
				continue
			}
			r.fail(key+"."+k, "want a string, got %s", TypeName(val))
		}
	}
	return out
}

// object reads a mapping.
func (r *Reader) object(key string) map[string]any {
	v := r.Get(key)
	if v == nil || r.pending(v) {
		return nil
	}
	m, ok := stringMap(v)
	if !ok {
		r.fail(key, "want a mapping, got %s", TypeName(v))
		return nil
	}
	return m
}

// url reads an absolute http or https URL.
func (r *Reader) url(key string, required bool) string {
	s := r.str(key, required)
	if s == "" || r.pending(s) {
		return s
	}
	if !httpURL(s) {
		// The value may hold a resolved secret: never quote it.
		r.fail(key, "want an absolute http or https URL")
		return ""
	}
	return strings.TrimSpace(s)
}

// httpURL reports whether s is an absolute http or https URL.
func httpURL(s string) bool {
	u, err := url.Parse(strings.TrimSpace(s))
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// method reads an HTTP method, POST by default.
func (r *Reader) method(key string) string {
	s := strings.ToUpper(strings.TrimSpace(r.str(key, false)))
	if s == "" || r.pending(s) {
		return http.MethodPost
	}
	switch s {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return s
	}
	r.fail(key, "want one of GET, POST, PUT, PATCH, DELETE, got %q", s)
	return http.MethodPost
}

// oneOf reads a string that must be one of choices.
func (r *Reader) oneOf(key string, choices ...string) string {
	s := strings.TrimSpace(r.str(key, false))
	if s == "" || r.pending(s) {
		return ""
	}
	for _, c := range choices {
		if strings.EqualFold(s, c) {
			return c
		}
	}
	r.fail(key, "want one of %s, got %q", strings.Join(choices, ", "), s)
	return ""
}

// Number returns v as a float64 when it is a number of any type a decoded
// config holds.
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func stringMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[string]string:
		out := make(map[string]any, len(m))
		for k, s := range m {
			out[k] = s
		}
		return out, true
	}
	return nil, false
}

// TypeName names v's type as a config's author knows it: null, a string,
// a boolean, a mapping, a list, a number.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any, map[string]string:
		return "a mapping"
	case []any, []string:
		return "a list"
	}
	if _, ok := Number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// describe names v's type, quoting a short string as written in the
// pipeline file; once secrets are resolved, a string may hold one and is
// never quoted.
func (r *Reader) describe(v any) string {
	if s, ok := v.(string); ok && r.mode != ModeCall && len(s) <= 20 {
		return strconv.Quote(s)
	}
	return TypeName(v)
}

// ValidHeaderName reports whether s may name an HTTP header (an RFC 9110
// token: no spaces, controls or separators).
func ValidHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// Names returns every executor name a pipeline may use, sorted. Some of
// them have no Provider: human and pipeline are run by the state machine,
// openclaw runs an agent (Registry.Agent).
func Names() []string {
	return slices.Sorted(slices.Values(pipeline.Executors()))
}

// Known reports whether name is an executor a pipeline may use.
func Known(name string) bool {
	return slices.Contains(pipeline.Executors(), name)
}
