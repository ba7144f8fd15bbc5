package approval

import (
	"context"
	"errors"
	"fmt"

	"github.com/stepline/stepline/shared/secret"
)

// SecretReader reads a Secrets Manager secret (satisfied by
// *secret.SecretsManager).
type SecretReader interface {
	GetSecretValue(ctx context.Context, id string) (secret.SecretValue, error)
}

// LoadKey reads the link signing key from the secret id: its value, text
// or binary, used as it is, and at least MinKeyBytes long. Errors name the
// secret, never its value.
func LoadKey(ctx context.Context, sm SecretReader, id string) ([]byte, error) {
	if id == "" {
		return nil, errors.New("signing key: no secret given")
	}
	v, err := sm.GetSecretValue(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", id, err)
	}
	key := []byte(v.String)
	if v.Binary != nil {
		key = v.Binary
	}
	if err := (&Signer{Key: key}).Check(); err != nil {
		return nil, fmt.Errorf("signing key %s: %w", id, err)
	}
	return key, nil
}
