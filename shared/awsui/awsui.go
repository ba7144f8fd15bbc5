package awsui

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/tasktoken"
	"github.com/stepline/stepline/shared/webui"
)

// Bounds.
const (
	// MaxStateMachines bounds the state machines listed.
	MaxStateMachines = 1000
	// MaxHistoryEvents bounds the history events read of one execution:
	// the latest ones (the page shows webui.MaxLogEvents of them).
	MaxHistoryEvents = 2000
	// RelistEvery is how often, at most, the state machines are listed
	// again for a run whose state machine was not seen.
	RelistEvery = 30 * time.Second
	// CallTimeout bounds the AWS calls made without a request's context
	// (the console link's run lookup).
	CallTimeout = 10 * time.Second
	// LivePoll is how often a live run view reads the run and its
	// execution history (the UI's local default is 500 ms; Step Functions
	// throttles GetExecutionHistory sooner than SQLite).
	LivePoll = 2 * time.Second
	// maxPipelinesCached bounds the run → pipeline cache (a run's
	// pipeline never changes); it is emptied when full.
	maxPipelinesCached = 10000
)

// SFN is the Step Functions API the UI calls (satisfied by *sfn.Client).
type SFN interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	ListStateMachines(ctx context.Context, in *sfn.ListStateMachinesInput, optFns ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error)
	DescribeStateMachine(ctx context.Context, in *sfn.DescribeStateMachineInput, optFns ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error)
	GetExecutionHistory(ctx context.Context, in *sfn.GetExecutionHistoryInput, optFns ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error)
}

var _ SFN = (*sfn.Client)(nil)

// taskSender is an SFN's SendTaskSuccess as a tasktoken.Sender.
type taskSender struct{ c SFN }

func (s taskSender) SendTaskSuccess(ctx context.Context, taskToken, output string) error {
	_, err := s.c.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(taskToken), Output: aws.String(output)})
	return err
}

// Store is what the UI reads and decides in the stack's table
// (*dynamo.Store).
type Store interface {
	webui.Store
	approval.Store
}

// Config is what New needs.
type Config struct {
	Store  Store
	SFN    SFN
	Region string // for the console links
	// Prefix names the state machines: <Prefix>-<pipeline>.
	Prefix string
	Logger *slog.Logger
	Now    func() time.Time
}

// Browser holds what the UI needs of the stack: the state machines by
// pipeline, and the clients.
type Browser struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	machines  map[string]machine // by state machine name
	listed    time.Time
	pipelines map[string]string // run ID → pipeline
}

type machine struct {
	arn      string
	pipeline string
	def      *asl.StateMachine // nil: not read or not parsed
}

