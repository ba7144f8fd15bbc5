// Package awsrest calls the few AWS REST operations Stepline's Lambda
// functions make, without the SDK's service packages.
//
// The SDK's service clients register their whole API's schemas and
// endpoint rules when a binary links them; those package initialisers run
// on every cold start, before the function can take its first event. The
// step function needs one Bedrock operation (Converse) and two S3 ones
// (PutObject, GetObject), so it speaks their wire protocols directly:
//
//   - [Client] signs requests with Signature Version 4 (the SDK's signer),
//     sends them over the configuration's HTTP client, retries what a retry
//     can fix, and turns error answers into [*ResponseError];
//   - [BedrockRuntime] posts a Converse request body and returns the
//     answer's body (REST-JSON);
//   - [S3] puts and gets whole objects (REST-XML errors, path-style
//     addressing when an endpoint is configured).
//
// Package shared/store/dynamo builds its DynamoDB client (JSON protocol)
// on [Client] the same way.
//
// Configuration comes from an aws.Config as package shared/awsenv builds
// it: region, credentials, HTTP client, AWS_MAX_ATTEMPTS, and the endpoint
// overrides AWS_ENDPOINT_URL_<SERVICE> and AWS_ENDPOINT_URL.
package awsrest
