package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/store"
)

func TestBasicsVariablesAndChoice(t *testing.T) {
	def := loadDef(t, "basics.asl.json")
	cases := []struct {
		name, input, want string
	}{
		{"big", `{"n": 12, "name": "ann"}`,
			`{"input":{"n":12,"list":[1,24],"seenX":5},"x":42,"old":5,"size":"big","name":"ann","state":"Done","execution":"big","original":12}`},
		{"medium with rule output", `{"n": 3, "name": "bo"}`,
			`{"input":{"n":3,"routed":true},"x":42,"old":5,"size":"medium","name":"bo","state":"Done","execution":"medium with rule output","original":3}`},
		{"default assigns", `{"n": 0, "name": "cy"}`,
			`{"input":{"n":0,"list":[1,0],"seenX":5},"x":42,"old":5,"size":"small","name":"cy","state":"Done","execution":"default assigns","original":0}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{Journal: newJournal(), Clock: newClock(true)})
			res, err := e.Start(context.Background(), c.name, def, json.RawMessage(c.input))
			res = mustResult(t, res, err, StatusSucceeded)
			jsonEqual(t, res.Output, c.want)
		})
	}
}

func TestHistoryRecordsTransitions(t *testing.T) {
	j := newJournal()
	var seen []string
	e := New(Config{Journal: j, Clock: newClock(true), OnEvent: func(run string, ev store.HistoryEvent) {
		seen = append(seen, ev.Type)
	}})
	def := loadDef(t, "basics.asl.json")
	_, err := e.Start(context.Background(), "h", def, json.RawMessage(`{"n":1,"name":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := e.History(context.Background(), "h")
	if err != nil {
		t.Fatal(err)
	}
	want := "ExecutionStarted StateEntered:Init StateExited:Init StateEntered:Swap StateExited:Swap " +
		"StateEntered:Route StateExited:Route StateEntered:Done StateExited:Done ExecutionSucceeded"
	if got := strings.Join(eventTypes(evs), " "); got != want {
		t.Errorf("history\n got %s\nwant %s", got, want)
	}
	if len(seen) != len(evs) {
		t.Errorf("OnEvent saw %d events, history has %d", len(seen), len(evs))
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, ev.Seq)
		}
	}
}

func TestRetryBackoffAndCatch(t *testing.T) {
	def := loadDef(t, "retry_catch.asl.json")
	cases := []struct {
		name     string
		failures []error // returned by successive attempts, then success
		jitter   float64
		want     string
		sleeps   []time.Duration
		attempts int
	}{
		{
			name:     "backoff grows, capped by MaxDelaySeconds",
			failures: []error{&fault.ExecutorTimeout{Msg: "t1"}, &fault.RateLimited{Msg: "429"}, &fault.ExecutorTimeout{Msg: "t3"}},
			want:     `{"result":{"attempt":3,"mode":"m"},"status":200}`,
			sleeps:   []time.Duration{2 * time.Second, 6 * time.Second, 10 * time.Second},
			attempts: 4,
		},
		{
			name:     "retries exhausted then States.ALL catch",
			failures: []error{&fault.ExecutorTimeout{Msg: "a"}, &fault.ExecutorTimeout{Msg: "b"}, &fault.ExecutorTimeout{Msg: "c"}, &fault.ExecutorTimeout{Msg: "d"}},
			want:     `{"recovered":{"Error":"ExecutorTimeout","Cause":"{\"errorMessage\":\"d\",\"errorType\":\"ExecutorTimeout\"}"},"why":"none"}`,
			sleeps:   []time.Duration{2 * time.Second, 6 * time.Second, 10 * time.Second},
			attempts: 4,
		},
		{
			name:     "MaxAttempts 0 never retries; first matching catcher wins",
			failures: []error{Never{}},
			want:     `{"recovered":{"caught":{"Error":"Never","Cause":"{\"errorMessage\":\"never again\",\"errorType\":\"Never\"}"},"input":{"mode":"m"}},"why":"Never"}`,
			attempts: 1,
		},
		{
			name:     "plain Go errors are named like the Lambda runtime names them; States.ALL retrier",
			failures: []error{errors.New("boom")},
			want:     `{"result":{"attempt":1,"mode":"m"},"status":200}`,
			sleeps:   []time.Duration{time.Second},
			attempts: 2,
		},
		{
			name:     "full jitter scales the delay",
			failures: []error{&fault.RateLimited{Msg: "429"}},
			jitter:   0.25,
			want:     `{"result":{"attempt":1,"mode":"m"},"status":200}`,
			sleeps:   []time.Duration{2 * time.Second},
			attempts: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := def
			if c.jitter > 0 {
				d = loadDef(t, "retry_catch.asl.json")
				st, _ := d.States.Get("Call")
				st.(*asl.Task).Retry[1].JitterStrategy = asl.JitterFull
				c.sleeps = []time.Duration{time.Duration(float64(c.sleeps[0]) * c.jitter)}
			}
			var n atomic.Int32
			h := func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
				i := int(n.Add(1)) - 1
				if i < len(c.failures) {
					return nil, c.failures[i]
				}
				return p, nil
			}
			clock := newClock(true)
			e := New(Config{Journal: newJournal(), Clock: clock, Rand: fixedRand(c.jitter),
				Resources: Functions{"${Flaky}": h}})
			res, err := e.Start(context.Background(), "r", d, json.RawMessage(`{"mode":"m"}`))
			res = mustResult(t, res, err, StatusSucceeded)
			jsonEqual(t, res.Output, c.want)
			if got := clock.recorded(); !equalDurations(got, c.sleeps) {
				t.Errorf("sleeps = %v, want %v", got, c.sleeps)
			}
			if int(n.Load()) != c.attempts {
				t.Errorf("attempts = %d, want %d", n.Load(), c.attempts)
			}
		})
	}
}

// Never is a handler error whose ASL name is its type name, "Never".
type Never struct{}

func (Never) Error() string { return "never again" }

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
