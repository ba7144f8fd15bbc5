package approval

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Errors of Verify, Page and Decide. Test with errors.Is.
var (
	// ErrForged: the token is malformed or its MAC does not check.
	ErrForged = errors.New("approval link is not valid")
	// ErrExpired: the link, or the approval itself, has expired.
	ErrExpired = errors.New("approval link has expired")
	// ErrNoKey: the signing key is shorter than MinKeyBytes; no link can be
	// made or checked. A configuration error.
	ErrNoKey = errors.New("approval signing key is missing or too short")
)

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = 16

// maxTokenBytes bounds the tokens Verify reads.
const maxTokenBytes = 1024

// macContext separates these MACs from any other use of the key.
const macContext = "stepline approval link v1\x00"

// Signer makes and checks approval link tokens. Key is the HMAC key (at
// least MinKeyBytes; resolve it from a ${NAME} secret); Now is the clock,
// time.Now when nil.
type Signer struct {
	Key []byte
	Now func() time.Time
}

func (s *Signer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Check reports a key that cannot sign (ErrNoKey).
func (s *Signer) Check() error {
	if len(s.Key) < MinKeyBytes {
		return fmt.Errorf("%w: %d bytes, need %d", ErrNoKey, len(s.Key), MinKeyBytes)
	}
	return nil
}

// Sign returns the link token for approvalID, valid until expires (to the
// second, rounded down). It returns "" when the key fails Check or the ID
// is empty.
func (s *Signer) Sign(approvalID string, expires time.Time) string {
	if s.Check() != nil || approvalID == "" {
		return ""
	}
	payload := approvalID + "|" + strconv.FormatInt(expires.Unix(), 10)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(s.mac(payload))
}

func (s *Signer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.Key)
	m.Write([]byte(macContext))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Verify checks token and returns the approval ID it carries. Errors:
// ErrForged (malformed, altered or signed with another key), ErrExpired
// (the MAC checks but the expiry has passed), ErrNoKey.
func (s *Signer) Verify(token string) (approvalID string, err error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	if token == "" || len(token) > maxTokenBytes {
		return "", ErrForged
	}
	p64, m64, ok := strings.Cut(token, ".")
	if !ok {
		return "", ErrForged
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p64)
	mac, err2 := enc.DecodeString(m64)
	if err1 != nil || err2 != nil {
		return "", ErrForged
	}
	if !hmac.Equal(mac, s.mac(string(payload))) {
		return "", ErrForged
	}
	i := strings.LastIndexByte(string(payload), '|')
	if i <= 0 {
		return "", ErrForged
	}
	exp, err := strconv.ParseInt(string(payload[i+1:]), 10, 64)
	if err != nil {
		return "", ErrForged
	}
	expires := time.Unix(exp, 0)
	if !s.now().Before(expires) {
		return "", fmt.Errorf("%w (at %s)", ErrExpired, expires.UTC().Format(time.RFC3339))
	}
	return string(payload[:i]), nil
}
