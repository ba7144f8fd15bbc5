package infra

import (
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// nagRule is one cdk-nag suppression: the rule, why it does not apply, and
// optionally the findings it covers (for IAM5: "Resource::..." or
// "Action::..."; a value between slashes is a regular expression).
type nagRule struct {
	id        string
	reason    string
	appliesTo []string
}

// suppress records suppressions on construct and its children. They are
// metadata: without the cdk-nag checks (the tests apply them) they change
// nothing in the template's resources.
func suppress(construct constructs.IConstruct, rules ...nagRule) {
	s := make([]*cdknag.NagPackSuppression, len(rules))
	for i, r := range rules {
		s[i] = &cdknag.NagPackSuppression{Id: jsii.String(r.id), Reason: jsii.String(r.reason)}
		if len(r.appliesTo) > 0 {
			var applies []any
			for _, a := range r.appliesTo {
				if len(a) > 1 && a[0] == '/' {
					applies = append(applies, &cdknag.RegexAppliesTo{Regex: jsii.String(a)})
				} else {
					applies = append(applies, a)
				}
			}
			s[i].AppliesTo = &applies
		}
	}
	cdknag.NagSuppressions_AddResourceSuppressions(construct, &s, jsii.Bool(true))
}
