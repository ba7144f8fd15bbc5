package fault

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
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
