// Command hello is the smallest Lambda handler, built the same way as the
// functions' bootstraps: the yardstick of rietest.BenchmarkColdStart.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, map[string]any) (string, error) { return "hello", nil })
}
