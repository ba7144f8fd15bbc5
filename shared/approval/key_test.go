package approval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/secret"
)

type fakeSecrets map[string]secret.SecretValue

func (f fakeSecrets) GetSecretValue(_ context.Context, id string) (secret.SecretValue, error) {
	v, ok := f[id]
	if !ok {
		return secret.SecretValue{}, fmt.Errorf("secret %s not found", id)
	}
	return v, nil
}

func TestLoadKey(t *testing.T) {
	sm := fakeSecrets{
		"text":   {String: "a-long-enough-signing-key"},
		"binary": {Binary: []byte("0123456789abcdef0123")},
		"short":  {String: "tiny"},
	}
	tests := []struct {
		id      string
		want    string
		wantErr error
	}{
		{id: "text", want: "a-long-enough-signing-key"},
		{id: "binary", want: "0123456789abcdef0123"},
		{id: "short", wantErr: ErrNoKey},
		{id: "missing"},
		{id: ""},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			key, err := LoadKey(context.Background(), sm, tc.id)
			if tc.want != "" {
				if err != nil || string(key) != tc.want {
					t.Fatalf("key = %q, %v", key, err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "tiny") {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}
