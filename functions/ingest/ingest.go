package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/functions/internal/apigw"
	"github.com/stepline/stepline/functions/internal/states"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/pipeline"
)

// machinesOf finds each pipeline's state machine by the naming rule of
// package shared/awsenv. The stack bundles exactly the pipelines it
// compiled into state machines, so each one has its machine.
func machinesOf(ps []*pipeline.Pipeline, names awsenv.StateMachines) map[string]string {
	machines := make(map[string]string, len(ps))
	for _, p := range ps {
		machines[p.Name] = names.ARN(p.Name)
	}
	return machines
}

// ExecutionStarter is the Step Functions call that starts a run
// (satisfied by *states.Client): it returns the execution's ARN.
type ExecutionStarter interface {
	StartExecution(ctx context.Context, x states.Execution) (string, error)
}

var _ ExecutionStarter = (*states.Client)(nil)

// starter implements inbound.Starter with StartExecution: the execution is
// named after the run, and its input is {"trigger": <the normalized
// event>}, the input every compiled state machine reads.
type starter struct {
	sfn      ExecutionStarter
	machines map[string]string // pipeline name → state machine ARN
}

var _ inbound.Starter = starter{}

// Start implements inbound.Starter.
func (s starter) Start(ctx context.Context, p *pipeline.Pipeline, runID string, trigger inbound.Context) error {
	arn, ok := s.machines[p.Name]
	if !ok {
		return fmt.Errorf("pipeline %q has no state machine", p.Name)
	}
	input, err := json.Marshal(struct {
		Trigger inbound.Context `json:"trigger"`
	}{trigger})
	if err != nil {
		return fmt.Errorf("encode input: %w", err)
	}
	_, err = s.sfn.StartExecution(ctx, states.Execution{StateMachineARN: arn, Name: runID, Input: string(input)})
	if err != nil {
		return fmt.Errorf("start execution: %w", err)
	}
	return nil
}

// handler answers the ingest function's two kinds of event: API Gateway
// HTTP API requests (POST /webhook, POST /pipelines/{name}/run[s], GET
// /runs, GET /runs/{id}, POST /runs/{id}/rerun) and the
// trigger events EventBridge rules send ({"pipeline", "trigger", "event"}).
type handler struct {
	webhooks *inbound.Intake // requests: bearer tokens required on /webhook
	events   *inbound.Intake // EventBridge: IAM already vouched for the sender
	runs     runStore        // the run routes: queries and reruns
	deployed *deployed       // the pipeline routes; nil: not served
	start    starter         // reruns' executions
	log      *slog.Logger
}

// probe tells the event kinds apart.
type probe struct {
	RequestContext struct {
		HTTP struct {
			Method string `json:"method"`
		} `json:"http"`
	} `json:"requestContext"`
	Trigger json.RawMessage `json:"trigger"`
}

// Handle is the Lambda handler.
func (h *handler) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	return serve(ctx, raw, func() (*handler, error) { return h, nil }, nil)
}

// serve tells the event kinds apart and answers an event with the handler
// get returns. An event of no kind the function serves is refused without
// calling get, so that it costs no build of the pipelines. When get
// fails (the pipelines do not load), an API request is answered 500
// and the failure logged with log; a trigger event returns the error.
func serve(ctx context.Context, raw json.RawMessage, get func() (*handler, error), log *slog.Logger) (any, error) {
	var p probe
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("ingest: the event is not a JSON object: %w", err)
	}
	switch {
	case p.RequestContext.HTTP.Method != "":
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("ingest: API Gateway request: %w", err)
		}
		h, err := get()
		if err != nil {
			log.ErrorContext(ctx, "pipelines do not load", "path", ev.RawPath, "request_id", ev.RequestContext.RequestID, "error", err.Error())
			return jsonResponse(http.StatusInternalServerError, map[string]any{
				"error":      "the deployment's pipelines do not load; the function's log says why",
				"request_id": ev.RequestContext.RequestID,
			}), nil
		}
		return h.api(ctx, ev), nil
	case len(p.Trigger) > 0:
		var ev triggerEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("ingest: trigger event: %w", err)
		}
		h, err := get()
		if err != nil {
			return nil, fmt.Errorf("ingest trigger event %s: %w", ev.Event.ID, err)
		}
		return h.trigger(ctx, ev)
	}
	return nil, errors.New("ingest: unknown event: neither an API Gateway HTTP API request nor a trigger event")
}

