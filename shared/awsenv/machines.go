package awsenv

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// MaxStateMachineName is Step Functions' limit on a state machine's name.
const MaxStateMachineName = 80

// Environment variables of the state machine naming rule (see
// [StateMachinesFromEnv]).
const (
	EnvStateMachinePrefix  = "STATE_MACHINE_PREFIX"  // the deployment's name prefix, e.g. "Stepline-prod"
	EnvStateMachineAccount = "STATE_MACHINE_ACCOUNT" // the account the state machines live in
)

// ResourceName derives a resource's physical name from a deployment's
// prefix and a name within it, prefix-name, within limit characters: a
// name that would be longer is cut and ends in "-" and eight hex digits of
// the SHA-256 of the whole, so distinct names stay distinct.
func ResourceName(prefix, name string, limit int) string {
	full := prefix + "-" + name
	if len(full) <= limit {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "-" + hex.EncodeToString(sum[:4])
	return full[:limit-len(suffix)] + suffix
}

// StateMachineName is the name of a pipeline's state machine in the
// deployment with the given prefix: ResourceName(prefix, pipeline,
// MaxStateMachineName). The CDK app names state machines with it and the
// functions find them with it, so no function carries a list of them.
func StateMachineName(prefix, pipeline string) string {
	return ResourceName(prefix, pipeline, MaxStateMachineName)
}

// Partition returns the AWS partition of a region: aws-cn for cn-*,
// aws-us-gov for us-gov-*, aws-iso for us-iso-*, aws-iso-b for us-isob-*,
// aws-eusc for eusc-*, else aws.
func Partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	case strings.HasPrefix(region, "us-isob-"):
		return "aws-iso-b"
	case strings.HasPrefix(region, "us-iso-"):
		return "aws-iso"
	case strings.HasPrefix(region, "eusc-"):
		return "aws-eusc"
	}
	return "aws"
}

// StateMachines is the naming rule bound to one deployment: the ARN of a
// pipeline's state machine is built from the partition, region, account
// and the deployment's prefix.
type StateMachines struct {
	Partition string
	Region    string
	Account   string
	Prefix    string
}

// StateMachinesFromEnv reads the naming rule from environ (KEY=value
// entries as os.Environ returns them): the region from AWS_REGION or
// AWS_DEFAULT_REGION (the Lambda runtime sets them), the partition from
// the region, the account from STATE_MACHINE_ACCOUNT and the prefix from
// STATE_MACHINE_PREFIX (the stack sets both). It fails naming the
// variable that is missing or malformed.
func StateMachinesFromEnv(environ []string) (StateMachines, error) {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			env[k] = v
		}
	}
	s := StateMachines{Region: env[EnvRegion], Account: env[EnvStateMachineAccount], Prefix: env[EnvStateMachinePrefix]}
	if s.Region == "" {
		s.Region = env[EnvDefaultRegion]
	}
	var errs []error
	if s.Region == "" {
		errs = append(errs, fmt.Errorf("no region: %s and %s are unset", EnvRegion, EnvDefaultRegion))
	}
	if s.Account == "" {
		errs = append(errs, fmt.Errorf("%s is unset", EnvStateMachineAccount))
	} else if len(s.Account) != 12 || strings.Trim(s.Account, "0123456789") != "" {
		errs = append(errs, fmt.Errorf("%s=%q: want a 12-digit account ID", EnvStateMachineAccount, s.Account))
	}
	if s.Prefix == "" {
		errs = append(errs, fmt.Errorf("%s is unset", EnvStateMachinePrefix))
	} else if len(s.Prefix) >= MaxStateMachineName-9 || strings.ContainsAny(s.Prefix, ": \t\n") {
		errs = append(errs, fmt.Errorf("%s=%q: want a name prefix shorter than %d characters, without spaces or colons", EnvStateMachinePrefix, s.Prefix, MaxStateMachineName-9))
	}
	if len(errs) > 0 {
		return StateMachines{}, fmt.Errorf("state machine names: %w", errors.Join(errs...))
	}
	s.Partition = Partition(s.Region)
	return s, nil
}

// ARN returns the ARN of the state machine of the named pipeline.
func (s StateMachines) ARN(pipeline string) string {
	return s.machinePrefix() + StateMachineName(s.Prefix, pipeline)
}

// Pipeline returns the pipeline whose state machine has the given ARN. It
// reports false for a state machine of another deployment, and for one
// whose name may have been cut to fit (MaxStateMachineName characters
// ending in "-" and eight hex digits): the pipeline's name is not in it.
func (s StateMachines) Pipeline(arn string) (string, bool) {
	name, ok := strings.CutPrefix(arn, s.machinePrefix()+s.Prefix+"-")
	if !ok || name == "" || StateMachineName(s.Prefix, name) != s.Prefix+"-"+name {
		return "", false
	}
	if full := len(s.Prefix) + 1 + len(name); full == MaxStateMachineName && len(name) > 9 && name[len(name)-9] == '-' &&
		strings.Trim(name[len(name)-8:], "0123456789abcdef") == "" {
		return "", false
	}
	return name, true
}

func (s StateMachines) machinePrefix() string {
	return "arn:" + s.Partition + ":states:" + s.Region + ":" + s.Account + ":stateMachine:"
}
