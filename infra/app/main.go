// Command app is the Stepline CDK app (cdk.json runs it): it reads the
// stepline:* context (and -c stage=dev|staging|prod), compiles the
// pipelines, adds the deployment with infra.NewStepline, synthesizes it
// and checks every template against CloudFormation's limits.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/stepline/stepline/infra"
)

func main() {
	err := run()
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	app := awscdk.NewApp(nil)
	cfg, err := infra.ConfigFromContext(app.Node())
	if err != nil {
		return err
	}
	if _, err := infra.NewStepline(app, cfg.StackName, &cfg.Props); err != nil {
		return err
	}
	if cfg.Nag {
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	}
	asm := app.Synth(nil)
	return infra.CheckLimits(*asm.Directory())
}
