package approval_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/approval"
)

func ExampleSigner() {
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	s := &approval.Signer{Key: []byte("a signing key from a secret store"), Now: func() time.Time { return now }}
	token := s.Sign("approval-1", now.Add(time.Hour))

	id, err := s.Verify(token)
	fmt.Println(id, err)

	_, err = s.Verify(token[:len(token)-2] + "AA")
	fmt.Println(errors.Is(err, approval.ErrForged))

	now = now.Add(2 * time.Hour)
	_, err = s.Verify(token)
	fmt.Println(errors.Is(err, approval.ErrExpired))
	// Output:
	// approval-1 <nil>
	// true
	// true
}
