package asl

import (
	"strings"
)

// Query languages.
const (
	JSONata  = "JSONata"
	JSONPath = "JSONPath"
)

// State types, as written in a state's "Type" field.
const (
	TypePass     = "Pass"
	TypeTask     = "Task"
	TypeChoice   = "Choice"
	TypeParallel = "Parallel"
	TypeMap      = "Map"
	TypeWait     = "Wait"
	TypeSucceed  = "Succeed"
	TypeFail     = "Fail"
)

// Task resources (optimized service integrations) the compiler emits and the
// local engine resolves.
const (
	// ResourceLambdaInvoke calls a Lambda function; Arguments carry
	// FunctionName and Payload and the result is the invoke response
	// ({"Payload": ..., "StatusCode": 200, ...}).
	ResourceLambdaInvoke = "arn:aws:states:::lambda:invoke"
	// ResourceLambdaInvokeWaitForTaskToken calls a Lambda function with a
	// task token and waits until SendTaskSuccess or SendTaskFailure names it;
	// the result is the output sent with SendTaskSuccess.
	ResourceLambdaInvokeWaitForTaskToken = "arn:aws:states:::lambda:invoke.waitForTaskToken"
	// ResourceStartExecutionSync starts a child state machine and waits for
	// it; Arguments carry StateMachineArn, Input and optionally Name. The
	// result is the DescribeExecution response with Output parsed as JSON.
	ResourceStartExecutionSync = "arn:aws:states:::states:startExecution.sync:2"
)

// Error names defined by the States Language. States may report other names,
// which must not begin with "States.".
const (
	StatesALL                             = "States.ALL"
	StatesTaskFailed                      = "States.TaskFailed"
	StatesTimeout                         = "States.Timeout"
	StatesHeartbeatTimeout                = "States.HeartbeatTimeout"
	StatesRuntime                         = "States.Runtime"
	StatesQueryEvaluationError            = "States.QueryEvaluationError"
	StatesBranchFailed                    = "States.BranchFailed"
	StatesNoChoiceMatched                 = "States.NoChoiceMatched"
	StatesPermissions                     = "States.Permissions"
	StatesDataLimitExceeded               = "States.DataLimitExceeded"
	StatesIntrinsicFailure                = "States.IntrinsicFailure"
	StatesExceedToleratedFailureThreshold = "States.ExceedToleratedFailureThreshold"
)

// Jitter strategies of a Retrier.
const (
	JitterFull = "FULL"
	JitterNone = "NONE"
)

// Map processor modes.
const (
	ModeInline      = "INLINE"
	ModeDistributed = "DISTRIBUTED"
)

// Limits Step Functions enforces: the home of each (the compiler and the
// local engine use these).
const (
	MaxStateNameLength = 80
	// MaxDefinitionBytes bounds a definition, measured on its compact
	// encoding (what a stack deploys).
	MaxDefinitionBytes = 1 << 20
	// MaxPayloadBytes bounds a state's input and output, a variable and a
	// task's result.
	MaxPayloadBytes = 256 << 10
)

// Defaults of a Retrier's optional fields.
const (
	DefaultIntervalSeconds = 1
	DefaultMaxAttempts     = 3
	DefaultBackoffRate     = 2.0
)

// StateMachine is a whole ASL definition. The zero value is empty; build one
// by setting StartAt and adding states with States.Add.
type StateMachine struct {
	Comment        string
	QueryLanguage  string
	StartAt        string
	TimeoutSeconds int
	States         States
}

// Branch is a Parallel state's branch: a nested state machine whose states
// form their own variable scope.
type Branch struct {
	Comment string `json:",omitempty"`
	StartAt string
	States  States
}

// ItemProcessor is the state machine a Map state runs for each item.
type ItemProcessor struct {
	ProcessorConfig *ProcessorConfig `json:",omitempty"`
	StartAt         string
	States          States
}

// ProcessorConfig selects how a Map state runs its iterations. The local
// engine runs INLINE maps only.
type ProcessorConfig struct {
	Mode          string `json:",omitempty"`
	ExecutionType string `json:",omitempty"`
}

// State is one state of a state machine: *Pass, *Task, *Choice, *Parallel,
// *Map, *Wait, *Succeed or *Fail.
type State interface {
	// Type returns the state's "Type" field.
	Type() string
	isState()
}

// Fields whose value may be any JSON value in which every string of the form
// "{% expr %}" is a JSONata expression (also inside objects and arrays) are
// typed any: Arguments, Output, Items, ItemSelector, Credentials. Assign maps
// variable names to such values. Numeric fields that JSONata may compute
// (TimeoutSeconds, HeartbeatSeconds, Seconds, MaxConcurrency) hold either a
// number or an expression string; nil means absent.

// Pass passes its input (or its Output) to the next state.
type Pass struct {
	Comment       string         `json:",omitempty"`
	QueryLanguage string         `json:",omitempty"`
	Output        any            `json:",omitempty"`
	Assign        map[string]any `json:",omitempty"`
	Next          string         `json:",omitempty"`
	End           bool           `json:",omitempty"`
}

