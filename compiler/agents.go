package compiler

import (
	"fmt"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

// projectDiagnostics are the project's own problems (stepline.yaml and
// its profiles), as the pipeline's.
func projectDiagnostics(p *project.Project) Diagnostics {
	out := make(Diagnostics, 0, len(p.Diagnostics))
	for _, d := range p.Diagnostics {
		out = append(out, Diagnostic{
			Pos:     pipeline.Pos{File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col},
			Warning: d.Warning,
			Msg:     d.Msg,
		})
	}
	return out
}

// applyExecutorDefaults writes the project's executors.openai base_url
// and api_key into every gateway executor_config (steps, branches,
// fan-outs, verifiers) that runs no agent and does not set them, so the
// step calls the same endpoint wherever it runs.
func applyExecutorDefaults(f *File, p *project.Project) {
	d := p.Executors.OpenAI
	if f == nil || f.Pipeline == nil || (d.BaseURL == "" && d.APIKey == "") {
		return
	}
	apply := func(exec string, cfg map[string]any) map[string]any {
		if exec != pipeline.ExecGateway {
			return cfg
		}
		if _, isAgent := cfg["agent"]; isAgent {
			return cfg
		}
		if cfg == nil {
			cfg = map[string]any{}
		}
		if _, set := cfg["base_url"]; !set && d.BaseURL != "" {
			cfg["base_url"] = d.BaseURL
		}
		if _, set := cfg["api_key"]; !set && d.APIKey != "" {
			cfg["api_key"] = d.APIKey
		}
		return cfg
	}
	verifier := func(v *pipeline.Verifier) {
		if v != nil {
			v.ExecutorConfig = apply(v.Executor, v.ExecutorConfig)
		}
	}
	for _, n := range f.Pipeline.Steps {
		switch n := n.(type) {
		case *pipeline.Step:
			n.ExecutorConfig = apply(n.Executor, n.ExecutorConfig)
			verifier(n.Verifier)
		case *pipeline.Parallel:
			for _, b := range n.Branches {
				b.ExecutorConfig = apply(b.Executor, b.ExecutorConfig)
				verifier(b.Verifier)
			}
		case *pipeline.FanOut:
			n.ExecutorConfig = apply(n.Executor, n.ExecutorConfig)
			verifier(n.Verifier)
		}
	}
}

// applyNotificationDefaults writes the project's notifications.telegram
// bot_token, chat_id and teams into every telegram notification that does
// not set them, so the pipeline carries its chat (and a reference to its bot's
// token, never the token) wherever it runs.
func applyNotificationDefaults(f *File, p *project.Project) {
	d := p.Notifications.Telegram
	if f == nil || f.Pipeline == nil || (d.BotToken == "" && d.ChatID == "" && len(d.Teams) == 0) {
		return
	}
	for i := range f.Pipeline.Notifications {
		for j := range f.Pipeline.Notifications[i].Notices {
			n := &f.Pipeline.Notifications[i].Notices[j]
			if n.Channel != pipeline.ChannelTelegram {
				continue
			}
			if n.Config == nil {
				n.Config = map[string]any{}
			}
			if _, set := n.Config["bot_token"]; !set && d.BotToken != "" {
				n.Config["bot_token"] = d.BotToken
			}
			if _, set := n.Config["chat_id"]; !set && d.ChatID != "" {
				n.Config["chat_id"] = d.ChatID
			}
			if _, set := n.Config["teams"]; !set && len(d.Teams) > 0 {
				teams := make(map[string]any, len(d.Teams))
				for name, t := range d.Teams {
					m := map[string]any{"chat_id": t.ChatID}
					if t.BotToken != "" {
						m["bot_token"] = t.BotToken
					}
					teams[name] = m
				}
				n.Config["teams"] = teams
			}
		}
	}
}

// resolveAgent resolves the agent of an agent step from the project and
// reports what is wrong, each problem at the executor_config key it is
// about.
func (c *checker) resolveAgent(where, exec string, cfg map[string]any, fs pipeline.Fields, pos pipeline.Pos) *agent.Resolved {
	at := fieldPos(fs, "executor_config", fieldPos(fs, "executor", pos))
	keyAt := func(key string) pipeline.Pos { return fieldPos(c.f.keys[at], key, at) }
	if c.proj == nil {
		name, _ := cfg["agent"].(string)
		c.ds.errorf(keyAt("agent"), "%s: executor_config.agent: unknown agent %q: no %s above %s, so the pipeline has no agents (an agent is agents/<name>/agent.yaml beside stepline.yaml; or give --config)", where, name, project.FileName, c.f.name)
		return nil
	}
	r, issues := c.proj.Resolve(exec, cfg)
	for _, is := range issues {
		msg := fmt.Sprintf("%s: %s", where, is)
		if is.Warning {
			c.ds.warnf(keyAt(is.Key), "%s", msg)
		} else {
			c.ds.errorf(keyAt(is.Key), "%s", msg)
		}
	}
	return r
}
