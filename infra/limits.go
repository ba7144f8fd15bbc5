package infra

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CloudFormation's and its services' limits that grow with the pipelines,
// and the share of each a synthesized template may use: Headroom (80%),
// so that a deployment near a limit fails at synth, not in CloudFormation.
const (
	MaxResources          = 500       // resources per stack
	MaxTemplateBytes      = 1_000_000 // template body, uploaded through S3 (CDK's default synthesizer does)
	MaxOutputs            = 200       // outputs per stack
	MaxParameters         = 200       // parameters per stack
	MaxManagedPolicyChars = 6_144     // one managed policy, whitespace not counted
	MaxRolePolicyChars    = 10_240    // a role's inline policies together, whitespace not counted
	Headroom              = 0.8
)

// worst-case lengths of what a template leaves to CloudFormation:
// pseudo parameters, and the name or ARN a Ref or Fn::GetAtt stands for.
var pseudoLengths = map[string]int{
	"AWS::Partition": len("aws-us-gov"), "AWS::Region": len("ap-southeast-1"), "AWS::AccountId": 12,
	"AWS::URLSuffix": len("amazonaws.com.cn"), "AWS::StackName": 128,
}

const unresolvedLength = 128

// CheckLimits checks every CloudFormation template of a cloud assembly
// (dir/*.template.json, as cdk synth writes them) against the limits
// above with Headroom: resources, template size, outputs, parameters, the
// size of each managed policy and of each role's inline policies, and
// every Lambda function's environment (Lambda's 4 KB), counting what
// CloudFormation resolves at its longest. It reports every excess, each
// with its template and what to change.
func CheckLimits(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.template.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("check limits: no template in %s", dir)
	}
	var errs []error
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("check limits: %w", err)
		}
		for _, e := range TemplateLimits(raw) {
			errs = append(errs, fmt.Errorf("%s: %s", filepath.Base(f), e))
		}
	}
	return errors.Join(errs...)
}

// TemplateUse is how much of each limit one template uses.
type TemplateUse struct {
	Resources, Bytes, Outputs, Parameters int
	ManagedPolicy                         map[string]int // logical id → characters
	RolePolicies                          map[string]int // role logical id → characters of its inline policies
	Environment                           map[string]int // function logical id → bytes
}

// Use measures a template.
func Use(raw []byte) (TemplateUse, error) {
	var doc struct {
		Resources map[string]struct {
			Type       string         `json:"Type"`
			Properties map[string]any `json:"Properties"`
		} `json:"Resources"`
		Outputs    map[string]any `json:"Outputs"`
		Parameters map[string]any `json:"Parameters"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return TemplateUse{}, fmt.Errorf("not a template: %w", err)
	}
	u := TemplateUse{
		Resources: len(doc.Resources), Bytes: len(raw), Outputs: len(doc.Outputs), Parameters: len(doc.Parameters),
		ManagedPolicy: map[string]int{}, RolePolicies: map[string]int{}, Environment: map[string]int{},
	}
	for id, r := range doc.Resources {
		switch r.Type {
		case "AWS::IAM::ManagedPolicy":
			u.ManagedPolicy[id] = resolvedLength(r.Properties["PolicyDocument"])
		case "AWS::IAM::Policy":
			n := resolvedLength(r.Properties["PolicyDocument"])
			roles, _ := r.Properties["Roles"].([]any)
			for _, role := range roles {
				key := fmt.Sprint(role)
				if m, ok := role.(map[string]any); ok {
					key = fmt.Sprint(m["Ref"])
				}
				u.RolePolicies[key] += n
			}
		case "AWS::Lambda::Function":
			env, _ := r.Properties["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			n := 0
			for k, v := range vars {
				n += len(k) + resolvedLength(v)
			}
			u.Environment[id] = n
		}
	}
	return u, nil
}

// TemplateLimits lists what of a template is over a limit with headroom.
func TemplateLimits(raw []byte) []string {
	u, err := Use(raw)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	over := func(what string, got, limit int, fix string) {
		if float64(got) > float64(limit)*Headroom {
			out = append(out, fmt.Sprintf("%s %d, over %d (%d%% of %d): %s", what, got, int(float64(limit)*Headroom), int(Headroom*100), limit, fix))
		}
	}
	const more = "spread the pipelines over more stacks (stepline:pipelineStacks)"
	over("resources", u.Resources, MaxResources, more)
	over("template bytes", u.Bytes, MaxTemplateBytes, more)
	over("outputs", u.Outputs, MaxOutputs, more)
	over("parameters", u.Parameters, MaxParameters, more)
	for _, id := range slices.Sorted(maps.Keys(u.ManagedPolicy)) {
		over("managed policy "+id+" characters", u.ManagedPolicy[id], MaxManagedPolicyChars, more)
	}
	for _, id := range slices.Sorted(maps.Keys(u.RolePolicies)) {
		over("inline policies of role "+id+" characters", u.RolePolicies[id], MaxRolePolicyChars, more+", or map fewer secrets and models")
	}
	for _, id := range slices.Sorted(maps.Keys(u.Environment)) {
		if u.Environment[id] >= maxEnvironmentBytes {
			out = append(out, fmt.Sprintf("function %s environment %d bytes, over Lambda's %d: map fewer secrets", id, u.Environment[id], maxEnvironmentBytes))
		}
	}
	return out
}

// resolvedLength is the length of v as JSON without whitespace once
// CloudFormation has resolved it, at the longest: a string is its
// characters (an Fn::Sub's ${} at their longest), a pseudo parameter its
// longest value, another Ref or Fn::GetAtt unresolvedLength, an Fn::Join
// its parts and separators.
func resolvedLength(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case []any:
		n := 2
		for i, e := range v {
			if i > 0 {
				n++
			}
			n += quoted(e)
		}
		return n
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok && len(v) == 1 {
			if n, ok := pseudoLengths[ref]; ok {
				return n
			}
			return unresolvedLength
		}
		if _, ok := v["Fn::GetAtt"]; ok && len(v) == 1 {
			return unresolvedLength
		}
		if j, ok := v["Fn::Join"].([]any); ok && len(v) == 1 && len(j) == 2 {
			sep, _ := j[0].(string)
			parts, _ := j[1].([]any)
			n := 0
			for i, p := range parts {
				if i > 0 {
					n += len(sep)
				}
				n += resolvedLength(p)
			}
			return n
		}
		n := 2
		first := true
		for k, e := range v {
			if !first {
				n++
			}
			first = false
			n += len(k) + 3 + quoted(e)
		}
		return n
	}
	b, _ := json.Marshal(v)
	return len(b)
}

// quoted is resolvedLength of a value inside a JSON document: strings and
// intrinsics that resolve to strings gain their quotes.
func quoted(v any) int {
	switch v := v.(type) {
	case string:
		return len(v) + 2 + strings.Count(v, `"`)
	case map[string]any:
		if _, ok := v["Ref"]; ok {
			return resolvedLength(v) + 2
		}
		if _, ok := v["Fn::GetAtt"]; ok {
			return resolvedLength(v) + 2
		}
		if _, ok := v["Fn::Join"]; ok {
			return resolvedLength(v) + 2
		}
	}
	return resolvedLength(v)
}
