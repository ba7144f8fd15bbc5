package approval

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// A chat button carries a compact signed reference to one decision of one
// approval in one chat (Telegram's callback_data holds at most 64 bytes, so
// a link token does not fit):
//
//	<a|r>.<approval ID>.<base64url(MAC[:12])>
//
// The MAC (HMAC-SHA256 under the link key, in its own domain) covers the
// decision, the approval ID and the chat the message was sent to, so a
// reference cannot be altered to the other decision, to another approval,
// or be pressed from another chat. It carries no expiry: the approval's own
// (in the store) decides, and the store's conditional write makes it
// single use, as for links.

// chatMACBytes is the length of a chat reference's MAC: 96 bits.
const chatMACBytes = 12

// MaxChatRef is the longest chat reference made: Telegram's bound on
// callback_data.
const MaxChatRef = 64

// chatContext separates chat reference MACs from link MACs.
const chatContext = "stepline chat decision v1\x00"

// ErrWrongChat: a button was pressed in a chat the approvals are not sent
// to.
var ErrWrongChat = errors.New("approval button pressed in a chat that takes no approvals")

func chatCode(decision string) (byte, bool) {
	switch decision {
	case task.Approve:
		return 'a', true
	case task.Reject:
		return 'r', true
	}
	return 0, false
}

func (s *Signer) chatMAC(code byte, id, chat string) []byte {
	m := hmac.New(sha256.New, s.Key)
	m.Write([]byte(chatContext))
	m.Write([]byte{code, 0})
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write([]byte(chat))
	return m.Sum(nil)[:chatMACBytes]
}

// ChatRef returns the reference a chat button carries for decision
// ("approve" or "reject") of approval id in chat. It returns "" when the
// key cannot sign, the decision is another word, or the reference would
// be longer than MaxChatRef (an ID longer than 45 bytes; store.NewApprovalID
// makes 43).
func (s *Signer) ChatRef(id, decision, chat string) string {
	code, ok := chatCode(decision)
	if s.Check() != nil || !ok || id == "" || strings.Contains(id, ".") {
		return ""
	}
	ref := string(code) + "." + id + "." + base64.RawURLEncoding.EncodeToString(s.chatMAC(code, id, chat))
	if len(ref) > MaxChatRef {
		return ""
	}
	return ref
}

// VerifyChatRef checks a chat button's reference pressed in chat and
// returns the approval ID and the decision. Errors: ErrForged (malformed,
// altered, signed with another key, or signed for another chat: the MAC
// cannot tell those apart), ErrNoKey.
func (s *Signer) VerifyChatRef(ref, chat string) (id, decision string, err error) {
	if err := s.Check(); err != nil {
		return "", "", err
	}
	if len(ref) > MaxChatRef {
		return "", "", ErrForged
	}
	parts := strings.Split(ref, ".")
	if len(parts) != 3 || len(parts[0]) != 1 || parts[1] == "" {
		return "", "", ErrForged
	}
	code := parts[0][0]
	switch code {
	case 'a':
		decision = task.Approve
	case 'r':
		decision = task.Reject
	default:
		return "", "", ErrForged
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(mac) != chatMACBytes {
		return "", "", ErrForged
	}
	if !hmac.Equal(mac, s.chatMAC(code, parts[1], chat)) {
		return "", "", ErrForged
	}
	return parts[1], decision, nil
}

// DecideChat records the decision a chat button carries, pressed in chat
// by by, once, and resumes the run, as Decide does for a link. It returns
// the approval as stored (also when the decision is refused as already
// made or expired, so that the chat can show where it stands) and the
// decision asked for. Errors: those of VerifyChatRef, and ErrExpired,
// ErrNotFound, ErrDecided, ErrResume as Decide's.
func (s *Service) DecideChat(ctx context.Context, ref, chat, by string) (store.Approval, string, error) {
	const op = "decide approval from chat"
	id, decision, err := s.Signer.VerifyChatRef(ref, chat)
	if err != nil {
		return store.Approval{}, "", fmt.Errorf("%s: %w", op, err)
	}
	d, taskDecision, _ := decisionOf(decision)
	a, err := s.record(ctx, op, id, d, taskDecision, by)
	return a, decision, err
}