// New lists the stack's state machines and reads their definitions.
func New(ctx context.Context, cfg Config) (*Browser, error) {
	if cfg.Store == nil || cfg.SFN == nil {
		return nil, errors.New("aws UI: a store and a Step Functions client are needed")
	}
	if cfg.Prefix == "" {
		return nil, errors.New("aws UI: no state machine prefix")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Browser{cfg: cfg, log: cfg.Logger}
	if b.log == nil {
		b.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := b.list(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// list lists the state machines named with the prefix and reads the
// definitions of those not read before.
func (b *Browser) list(ctx context.Context) error {
	found := map[string]machine{}
	in := &sfn.ListStateMachinesInput{MaxResults: 100}
	n := 0
	for {
		out, err := b.cfg.SFN.ListStateMachines(ctx, in)
		if err != nil {
			return fmt.Errorf("list state machines: %w", err)
		}
		for _, m := range out.StateMachines {
			n++
			name := aws.ToString(m.Name)
			pipeline, ok := strings.CutPrefix(name, b.cfg.Prefix+"-")
			if !ok || pipeline == "" {
				continue
			}
			found[name] = machine{arn: aws.ToString(m.StateMachineArn), pipeline: pipeline}
		}
		if out.NextToken == nil || n >= MaxStateMachines {
			break
		}
		in.NextToken = out.NextToken
	}
	b.mu.Lock()
	old := b.machines
	b.mu.Unlock()
	for name, m := range found {
		if o, ok := old[name]; ok && o.arn == m.arn {
			found[name] = o
			continue
		}
		d, err := b.cfg.SFN.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(m.arn)})
		if err != nil {
			b.log.Warn("describe state machine", "state_machine", name, "err", err)
			continue
		}
		if def, err := asl.Parse([]byte(aws.ToString(d.Definition))); err == nil {
			m.def = def
		} else {
			b.log.Warn("parse state machine definition", "state_machine", name, "err", err)
		}
		found[name] = m
	}
	b.mu.Lock()
	b.machines, b.listed = found, b.cfg.Now()
	b.mu.Unlock()
	return nil
}

// machineOf returns the state machine of a pipeline, listing the state
// machines again (at most every RelistEvery) when it is not known.
func (b *Browser) machineOf(ctx context.Context, pipeline string) (machine, bool) {
	name := awsenv.StateMachineName(b.cfg.Prefix, pipeline)
	b.mu.Lock()
	m, ok := b.machines[name]
	stale := b.cfg.Now().Sub(b.listed) >= RelistEvery
	b.mu.Unlock()
	if ok || !stale {
		return m, ok
	}
	if err := b.list(ctx); err != nil {
		b.log.Warn("list state machines", "err", err)
		return machine{}, false
	}
	b.mu.Lock()
	m, ok = b.machines[name]
	b.mu.Unlock()
	return m, ok
}

// ExecutionARN returns the ARN of a run's execution: the execution named
// by the run's ID on its pipeline's state machine.
func (b *Browser) ExecutionARN(ctx context.Context, runID string) (string, error) {
	pipeline, err := b.pipelineOf(ctx, runID)
	if err != nil {
		return "", err
	}
	m, ok := b.machineOf(ctx, pipeline)
	if !ok {
		return "", fmt.Errorf("no state machine %q for pipeline %q", awsenv.StateMachineName(b.cfg.Prefix, pipeline), pipeline)
	}
	return executionARN(m.arn, runID)
}

// pipelineOf returns a run's pipeline, read once.
func (b *Browser) pipelineOf(ctx context.Context, runID string) (string, error) {
	b.mu.Lock()
	p, ok := b.pipelines[runID]
	b.mu.Unlock()
	if ok {
		return p, nil
	}
	run, err := b.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		return "", err
	}
	b.mu.Lock()
	if b.pipelines == nil || len(b.pipelines) >= maxPipelinesCached {
		b.pipelines = map[string]string{}
	}
	b.pipelines[runID] = run.Pipeline
	b.mu.Unlock()
	return run.Pipeline, nil
}

// executionARN turns a state machine's ARN
// (arn:P:states:R:A:stateMachine:NAME) into its execution's.
func executionARN(machineARN, runID string) (string, error) {
	parts := strings.Split(machineARN, ":")
	if len(parts) != 7 || parts[5] != "stateMachine" {
		return "", fmt.Errorf("state machine ARN %q is not arn:partition:states:region:account:stateMachine:name", machineARN)
	}
	parts[5] = "execution"
	return strings.Join(parts, ":") + ":" + runID, nil
}

// ConsoleURL returns the Step Functions console page of an execution.
func ConsoleURL(region, executionARN string) string {
	return "https://" + region + ".console.aws.amazon.com/states/home?region=" + url.QueryEscape(region) +
		"#/v2/executions/details/" + executionARN
}

// History reads a run's execution history, the latest MaxHistoryEvents
// events, oldest first, as the UI shows a local run's: StateEntered and
// StateExited with the state's name, the other events under their Step
// Functions type with the state they happened in, and failures' error
// and cause as the detail. A run without an execution (it is gone: Step
// Functions keeps ended ones 90 days) has no history.
func (b *Browser) History(ctx context.Context, runID string) ([]store.HistoryEvent, error) {
	arn, err := b.ExecutionARN(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("history of run %q: %w", runID, err)
	}
	var raw []sfntypes.HistoryEvent
	in := &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), ReverseOrder: true, MaxResults: 1000}
	for len(raw) < MaxHistoryEvents {
		out, err := b.cfg.SFN.GetExecutionHistory(ctx, in)
		var missing *sfntypes.ExecutionDoesNotExist
		if errors.As(err, &missing) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history of run %q: %w", runID, err)
		}
		raw = append(raw, out.Events...)
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if len(raw) > MaxHistoryEvents {
		raw = raw[:MaxHistoryEvents]
	}
	sort.SliceStable(raw, func(i, j int) bool { return raw[i].Id < raw[j].Id })
	return historyEvents(raw), nil
}

