package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/functions/internal/states"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/rerun"
	"github.com/stepline/stepline/shared/runview"
	"github.com/stepline/stepline/shared/store"
)

// runStore is the part of the store the run routes read and write.
type runStore interface {
	GetRunWithSteps(ctx context.Context, id string) (store.Run, []store.StepRecord, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error)
	CreateRun(ctx context.Context, r store.Run) error
	PutStep(ctx context.Context, rec store.StepRecord) error
	UpdateRun(ctx context.Context, id string, u store.RunUpdate) error
}

var _ runStore = store.Store(nil)

// MaxRerunBodyBytes bounds the body of POST /runs/{id}/rerun.
const MaxRerunBodyBytes = 16 << 10

// runRoute answers the IAM-authorized run routes, GET /runs, GET
// /runs/{id} and POST /runs/{id}/rerun; ok is false for any other path.
// Their caller signed with SigV4 as a principal allowed to invoke the
// API: it sees every run, as the admin token does on stepline serve.
func (h *handler) runRoute(ctx context.Context, ev events.APIGatewayV2HTTPRequest, route, path string) (events.APIGatewayV2HTTPResponse, bool) {
	method := ev.RequestContext.HTTP.Method
	switch {
	case route == "/runs":
		if method != http.MethodGet {
			return notAllowed(http.MethodGet), true
		}
		return h.listRuns(ctx, ev), true
	case strings.HasPrefix(route, "/runs/") && strings.HasSuffix(route, "/rerun"):
		id, ok := pathParam(ev, "id", path, "/runs/", "/rerun")
		if !ok {
			return jsonResponse(http.StatusNotFound, map[string]any{"error": "not found"}), true
		}
		if method != http.MethodPost {
			return notAllowed(http.MethodPost), true
		}
		return h.rerun(ctx, ev, id), true
	case strings.HasPrefix(route, "/runs/"):
		id, ok := pathParam(ev, "id", path, "/runs/", "")
		if !ok {
			return jsonResponse(http.StatusNotFound, map[string]any{"error": "not found"}), true
		}
		if method != http.MethodGet {
			return notAllowed(http.MethodGet), true
		}
		return h.getRun(ctx, ev, id), true
	}
	return events.APIGatewayV2HTTPResponse{}, false
}

// pathParam returns the path parameter name, from the route's parameters
// or, behind a catch-all route, from the path between prefix and suffix.
func pathParam(ev events.APIGatewayV2HTTPRequest, name, path, prefix, suffix string) (string, bool) {
	if v := ev.PathParameters[name]; v != "" {
		return v, true
	}
	i := strings.LastIndex(path, prefix)
	if i < 0 || !strings.HasSuffix(path, suffix) {
		return "", false
	}
	v, err := url.PathUnescape(strings.TrimSuffix(path[i+len(prefix):], suffix))
	if err != nil || v == "" || strings.Contains(v, "/") {
		return "", false
	}
	return v, true
}

func notAllowed(method string) events.APIGatewayV2HTTPResponse {
	r := jsonResponse(http.StatusMethodNotAllowed, map[string]any{"error": "use " + method})
	r.Headers["Allow"] = method
	return r
}

func (h *handler) serverError(ctx context.Context, ev events.APIGatewayV2HTTPRequest, what string, err error) events.APIGatewayV2HTTPResponse {
	h.log.ErrorContext(ctx, what, "path", ev.RawPath, "request_id", ev.RequestContext.RequestID, "error", err.Error())
	return jsonResponse(http.StatusInternalServerError, map[string]any{"error": what + " failed; try again", "request_id": ev.RequestContext.RequestID})
}

func (h *handler) listRuns(ctx context.Context, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	q, err := url.ParseQuery(ev.RawQueryString)
	if err != nil {
		return jsonResponse(http.StatusBadRequest, map[string]any{"error": "the query string cannot be read"})
	}
	f, err := runview.Filter(q)
	if err != nil {
		return jsonResponse(http.StatusBadRequest, map[string]any{"error": err.Error()})
	}
	runs, err := h.runs.ListRuns(ctx, f)
	if err != nil {
		return h.serverError(ctx, ev, "list runs", err)
	}
	return jsonResponse(http.StatusOK, runview.List(runs, f))
}