// Task runs the work its Resource names.
type Task struct {
	Comment          string `json:",omitempty"`
	QueryLanguage    string `json:",omitempty"`
	Resource         string
	Arguments        any            `json:",omitempty"`
	Credentials      any            `json:",omitempty"`
	TimeoutSeconds   any            `json:",omitempty"`
	HeartbeatSeconds any            `json:",omitempty"`
	Output           any            `json:",omitempty"`
	Assign           map[string]any `json:",omitempty"`
	Retry            []Retrier      `json:",omitempty"`
	Catch            []Catcher      `json:",omitempty"`
	Next             string         `json:",omitempty"`
	End              bool           `json:",omitempty"`
}

// Choice transitions to the Next of the first rule whose Condition is true,
// else to Default.
type Choice struct {
	Comment       string `json:",omitempty"`
	QueryLanguage string `json:",omitempty"`
	Choices       []ChoiceRule
	Default       string         `json:",omitempty"`
	Output        any            `json:",omitempty"`
	Assign        map[string]any `json:",omitempty"`
}

// ChoiceRule is one rule of a Choice state. Condition is a boolean or a
// JSONata string that must evaluate to a boolean.
type ChoiceRule struct {
	Comment   string `json:",omitempty"`
	Condition any
	Output    any            `json:",omitempty"`
	Assign    map[string]any `json:",omitempty"`
	Next      string
}

// Parallel runs its branches concurrently; its result is the array of the
// branches' outputs, in branch order.
type Parallel struct {
	Comment       string `json:",omitempty"`
	QueryLanguage string `json:",omitempty"`
	Arguments     any    `json:",omitempty"`
	Branches      []Branch
	Output        any            `json:",omitempty"`
	Assign        map[string]any `json:",omitempty"`
	Retry         []Retrier      `json:",omitempty"`
	Catch         []Catcher      `json:",omitempty"`
	Next          string         `json:",omitempty"`
	End           bool           `json:",omitempty"`
}

// Map runs ItemProcessor once per item of Items (default: the state input,
// which must then be an array); its result is the array of the iterations'
// outputs, in item order. MaxConcurrency 0 (or absent) means no limit.
type Map struct {
	Comment        string `json:",omitempty"`
	QueryLanguage  string `json:",omitempty"`
	Items          any    `json:",omitempty"`
	ItemSelector   any    `json:",omitempty"`
	ItemProcessor  ItemProcessor
	MaxConcurrency any            `json:",omitempty"`
	Output         any            `json:",omitempty"`
	Assign         map[string]any `json:",omitempty"`
	Retry          []Retrier      `json:",omitempty"`
	Catch          []Catcher      `json:",omitempty"`
	Next           string         `json:",omitempty"`
	End            bool           `json:",omitempty"`
}

// Wait delays the run by Seconds or until Timestamp (RFC 3339); exactly one
// of them is set.
type Wait struct {
	Comment       string         `json:",omitempty"`
	QueryLanguage string         `json:",omitempty"`
	Seconds       any            `json:",omitempty"`
	Timestamp     string         `json:",omitempty"`
	Output        any            `json:",omitempty"`
	Assign        map[string]any `json:",omitempty"`
	Next          string         `json:",omitempty"`
	End           bool           `json:",omitempty"`
}

// Succeed ends the run (or its branch or iteration) successfully.
type Succeed struct {
	Comment       string `json:",omitempty"`
	QueryLanguage string `json:",omitempty"`
	Output        any    `json:",omitempty"`
}

// Fail ends the run (or fails its branch or iteration) with Error and Cause,
// each a string or a JSONata string evaluating to a string.
type Fail struct {
	Comment       string `json:",omitempty"`
	QueryLanguage string `json:",omitempty"`
	Error         string `json:",omitempty"`
	Cause         string `json:",omitempty"`
}

// Retrier is one entry of a state's Retry array. Zero values of the optional
// fields mean their defaults; MaxAttempts is a pointer because 0 (never
// retry) differs from absent (3).
type Retrier struct {
	ErrorEquals     []string
	IntervalSeconds int     `json:",omitempty"`
	MaxAttempts     *int    `json:",omitempty"`
	BackoffRate     float64 `json:",omitempty"`
	MaxDelaySeconds int     `json:",omitempty"`
	JitterStrategy  string  `json:",omitempty"`
	Comment         string  `json:",omitempty"`
}

// Attempts returns a MaxAttempts value for a Retrier literal.
func Attempts(n int) *int { return &n }

// Interval returns the effective IntervalSeconds.
func (r Retrier) Interval() int {
	if r.IntervalSeconds <= 0 {
		return DefaultIntervalSeconds
	}
	return r.IntervalSeconds
}

// Attempts returns the effective MaxAttempts.
func (r Retrier) Attempts() int {
	if r.MaxAttempts == nil {
		return DefaultMaxAttempts
	}
	return *r.MaxAttempts
}

