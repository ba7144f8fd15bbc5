package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// liveInterval is how often the live line of running steps is redrawn.
const liveInterval = 200 * time.Millisecond

// liveWidth is the most a live line writes: it must fit one line of the
// terminal for "\r" to rewrite it.
const liveWidth = 79

// progress prints a run's steps as they go, from the engine's history
// events: a line when a step's Task starts, its outcome (status,
// confidence, duration, summary) when it ends. On a terminal (live) it
// also keeps one line at the bottom that says how long each running
// step has run so far, rewritten in place until the step ends; elsewhere
// nothing is ever rewritten.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	colour   palette
	live     bool
	now      func() time.Time
	interval time.Duration        // between redraws of the live line
	started  map[string]time.Time // by task key, for the outcome's duration
	running  map[string]running   // steps whose Task runs, by task key
	shown    bool                 // a live line is on the screen
	ticking  bool                 // the redraw goroutine runs
	quit     chan struct{}
}

// running is a step whose Task runs.
type running struct {
	label string
	since time.Time
}

func newProgress(e env) *progress {
	return &progress{w: e.stdout, colour: e.palette(), live: e.onTerminal(), now: time.Now, interval: liveInterval,
		started: map[string]time.Time{}, running: map[string]running{}}
}

func (p *progress) event(_ string, e store.HistoryEvent) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var where struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(e.Detail, &where)
	key := e.State + "\x00" + where.Path // Map iterations share state names
	switch e.Type {
	case "TaskScheduled":
		if _, seen := p.started[key]; !seen {
			p.started[key] = e.Time
		}
		p.scheduled(key, e)
	case "TaskSucceeded":
		p.ended(key)
		var d struct {
			Output struct {
				Payload task.Response `json:"Payload"`
			} `json:"output"`
		}
		if json.Unmarshal(e.Detail, &d) != nil || d.Output.Payload.Status == "" {
			return
		}
		if !p.answered(key, e, d.Output.Payload) {
			return
		}
	case "TaskFailed", "TaskTimedOut":
		p.ended(key)
		var d struct{ Error, Cause string }
		_ = json.Unmarshal(e.Detail, &d)
		var lambda struct {
			ErrorMessage string `json:"errorMessage"`
		}
		if json.Unmarshal([]byte(d.Cause), &lambda) == nil && lambda.ErrorMessage != "" {
			d.Cause = lambda.ErrorMessage
		}
		var r task.Response
		if d.Error == fault.NameRunEnded && json.Unmarshal([]byte(d.Cause), &r) == nil && r.Status != "" {
			// Not a failure: the step's answer ends the run (stopped,
			// escalated, aborted), handed to the state machine as an error.
			p.answered(key, e, r)
			break
		}
		p.line("  %-28s %s %s\n", e.State, p.colour.status("attempt failed:", 0), oneLine(d.Error+": "+d.Cause, 90))
	}
	p.draw()
}

// answered prints a Task's answer: a step's outcome line, or that it
// continues or waits for a check (then it reports false: the live line
// stays as it is).
func (p *progress) answered(key string, e store.HistoryEvent, r task.Response) bool {
	if r.Status == task.StatusContinue {
		// An agent step that outlives an invocation handed back: the
		// step goes on in its next Task (its duration runs on).
		p.line("  %-28s %s %s\n", r.Step, p.colour.status("continues", 10), agentProgress(r.Agent))
		return false
	}
	if r.Status == task.StatusCheck && r.Check != nil {
		// The step paused for a human check: its approval follows.
		p.line("  %-28s %s check %q (%s)\n", r.Step, p.colour.status("waits for", 10), r.Check.Name, trustProgress(r.Trust))
		return false
	}
	var out struct {
		Confidence *float64 `json:"confidence"`
		Summary    string   `json:"summary"`
	}
	_ = json.Unmarshal(r.Output, &out)
	conf := "   -"
	if out.Confidence != nil {
		conf = fmt.Sprintf("%.2f", *out.Confidence)
	}
	var dur time.Duration
	if t, ok := p.started[key]; ok {
		dur = e.Time.Sub(t)
	}
	delete(p.started, key)
	p.line("  %-28s %s confidence %s  %6s  %s\n", r.Step, p.colour.status(r.Status, 10), conf, dur.Round(time.Millisecond), oneLine(out.Summary, 60))
	if r.Agent != nil {
		p.line("  %-28s %-10s %s\n", "", "", agentProgress(r.Agent))
	}
	if r.Trust != nil {
		p.line("  %-28s %-10s %s\n", "", "", trustProgress(r.Trust))
	}
	return true
}