func (h *handler) getRun(ctx context.Context, ev events.APIGatewayV2HTTPRequest, id string) events.APIGatewayV2HTTPResponse {
	run, steps, err := h.runs.GetRunWithSteps(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return jsonResponse(http.StatusNotFound, map[string]any{"error": "no run " + id})
	}
	if err != nil {
		return h.serverError(ctx, ev, "read run", err)
	}
	return jsonResponse(http.StatusOK, runview.Detail(run, steps))
}

// rerun starts a rerun of run id from the body's from_step: the new run
// and the step records it reuses are written first, then the pipeline's
// state machine is started with the rerun block in its input.
func (h *handler) rerun(ctx context.Context, ev events.APIGatewayV2HTTPRequest, id string) events.APIGatewayV2HTTPResponse {
	body, err := requestBody(ev)
	if err != nil {
		return jsonResponse(http.StatusBadRequest, map[string]any{"error": err.Error()})
	}
	if len(body) > MaxRerunBodyBytes {
		return jsonResponse(http.StatusRequestEntityTooLarge, map[string]any{"error": fmt.Sprintf("request body too large: limit %d bytes", MaxRerunBodyBytes)})
	}
	var req struct {
		FromStep *string `json:"from_step"`
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return jsonResponse(http.StatusBadRequest, map[string]any{"error": "body: want {\"from_step\": \"<step>\"}: " + err.Error()})
		}
	}
	from := ""
	if req.FromStep != nil {
		if from = *req.FromStep; from == "" {
			return jsonResponse(http.StatusUnprocessableEntity, map[string]any{"error": "from_step is empty: name a sequential step, or leave it out to rerun from the first"})
		}
	}
	orig, _, err := h.runs.GetRunWithSteps(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return jsonResponse(http.StatusNotFound, map[string]any{"error": "no run " + id})
	}
	if err != nil {
		return h.serverError(ctx, ev, "read run", err)
	}
	p, ok := h.webhooks.Router().Pipeline(orig.Pipeline)
	arn := h.start.machines[orig.Pipeline]
	if !ok || arn == "" {
		return jsonResponse(http.StatusUnprocessableEntity, map[string]any{"error": fmt.Sprintf("run %s is of pipeline %q, which is not deployed with this stack", id, orig.Pipeline)})
	}
	newID := inbound.NewRunID()
	plan, err := rerun.Prepare(ctx, h.runs, p, id, from, newID, time.Now().UTC())
	if err == nil {
		err = rerun.Apply(ctx, h.runs, plan)
	}
	if err != nil {
		if status := rerun.HTTPStatus(err); status < 500 {
			return jsonResponse(status, map[string]any{"error": err.Error()})
		}
		return h.serverError(ctx, ev, "rerun", err)
	}
	_, err = h.start.sfn.StartExecution(ctx, states.Execution{StateMachineARN: arn, Name: newID, Input: string(plan.Input)})
	if err != nil {
		now := time.Now().UTC()
		if uerr := h.runs.UpdateRun(context.WithoutCancel(ctx), newID, store.RunUpdate{Status: store.RunFailed, Reason: "start: " + err.Error(), CompletedAt: &now}); uerr != nil {
			h.log.ErrorContext(ctx, "mark unstarted rerun failed", "run", newID, "error", uerr.Error())
		}
		return h.serverError(ctx, ev, "start rerun", err)
	}
	h.log.InfoContext(ctx, "rerun started", "run", newID, "original", id, "from", plan.FromStep, "reused", len(plan.Reused))
	return jsonResponse(http.StatusAccepted, map[string]any{
		"status": "accepted", "run_id": newID, "original_run_id": id, "from_step": plan.FromStep,
		"prior_steps_loaded": len(plan.Reused),
	})
}

// requestBody returns the request's body, decoded from base64 when API
// Gateway encoded it.
func requestBody(ev events.APIGatewayV2HTTPRequest) ([]byte, error) {
	if !ev.IsBase64Encoded {
		return []byte(ev.Body), nil
	}
	b, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil {
		return nil, errors.New("the body is not valid base64")
	}
	return b, nil
}
