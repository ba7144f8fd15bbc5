package rietest

import (
	"path/filepath"
	"testing"

	"github.com/stepline/stepline/internal/testenv"
)

// BenchmarkSecretFloor is ColdStart of the hello-world bootstrap that
// reads one secret from a fake Secrets Manager before it takes work
// (testdata/hellosecret): what one start-up round trip costs, against
// hello-world, for the functions that must make one (approval, callback,
// ingest).
//
//	go test -run '^$' -bench SecretFloor -benchtime 60x ./functions/rietest
func BenchmarkSecretFloor(b *testing.B) {
	const arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:floor-AbCdEf"
	sm := FakeSecretsManager(b, map[string]string{arn: "a-signing-key"})
	bin := Build(b, filepath.Join(testenv.RepoRoot(), "functions", "rietest", "testdata", "hellosecret"))
	ColdStart(b, bin, []byte(`{}`), "AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "SECRET_ARN="+arn)
}