// scheduled notes a Task that starts: a step's, a branch's or a fan-out
// item's (not the bookkeeping Tasks of joins, approvals and failures)
// prints its start line and runs on the live line until it ends.
func (p *progress) scheduled(key string, e store.HistoryEvent) {
	var d struct {
		Payload struct {
			Mode string `json:"mode"`
			Step struct {
				Name string `json:"name"`
			} `json:"step"`
			Attempt   int             `json:"attempt"`
			Group     string          `json:"group"`
			Item      json.RawMessage `json:"item"`
			Index     int             `json:"index"`
			AgentLoop json.RawMessage `json:"agent_loop"`
		} `json:"payload"`
	}
	if json.Unmarshal(e.Detail, &d) != nil || d.Payload.Step.Name == "" {
		return
	}
	pl := d.Payload
	label := pl.Step.Name
	switch pl.Mode {
	case task.ModeStep, task.ModeAgentTurns:
	case task.ModeBranch:
		if len(pl.Item) > 0 {
			label = fmt.Sprintf("%s/%d", pl.Step.Name, pl.Index)
		}
	default:
		return
	}
	p.running[key] = running{label: label, since: e.Time}
	if pl.Mode == task.ModeAgentTurns && len(pl.AgentLoop) > 0 && string(pl.AgentLoop) != "null" {
		return // the next Task of a step already started
	}
	what := ""
	if pl.Attempt > 1 {
		what = fmt.Sprintf("attempt %d", pl.Attempt)
	}
	p.line("  %-28s %s %s\n", label, p.colour.status("started", 10), what)
	p.tick()
}

// ended notes that a Task ended.
func (p *progress) ended(key string) { delete(p.running, key) }

// line writes a line of progress, clearing the live line first.
func (p *progress) line(format string, args ...any) {
	p.clear()
	fmt.Fprint(p.w, strings.TrimRight(fmt.Sprintf(format, args...), " \n")+"\n")
}

// clear takes the live line off the screen.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// draw writes the live line of the steps that run, how long each has run
// ("  running  draft 3.2s, review 0.4s"), over the previous one.
func (p *progress) draw() {
	if !p.live || len(p.running) == 0 {
		p.clear()
		return
	}
	rs := make([]running, 0, len(p.running))
	for _, r := range p.running {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].since.Equal(rs[j].since) {
			return rs[i].since.Before(rs[j].since)
		}
		return rs[i].label < rs[j].label
	})
	now := p.now()
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = oneLine(r.label, 40) + " " + elapsed(max(now.Sub(r.since), 0))
	}
	text := oneLine(strings.Join(parts, ", "), liveWidth-13)
	fmt.Fprintf(p.w, "\r\x1b[K  %s %s", p.colour.status("running", 10), text)
	p.shown = true
}

// elapsed is a running step's time so far: "0.4s", "12.0s", "2m5s".
func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// tick starts the goroutine that redraws the live line while steps run;
// it ends when none runs, or on stop.
func (p *progress) tick() {
	if !p.live || p.ticking {
		return
	}
	p.ticking = true
	p.quit = make(chan struct{})
	quit := p.quit
	go func() {
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			p.mu.Lock()
			if p.quit != quit {
				p.mu.Unlock()
				return // stopped, and another goroutine ticks now
			}
			p.draw()
			if len(p.running) == 0 {
				p.ticking = false
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
		}
	}()
}

// stop ends the live line: the run is over, or the command asks
// something on the terminal.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ticking {
		close(p.quit)
		p.ticking = false
	}
	p.running = map[string]running{}
	p.clear()
}