// Backoff returns the effective BackoffRate.
func (r Retrier) Backoff() float64 {
	if r.BackoffRate == 0 {
		return DefaultBackoffRate
	}
	return r.BackoffRate
}

// Catcher is one entry of a state's Catch array.
type Catcher struct {
	ErrorEquals []string
	Output      any            `json:",omitempty"`
	Assign      map[string]any `json:",omitempty"`
	Next        string
	Comment     string `json:",omitempty"`
}

// Matches reports whether errName is one of the names in errorEquals, with
// the States Language's wildcards: States.ALL matches every error except
// States.Runtime and States.DataLimitExceeded, and States.TaskFailed matches
// every error except States.Timeout (and those two).
func Matches(errorEquals []string, errName string) bool {
	for _, e := range errorEquals {
		switch {
		case e == errName:
			return true
		case e == StatesALL:
			if errName != StatesRuntime && errName != StatesDataLimitExceeded {
				return true
			}
		case e == StatesTaskFailed:
			if errName != StatesTimeout && errName != StatesRuntime && errName != StatesDataLimitExceeded &&
				errName != StatesHeartbeatTimeout {
				return true
			}
		}
	}
	return false
}

func (*Pass) Type() string     { return TypePass }
func (*Task) Type() string     { return TypeTask }
func (*Choice) Type() string   { return TypeChoice }
func (*Parallel) Type() string { return TypeParallel }
func (*Map) Type() string      { return TypeMap }
func (*Wait) Type() string     { return TypeWait }
func (*Succeed) Type() string  { return TypeSucceed }
func (*Fail) Type() string     { return TypeFail }

func (*Pass) isState()     {}
func (*Task) isState()     {}
func (*Choice) isState()   {}
func (*Parallel) isState() {}
func (*Map) isState()      {}
func (*Wait) isState()     {}
func (*Succeed) isState()  {}
func (*Fail) isState()     {}

// Expr returns s as a JSONata string: "{% s %}".
func Expr(s string) string { return "{% " + s + " %}" }

// IsExpr reports whether s is a JSONata string: it begins with "{%" and ends
// with "%}".
func IsExpr(s string) bool {
	return len(s) >= 4 && strings.HasPrefix(s, "{%") && strings.HasSuffix(s, "%}")
}

// ExprBody returns the expression inside a JSONata string, trimmed, and
// whether s is one.
func ExprBody(s string) (string, bool) {
	if !IsExpr(s) {
		return "", false
	}
	return strings.TrimSpace(s[2 : len(s)-2]), true
}

// Literal returns a value that evaluates to the string s wherever JSONata
// strings are evaluated: s itself when it is plain text (see [IsPlain]),
// else the expression {% <s quoted> %}, which evaluates to s.
func Literal(s string) string {
	if IsPlain(s) {
		return s
	}
	return Expr(Quote(s))
}

// LiteralValue is [Literal] applied to every string in v, also nested in
// objects and arrays: static data embedded in a JSONata state (Arguments,
// Output, Assign) reads back exactly as v. Maps and slices are copied;
// object keys are never evaluated and stay as they are.
func LiteralValue(v any) any {
	switch v := v.(type) {
	case string:
		return Literal(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = LiteralValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = LiteralValue(e)
		}
		return out
	}
	return v
}

// IsPlain reports whether s can stand in a JSONata state as itself: Step
// Functions reads it as text, not as an expression, and so do definition
// validators. That is a non-empty string that neither begins with "{%"
// nor ends with "%}" (Step Functions evaluates a string that does both;
// the pinned asl-validator rejects one that does either, as half an
// expression) and holds no line terminator (\n, \r, U+2028, U+2029: the
// validator matches text with a JavaScript pattern whose "." stops at
// them, and rejects the empty string the same way).
func IsPlain(s string) bool {
	if s == "" || strings.HasPrefix(s, "{%") || strings.HasSuffix(s, "%}") {
		return false
	}
	return !strings.ContainsAny(s, "\n\r\u2028\u2029")
}

// Quote returns s as a single-quoted JSONata string literal that evaluates
// to s in any JSONata evaluator. A backslash, a quote, every control
// character, DEL, the line and paragraph separators and a % next to a
// brace are escaped (\\, \uXXXX, \n, \r, \t), so the literal is one line
// of printable text in which neither "{%" nor "%}" occurs: it can sit
// inside "{% ... %}" however its delimiters are found.
func Quote(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	escape := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[(r>>shift)&15])
		}
	}
	for i, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\'' || r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029':
			escape(r) // JSONata has no \' escape
		case r == '%' && (i > 0 && s[i-1] == '{' || i+1 < len(s) && s[i+1] == '}'):
			escape(r)
		default:
			b.WriteRune(r) // an invalid byte becomes U+FFFD, as JSON would have it
		}
	}
	b.WriteByte('\'')
	return b.String()
}