// api answers an HTTP API request: 202 with the decision (accepted,
// deduplicated, skipped_testing), or the intake error's status with
// {"error": ...}. Server-side errors are logged and answered without
// detail.
func (h *handler) api(ctx context.Context, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	method := ev.RequestContext.HTTP.Method
	path := strings.TrimSuffix(ev.RawPath, "/")
	// The route names the endpoint whatever the stage adds to the path;
	// the path decides behind a catch-all route.
	route := path
	if _, p, ok := strings.Cut(ev.RouteKey, " "); ok && strings.HasPrefix(p, "/") {
		route = p
	}
	if resp, ok := h.runRoute(ctx, ev, route, path); ok {
		return resp
	}
	if resp, ok := h.pipelineRoute(ctx, ev, route, path); ok {
		return resp
	}
	query, err := url.ParseQuery(ev.RawQueryString)
	if err != nil {
		return jsonResponse(http.StatusBadRequest, map[string]any{"error": "the query string cannot be read"})
	}
	req := inbound.Request{Query: query}
	switch {
	case route == "/webhook":
		// ?source= wins over the header (the intake reads the query).
		if query.Get("source") == "" {
			req.Source = apigw.Header(ev.Headers, "x-pipeline-source")
		}
	case strings.HasPrefix(route, "/pipelines/") && (strings.HasSuffix(route, "/runs") || strings.HasSuffix(route, "/run")):
		// /run is the reference's manual-run path, /runs Stepline's.
		suffix := "/runs"
		if strings.HasSuffix(route, "/run") {
			suffix = "/run"
		}
		name, ok := pathParam(ev, "name", path, "/pipelines/", suffix)
		if !ok {
			return jsonResponse(http.StatusNotFound, map[string]any{"error": "not found"})
		}
		req.Manual, req.PipelineName = true, name
	default:
		return jsonResponse(http.StatusNotFound, map[string]any{"error": "not found"})
	}
	if method != http.MethodPost {
		r := jsonResponse(http.StatusMethodNotAllowed, map[string]any{"error": "use POST"})
		r.Headers["Allow"] = http.MethodPost
		return r
	}
	req.Bearer = inbound.BearerToken(apigw.Header(ev.Headers, "authorization"))
	req.Body = []byte(ev.Body)
	if ev.IsBase64Encoded {
		if req.Body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return jsonResponse(http.StatusBadRequest, map[string]any{"error": "the body is not valid base64"})
		}
	}
	d, err := h.webhooks.Accept(ctx, req)
	if err != nil {
		status := inbound.HTTPStatus(err)
		if status >= 500 {
			h.log.ErrorContext(ctx, "accept request", "path", path, "request_id", ev.RequestContext.RequestID, "error", err.Error())
			return jsonResponse(status, map[string]any{"error": "the event could not be accepted; try again", "request_id": ev.RequestContext.RequestID})
		}
		h.log.InfoContext(ctx, "request refused", "path", path, "status", status, "error", err.Error())
		return jsonResponse(status, map[string]any{"error": err.Error()})
	}
	return jsonResponse(http.StatusAccepted, d.Response())
}

func jsonResponse(status int, body map[string]any) events.APIGatewayV2HTTPResponse {
	b, err := json.Marshal(body)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error": "the answer could not be encoded"}`)
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(b),
	}
}

// triggerEvent is what an EventBridge rule sends the ingest function:
// Pipeline is the rule's pipeline (empty for the rule that forwards the
// events naming their pipeline in the trigger), Trigger the event's
// detail, a normalized trigger.
type triggerEvent struct {
	Pipeline string          `json:"pipeline"`
	Trigger  json.RawMessage `json:"trigger"`
	Event    struct {
		ID     string    `json:"id"`
		Source string    `json:"source"`
		Time   time.Time `json:"time"`
	} `json:"event"`
}

// Trigger outcomes besides the intake's decision statuses.
const (
	StatusNoMatch = "no_match" // the rule's pattern let through an event trigger.match refuses
	StatusRefused = "refused"  // the event cannot start a run (bad trigger, unknown pipeline)
)

// triggerResult is what the function answers a trigger event.
type triggerResult struct {
	Status   string `json:"status"`
	Pipeline string `json:"pipeline,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// trigger starts the run an EventBridge trigger event asks for. A rule's
// pipeline is started when its whole trigger.match holds (the rule's
// pattern may let through a superset); an event naming its pipeline starts
// that pipeline as a webhook naming it would. Either way the event is
// deduplicated and gated by stage like a webhook. An event that can never
// start a run is answered StatusRefused (a retry would not help); errors
// are returned only when a retry may succeed, so that Lambda retries the
// invocation.
func (h *handler) trigger(ctx context.Context, ev triggerEvent) (triggerResult, error) {
	var c inbound.Context
	if err := json.Unmarshal(ev.Trigger, &c); err != nil {
		return h.refuse(ctx, ev, fmt.Sprintf("the trigger is not a normalized event: %v", err)), nil
	}
	if ev.Pipeline != "" {
		p, ok := h.events.Router().Pipeline(ev.Pipeline)
		if !ok {
			return h.refuse(ctx, ev, fmt.Sprintf("pipeline %q is not deployed with this function", ev.Pipeline)), nil
		}
		if p.Trigger != nil && !inbound.Match(p.Trigger.Match, c) {
			h.log.InfoContext(ctx, "trigger event does not match", "pipeline", p.Name, "event", ev.Event.ID, "source", c.Source)
			return triggerResult{Status: StatusNoMatch, Pipeline: p.Name,
				Reason: fmt.Sprintf("trigger.match of pipeline %q does not hold for the event", p.Name)}, nil
		}
		c.Pipeline = p.Name
	}
	if c.Pipeline == "" {
		return h.refuse(ctx, ev, "the event names no pipeline"), nil
	}
	d, err := h.events.Accept(ctx, inbound.Request{Event: &c})
	if err != nil {
		if inbound.HTTPStatus(err) >= 500 {
			return triggerResult{}, fmt.Errorf("ingest trigger event %s: %w", ev.Event.ID, err)
		}
		return h.refuse(ctx, ev, err.Error()), nil
	}
	return triggerResult{Status: d.Status, Pipeline: d.Pipeline, RunID: d.RunID, Reason: d.Reason}, nil
}

func (h *handler) refuse(ctx context.Context, ev triggerEvent, reason string) triggerResult {
	h.log.WarnContext(ctx, "trigger event refused", "pipeline", ev.Pipeline, "event", ev.Event.ID, "source", ev.Event.Source, "reason", reason)
	return triggerResult{Status: StatusRefused, Pipeline: ev.Pipeline, Reason: reason}
}

// sortedNames lists the pipelines of a router, for the start-up log.
func sortedNames(r *inbound.Router) []string {
	names := r.Pipelines()
	slices.Sort(names)
	return names
}
