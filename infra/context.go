package infra

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Context keys the CDK app reads: cdk.json's "context", or -c key=value on
// the command line.
const (
	ContextStackName             = "stepline:stackName"             // Props.Name: default DefaultStackName
	ContextStage                 = "stage"                          // Props.Stage: dev, staging or prod
	ContextPipelineStacks        = "stepline:pipelineStacks"        // Props.PipelineStacks
	ContextPipelineMonitoring    = "stepline:pipelineMonitoring"    // Props.PipelineMonitoring
	ContextPipelines             = "stepline:pipelines"             // Props.PipelineDir
	ContextConfig                = "stepline:config"                // Props.Config
	ContextAssets                = "stepline:assets"                // Props.AssetDir
	ContextSecrets               = "stepline:secrets"               // Props.Secrets: a JSON object
	ContextAlarmEmail            = "stepline:alarmEmail"            // Props.AlarmEmail
	ContextLogLevel              = "stepline:logLevel"              // Props.LogLevel
	ContextArtifactRetentionDays = "stepline:artifactRetentionDays" // Props.ArtifactRetentionDays
	ContextLogRetentionDays      = "stepline:logRetentionDays"      // Props.LogRetentionDays
	ContextNag                   = "stepline:nag"                   // true: run the cdk-nag AwsSolutions checks at synth
	ContextOpenAIBaseURL         = "stepline:openaiBaseUrl"         // Props.OpenAIBaseURL
)

// DefaultStackName is the deployment's name (Props.Name) when the context
// does not set one: the core stack's name without a stage.
const DefaultStackName = "Stepline"

// AppConfig is what the app reads from the context.
type AppConfig struct {
	StackName string
	Props     Props
	Nag       bool
}

// ConfigFromContext reads the app's configuration from node's context.
// Values from cdk.json keep their JSON types; values given with -c are
// strings, so numbers, booleans and the secrets object are also accepted
// as text.
func ConfigFromContext(node constructs.Node) (*AppConfig, error) {
	get := func(key string) any { return node.TryGetContext(jsii.String(key)) }
	c := &AppConfig{StackName: DefaultStackName}
	var errs []error
	str := func(key string, dst *string) {
		switch v := get(key).(type) {
		case nil:
		case string:
			*dst = v
		default:
			errs = append(errs, fmt.Errorf("context %s: want a string, got %v", key, v))
		}
	}
	num := func(key string, dst *int) {
		switch v := get(key).(type) {
		case nil:
		case float64:
			*dst = int(v)
		case string:
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("context %s: %q is not a whole number", key, v))
			}
			*dst = n
		default:
			errs = append(errs, fmt.Errorf("context %s: want a number, got %v", key, v))
		}
	}
	str(ContextStackName, &c.StackName)
	str(ContextPipelines, &c.Props.PipelineDir)
	str(ContextConfig, &c.Props.Config)
	str(ContextAssets, &c.Props.AssetDir)
	str(ContextAlarmEmail, &c.Props.AlarmEmail)
	str(ContextLogLevel, &c.Props.LogLevel)
	str(ContextOpenAIBaseURL, &c.Props.OpenAIBaseURL)
	num(ContextArtifactRetentionDays, &c.Props.ArtifactRetentionDays)
	num(ContextLogRetentionDays, &c.Props.LogRetentionDays)
	str(ContextStage, &c.Props.Stage)
	num(ContextPipelineStacks, &c.Props.PipelineStacks)
	boolean := func(key string, dst *bool) {
		switch v := get(key).(type) {
		case nil:
		case bool:
			*dst = v
		case string:
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("context %s: %q is not true or false", key, v))
			}
			*dst = b
		default:
			errs = append(errs, fmt.Errorf("context %s: want true or false, got %v", key, v))
		}
	}
	boolean(ContextNag, &c.Nag)
	boolean(ContextPipelineMonitoring, &c.Props.PipelineMonitoring)
	c.Props.Name = c.StackName

	raw := get(ContextSecrets)
	if s, ok := raw.(string); ok {
		if err := json.Unmarshal([]byte(s), &raw); err != nil {
			errs = append(errs, fmt.Errorf("context %s: not a JSON object: %v", ContextSecrets, err))
			raw = nil
		}
	}
	switch v := raw.(type) {
	case nil:
	case map[string]any:
		c.Props.Secrets = map[string]string{}
		for name, ref := range v {
			s, ok := ref.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("context %s: %s: want a string such as \"secretsmanager:stepline/%s\"", ContextSecrets, name, name))
				continue
			}
			c.Props.Secrets[name] = s
		}
	default:
		errs = append(errs, fmt.Errorf("context %s: want an object of NAME: reference", ContextSecrets))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}
