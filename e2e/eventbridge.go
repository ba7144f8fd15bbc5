package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// Delivery is one target an event was delivered to by hand.
type Delivery struct {
	Rule   string
	Target string          // the target's ARN
	Input  json.RawMessage // what the target was given
	Answer json.RawMessage // a function's answer; a state machine's execution ARN
}

// Deliver does by hand what EventBridge does on AWS and moto cannot (it
// delivers to neither Step Functions nor Lambda targets): for every
// ENABLED rule of the default bus whose pattern matches the event (as
// EventBridge's own TestEventPattern decides), each target gets the
// input its rule gives it (Input, InputPath "$" or "$.a.b", or an
// InputTransformer whose placeholders stand outside quotes, as the
// stack's do): a state machine is started (named by Step Functions, as a
// rule's execution is), a function invoked. DISABLED rules deliver
// nothing, as on AWS.
func (a *AWS) Deliver(ctx context.Context, source, detailType string, detail json.RawMessage) ([]Delivery, error) {
	ev := map[string]any{
		"version": "0", "id": NewRunID(), "detail-type": detailType, "source": source, "account": Account,
		"time": time.Now().UTC().Format(time.RFC3339), "region": Region, "resources": []string{}, "detail": detail,
	}
	event, _ := json.Marshal(ev)
	rules, err := a.Rules(ctx)
	if err != nil {
		return nil, err
	}
	var out []Delivery
	for _, r := range rules {
		if r.State != "ENABLED" || r.EventPattern == "" {
			continue
		}
		ok, err := a.Matches(ctx, r.EventPattern, event)
		if err != nil {
			return out, fmt.Errorf("rule %s: %w", r.Name, err)
		}
		if !ok {
			continue
		}
		for _, t := range r.Targets {
			input, err := targetInput(t, event)
			if err != nil {
				return out, fmt.Errorf("rule %s target %s: %w", r.Name, t.ID, err)
			}
			d := Delivery{Rule: r.Name, Target: t.Arn, Input: input}
			switch {
			case strings.Contains(t.Arn, ":states:"):
				res, err := a.SFN.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(t.Arn), Input: aws.String(string(input))})
				if err != nil {
					return out, fmt.Errorf("rule %s: start %s: %w", r.Name, t.Arn, err)
				}
				d.Answer, _ = json.Marshal(aws.ToString(res.ExecutionArn))
			case strings.Contains(t.Arn, ":lambda:"):
				inv, err := a.Invoke(ctx, t.Arn, input)
				if err != nil {
					return out, fmt.Errorf("rule %s: %w", r.Name, err)
				}
				if inv.FunctionError != "" {
					return out, fmt.Errorf("rule %s: %s failed: %s", r.Name, t.Arn, inv.Payload)
				}
				d.Answer = inv.Payload
			default:
				return out, fmt.Errorf("rule %s: target %s: only state machines and functions are delivered by hand", r.Name, t.Arn)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// targetInput is what a rule gives a target for event.
func targetInput(t Target, event []byte) (json.RawMessage, error) {
	var ev any
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, err
	}
	switch {
	case t.Input != "":
		return json.RawMessage(t.Input), nil
	case t.InputPath != "":
		v, err := jsonPath(ev, t.InputPath)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	case t.InputTransformer != nil:
		out := t.InputTransformer.InputTemplate
		for name, path := range t.InputTransformer.InputPathsMap {
			v, err := jsonPath(ev, path)
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(v)
			out = strings.ReplaceAll(out, "<"+name+">", string(b))
		}
		if !json.Valid([]byte(out)) {
			return nil, fmt.Errorf("the input template gives invalid JSON: %s", out)
		}
		return json.RawMessage(out), nil
	}
	return event, nil
}

// jsonPath reads "$" or "$.a.b" (the paths rules use).
func jsonPath(v any, path string) (any, error) {
	if path == "$" {
		return v, nil
	}
	rest, ok := strings.CutPrefix(path, "$.")
	if !ok {
		return nil, fmt.Errorf("path %q: only $ and $.a.b are supported", path)
	}
	for _, k := range strings.Split(rest, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil
		}
		v = m[k]
	}
	return v, nil
}
