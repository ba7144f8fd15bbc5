package rietest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FakeSecretsManager answers GetSecretValue in the Secrets Manager JSON
// protocol for the secrets it holds (by id), so a bootstrap can read its
// keys with AWS_ENDPOINT_URL_SECRETS_MANAGER pointing at it. It stops when
// the test ends.
func FakeSecretsManager(t testing.TB, secrets map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ SecretId string }
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || json.Unmarshal(body, &in) != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type": "InvalidRequestException", "message": "unexpected request"}`)
			return
		}
		v, ok := secrets[in.SecretId]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type": "ResourceNotFoundException", "message": "Secrets Manager can't find the specified secret."}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretId, "Name": in.SecretId, "SecretString": v})
	}))
	t.Cleanup(srv.Close)
	return srv
}
