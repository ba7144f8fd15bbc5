package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// lintRule is a cfn-lint rule a resource is exempt from, and why.
type lintRule struct {
	id     string
	reason string
}

// redundantDependsOn exempts a resource whose L2 construct makes it
// depend on its role: CDK's Function and StateMachine add DependsOn on the
// role construct, which yields the role's default policy (needed: the
// grants must exist before the function or state machine runs) and the
// role itself, which the Role property's Fn::GetAtt already orders
// (W3005). The duplicate is harmless, and CDK adds it when the
// dependencies are resolved, after the stack code runs, so it cannot be
// removed here without overriding DependsOn by hand.
var redundantDependsOn = lintRule{"W3005", "CDK's DependsOn on the role duplicates the Role property's Fn::GetAtt; the policy dependency it carries is needed"}

// lintExempt records cfn-lint exemptions on a construct's CloudFormation
// resource, as the Metadata cfn-lint reads (cfn-lint.config.ignore_checks).
// cfn-lint runs on the synthesized template in CI (make lint-template);
// every exemption is named here with its reason.
func lintExempt(c constructs.IConstruct, rules ...lintRule) {
	if res, ok := c.Node().DefaultChild().(awscdk.CfnResource); ok {
		lintExemptResource(res, rules...)
	}
}

// lintExemptResource records cfn-lint exemptions on a CloudFormation
// resource.
func lintExemptResource(res awscdk.CfnResource, rules ...lintRule) {
	ids := make([]string, len(rules))
	for i, r := range rules {
		ids[i] = r.id
	}
	res.AddMetadata(jsii.String("cfn-lint"), map[string]any{"config": map[string]any{"ignore_checks": ids}})
}
