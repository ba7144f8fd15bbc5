package fault

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// TestNamesArePinned pins each fault's Go type name: it is the errorType the
// Lambda runtime reports and the ASL error name Retry and Catch match.
func TestNamesArePinned(t *testing.T) {
	cases := []struct {
		err  error
		name string
	}{
		{&ExecutorTimeout{}, "ExecutorTimeout"},
		{&ExecutorUnavailable{}, "ExecutorUnavailable"},
		{&RateLimited{}, "RateLimited"},
		{&ExecutorRejected{}, "ExecutorRejected"},
		{&InvalidOutput{}, "InvalidOutput"},
		{&ModelRefused{}, "ModelRefused"},
		{&ConfigError{}, "ConfigError"},
		{&TemplateError{}, "TemplateError"},
		{&AgentIterationsExhausted{}, "AgentIterationsExhausted"},
		{&AgentDeadlineExceeded{}, "AgentDeadlineExceeded"},
	}
	for _, c := range cases {
		// The Lambda runtime names an error by its (pointer-stripped) type.
		if got := reflect.TypeOf(c.err).Elem().Name(); got != c.name {
			t.Errorf("type name = %q, want %q", got, c.name)
		}
		if got := Name(c.err); got != c.name {
			t.Errorf("Name(%T) = %q, want %q", c.err, got, c.name)
		}
	}
}

// TestRunEndedName pins the name of a run-ending answer: not its Go type
// name (the step function's Lambda adapter reports it by this name), a
// name with a dot that no Go type can have.
func TestRunEndedName(t *testing.T) {
	err := fmt.Errorf("step %q: %w", "triage", &RunEnded{Msg: `{"status":"stopped"}`})
	if Name(err) != "Stepline.RunEnded" || NameRunEnded != "Stepline.RunEnded" {
		t.Errorf("Name = %q", Name(err))
	}
	var ended *RunEnded
	if s := Surface(err); !errors.As(s, &ended) || s.Error() != `{"status":"stopped"}` {
		t.Errorf("Surface = %T %q: the answer must stay the message", s, s)
	}
	if IsRetryable(err) {
		t.Error("a run-ending answer is retryable")
	}
}

func TestSurfaceKeepsContextAndType(t *testing.T) {
	err := fmt.Errorf("step %q: %w", "triage", &RateLimited{Msg: "http 429"})
	s := Surface(err)
	var rl *RateLimited
	if !errors.As(s, &rl) || s != error(rl) {
		t.Fatalf("Surface returned %T, want *RateLimited at the top", s)
	}
	if s.Error() != `step "triage": http 429` {
		t.Errorf("message = %q", s.Error())
	}
	if !IsRetryable(err) || IsRetryable(&ConfigError{}) {
		t.Error("IsRetryable disagrees with Retryable")
	}
	plain := errors.New("plain")
	if Surface(plain) != plain || Name(plain) != "" {
		t.Error("a plain error must pass through unnamed")
	}
}

func TestErrorf(t *testing.T) {
	err := Errorf[ConfigError]("secret %q is not set", "API_KEY")
	if Name(err) != NameConfigError || err.Error() != `secret "API_KEY" is not set` {
		t.Errorf("Errorf = %T %q", err, err)
	}
}

// TestAgentFaultsSurfaceAndStayUnretried checks that the agent loop's
// faults keep their type through Surface and are not in Retryable (the
// compiler's Retry rules): a loop that spent its iterations or its time
// would spend them again.
func TestAgentFaultsSurfaceAndStayUnretried(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{NameAgentIterationsExhausted, Errorf[AgentIterationsExhausted]("agent %q: 20 iterations", "sre")},
		{NameAgentDeadlineExceeded, Errorf[AgentDeadlineExceeded]("agent %q: deadline", "sre")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wrapped := fmt.Errorf("step %q: %w", "investigate", c.err)
			s := Surface(wrapped)
			if Name(s) != c.name || s.Error() != wrapped.Error() || Find(s) != s {
				t.Errorf("Surface = %T %q, want %s with the full message", s, s, c.name)
			}
			if IsRetryable(wrapped) {
				t.Errorf("%s is retryable", c.name)
			}
		})
	}
}

// TestEveryFaultSurfacesAndFormats runs Surface and Errorf over every
// fault type: each keeps its type and name, takes the full message, and
// keeps its other fields (RateLimited's RetryAfter).
func TestEveryFaultSurfacesAndFormats(t *testing.T) {
	cases := []struct {
		err    error
		errorf func(string, ...any) error
	}{
		{&ExecutorTimeout{Msg: "m"}, Errorf[ExecutorTimeout]},
		{&ExecutorUnavailable{Msg: "m"}, Errorf[ExecutorUnavailable]},
		{&RateLimited{Msg: "m", RetryAfter: 7 * time.Second}, Errorf[RateLimited]},
		{&ExecutorRejected{Msg: "m"}, Errorf[ExecutorRejected]},
		{&InvalidOutput{Msg: "m"}, Errorf[InvalidOutput]},
		{&ModelRefused{Msg: "m"}, Errorf[ModelRefused]},
		{&ConfigError{Msg: "m"}, Errorf[ConfigError]},
		{&TemplateError{Msg: "m"}, Errorf[TemplateError]},
		{&AgentIterationsExhausted{Msg: "m"}, Errorf[AgentIterationsExhausted]},
		{&AgentDeadlineExceeded{Msg: "m"}, Errorf[AgentDeadlineExceeded]},
	}
	for _, c := range cases {
		name := reflect.TypeOf(c.err).Elem().Name()
		t.Run(name, func(t *testing.T) {
			if Surface(c.err) != c.err {
				t.Error("Surface of a bare fault must return it unchanged")
			}
			s := Surface(fmt.Errorf("step %q: %w", "a", c.err))
			if reflect.TypeOf(s) != reflect.TypeOf(c.err) || Name(s) != name || s.Error() != `step "a": m` {
				t.Errorf("Surface = %T %q (%s)", s, s, Name(s))
			}
			want := reflect.ValueOf(c.err).Elem()
			got := reflect.ValueOf(s).Elem()
			for i := 0; i < want.NumField(); i++ {
				if f := want.Type().Field(i).Name; f != "Msg" && !reflect.DeepEqual(got.Field(i).Interface(), want.Field(i).Interface()) {
					t.Errorf("Surface lost %s: %v, want %v", f, got.Field(i), want.Field(i))
				}
			}
			e := c.errorf("n=%d", 3)
			if reflect.TypeOf(e) != reflect.TypeOf(c.err) || Name(e) != name || e.Error() != "n=3" {
				t.Errorf("Errorf = %T %q", e, e)
			}
		})
	}
	if got, want := Retryable(), []string{NameExecutorTimeout, NameExecutorUnavailable, NameRateLimited, NameInvalidOutput}; !reflect.DeepEqual(got, want) {
		t.Errorf("Retryable() = %v, want %v", got, want)
	}
	Retryable()[0] = "changed"
	if Retryable()[0] != NameExecutorTimeout {
		t.Error("Retryable() shares its slice with its callers")
	}
}
