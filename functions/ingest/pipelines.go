package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/shared/catalog"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/schedule"
)

// deployed is what the function knows of the deployed pipelines, for
// GET /pipelines, GET /pipelines/{name} and GET /schedules.
type deployed struct {
	pipelines []*pipeline.Pipeline // in file-name (routing) order
	sources   map[string]string    // pipeline name → its file's source, as bundled
	entries   []schedule.Entry
}

// newDeployed keeps the pipelines, the sources of the files they were
// compiled from (files[i] is ps[i]'s) and their schedules.
func newDeployed(files []catalog.File, ps []*pipeline.Pipeline) (*deployed, error) {
	if len(files) != len(ps) {
		return nil, fmt.Errorf("%d pipeline files for %d pipelines", len(files), len(ps))
	}
	d := &deployed{pipelines: ps, sources: make(map[string]string, len(ps))}
	for i, p := range ps {
		d.sources[p.Name] = files[i].Source
		if sc := p.Schedule; sc != nil && sc.Cron != "" {
			e, err := schedule.NewEntry(p.Name, sc.Cron, sc.TimeZone)
			if err != nil {
				return nil, fmt.Errorf("pipeline file %s: %w", files[i].Name, err)
			}
			d.entries = append(d.entries, e)
		}
	}
	return d, nil
}

// pipelineRoute answers GET /pipelines, GET /pipelines/{name} and GET
// /schedules as stepline serve does; ok is false for any other route.
// The schedules fire on AWS through EventBridge Scheduler; their next
// fire is computed here from the same cron and time zone.
func (h *handler) pipelineRoute(ctx context.Context, ev events.APIGatewayV2HTTPRequest, route, path string) (events.APIGatewayV2HTTPResponse, bool) {
	if h.deployed == nil {
		return events.APIGatewayV2HTTPResponse{}, false
	}
	method := ev.RequestContext.HTTP.Method
	switch {
	case route == "/pipelines":
		if method != http.MethodGet {
			return notAllowed(http.MethodGet), true
		}
		out := make([]map[string]any, 0, len(h.deployed.pipelines))
		for _, p := range h.deployed.pipelines {
			tags := p.Tags
			if tags == nil {
				tags = []string{}
			}
			out = append(out, map[string]any{
				"name": p.Name, "description": p.Description, "version": p.Version, "stage": p.Stage, "tags": tags,
				"schedule": p.Schedule != nil && p.Schedule.Cron != "",
			})
		}
		return jsonResponse(http.StatusOK, map[string]any{"pipelines": out}), true
	case route == "/schedules":
		if method != http.MethodGet {
			return notAllowed(http.MethodGet), true
		}
		return jsonResponse(http.StatusOK, map[string]any{"schedules": schedule.NextRuns(h.deployed.entries, time.Now())}), true
	case strings.HasPrefix(route, "/pipelines/") && !strings.HasSuffix(route, "/runs") && !strings.HasSuffix(route, "/run"):
		name, ok := pathParam(ev, "name", path, "/pipelines/", "")
		if !ok {
			return jsonResponse(http.StatusNotFound, map[string]any{"error": "not found"}), true
		}
		if method != http.MethodGet {
			return notAllowed(http.MethodGet), true
		}
		for _, p := range h.deployed.pipelines {
			if p.Name != name {
				continue
			}
			out := map[string]any{"name": name, "config": p}
			if src, ok := h.deployed.sources[name]; ok {
				out["yaml"] = src
			}
			return jsonResponse(http.StatusOK, out), true
		}
		return jsonResponse(http.StatusNotFound, map[string]any{"error": "no pipeline " + name}), true
	}
	return events.APIGatewayV2HTTPResponse{}, false
}