// historyEvents maps Step Functions' events to the UI's.
func historyEvents(raw []sfntypes.HistoryEvent) []store.HistoryEvent {
	out := make([]store.HistoryEvent, 0, len(raw))
	state := ""
	for _, e := range raw {
		h := store.HistoryEvent{Seq: e.Id, Type: string(e.Type), State: state}
		if e.Timestamp != nil {
			h.Time = e.Timestamp.UTC()
		}
		switch {
		case e.StateEnteredEventDetails != nil:
			state = aws.ToString(e.StateEnteredEventDetails.Name)
			h.Type, h.State = "StateEntered", state
		case e.StateExitedEventDetails != nil:
			h.Type, h.State = "StateExited", aws.ToString(e.StateExitedEventDetails.Name)
		}
		if errName, cause, ok := failure(e); ok {
			h.Detail, _ = json.Marshal(map[string]string{"error": errName, "cause": cause})
		}
		out = append(out, h)
	}
	return out
}

// failure returns the error and cause of a failed or timed-out event.
func failure(e sfntypes.HistoryEvent) (string, string, bool) {
	switch {
	case e.TaskFailedEventDetails != nil:
		return aws.ToString(e.TaskFailedEventDetails.Error), aws.ToString(e.TaskFailedEventDetails.Cause), true
	case e.TaskTimedOutEventDetails != nil:
		return aws.ToString(e.TaskTimedOutEventDetails.Error), aws.ToString(e.TaskTimedOutEventDetails.Cause), true
	case e.LambdaFunctionFailedEventDetails != nil:
		return aws.ToString(e.LambdaFunctionFailedEventDetails.Error), aws.ToString(e.LambdaFunctionFailedEventDetails.Cause), true
	case e.LambdaFunctionTimedOutEventDetails != nil:
		return aws.ToString(e.LambdaFunctionTimedOutEventDetails.Error), aws.ToString(e.LambdaFunctionTimedOutEventDetails.Cause), true
	case e.ExecutionFailedEventDetails != nil:
		return aws.ToString(e.ExecutionFailedEventDetails.Error), aws.ToString(e.ExecutionFailedEventDetails.Cause), true
	case e.ExecutionTimedOutEventDetails != nil:
		return aws.ToString(e.ExecutionTimedOutEventDetails.Error), aws.ToString(e.ExecutionTimedOutEventDetails.Cause), true
	default:
		return "", "", false
	}
}

// Pipelines returns the pipelines whose state machines were listed, by
// name, with their definitions.
func (b *Browser) Pipelines() []webui.Pipeline {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]webui.Pipeline, 0, len(b.machines))
	for _, m := range b.machines {
		p := webui.Pipeline{Name: m.pipeline, Machine: m.def, File: m.arn}
		if m.def != nil {
			p.Description = m.def.Comment
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// WebUI returns the webui.Config that browses the stack: everything of
// it but the tokens, prefix and logger, which the caller adds. Approvals
// are decided through the task token; there is no "run now".
func (b *Browser) WebUI() (webui.Config, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return webui.Config{}, fmt.Errorf("aws UI: signing key: %w", err)
	}
	return webui.Config{
		Store:     b.cfg.Store,
		History:   b.History,
		Pipelines: b.Pipelines,
		Approvals: &approval.Service{
			Store:    b.cfg.Store,
			Signer:   &approval.Signer{Key: key, Now: b.cfg.Now},
			Complete: tasktoken.Resume(taskSender{b.cfg.SFN}),
			Logger:   b.log,
		},
		ConsoleURL: func(runID string) string {
			ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
			defer cancel()
			arn, err := b.ExecutionARN(ctx, runID)
			if err != nil {
				b.log.Warn("console link", "run", runID, "err", err)
				return ""
			}
			return ConsoleURL(b.cfg.Region, arn)
		},
		Poll: LivePoll,
		Now:  b.cfg.Now,
	}, nil
}
