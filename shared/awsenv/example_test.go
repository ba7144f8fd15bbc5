package awsenv_test

import (
	"fmt"

	"github.com/stepline/stepline/shared/awsenv"
)

func ExampleLoad() {
	// In a Lambda main: awsenv.Load(os.Environ()).
	cfg, err := awsenv.Load([]string{
		"AWS_REGION=eu-west-1",
		"AWS_ACCESS_KEY_ID=ASIAEXAMPLE",
		"AWS_SECRET_ACCESS_KEY=example",
		"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Region)
	fmt.Printf("DynamoDB: %q\n", awsenv.Endpoint(cfg, "DynamoDB"))
	fmt.Printf("SSM: %q\n", awsenv.Endpoint(cfg, "SSM"))

	_, err = awsenv.Load([]string{"AWS_REGION=eu-west-1"})
	fmt.Println(err != nil)
	// Output:
	// eu-west-1
	// DynamoDB: "http://127.0.0.1:8000"
	// SSM: ""
	// true
}
