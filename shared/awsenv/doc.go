// Package awsenv builds an aws.Config from the environment a Lambda
// function runs in, without the SDK's config package.
//
// The config package resolves credentials through a chain (shared files,
// SSO, STS web identity, ECS and EC2 metadata) whose packages all run their
// initialisers when a binary links them; a Lambda never needs them, because
// the Lambda runtime hands every function its execution role's credentials
// in the environment. Leaving that chain out takes several milliseconds off
// the step function's cold start (see functions/step).
//
// [Load] reads:
//
//	AWS_REGION, AWS_DEFAULT_REGION      the region (the first one set)
//	AWS_ACCESS_KEY_ID                   static credentials (required)
//	AWS_SECRET_ACCESS_KEY
//	AWS_SESSION_TOKEN                   (optional)
//	AWS_ACCOUNT_ID                      (optional) account of the credentials
//	AWS_ENDPOINT_URL                    endpoint for every service
//	AWS_ENDPOINT_URL_<SERVICE>          endpoint for one service, <SERVICE>
//	                                    being its SDK ID upper-cased with
//	                                    spaces as underscores: DYNAMODB, S3,
//	                                    SSM, SECRETS_MANAGER, BEDROCK_RUNTIME
//	AWS_IGNORE_CONFIGURED_ENDPOINT_URLS true: ignore both endpoint settings
//	AWS_MAX_ATTEMPTS, AWS_RETRY_MODE    the SDK clients' retry settings
//
// An endpoint for one service wins over AWS_ENDPOINT_URL, as the AWS SDKs
// document. SDK service clients built from the returned config
// (dynamodb.NewFromConfig and the like) find both on their own; [Endpoint]
// gives the same answer to clients that are not from the SDK.
//
// Shared config and credentials files, profiles, SSO, web identity and
// instance metadata are not read. Without static credentials in the
// environment Load fails with [ErrNoCredentials]: outside Lambda, export the
// credentials (for example with `aws configure export-credentials --format
// env`) or set them for the process.
package awsenv
