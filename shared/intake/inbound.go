package intake

import (
	"strings"

	"github.com/stepline/stepline/shared/inbound"
)

// ParseTokenList is inbound.ParseTokenList, but a value that starts with
// "{" is read as a tokens file is (ParseTokens: YAML, of which JSON is a
// part), as it was before package inbound read it with encoding/json:
// stepline serve's token list keeps accepting a YAML flow mapping.
func ParseTokenList(s string) (inbound.Tokens, error) {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
		return ParseTokens([]byte(t))
	}
	return inbound.ParseTokenList(s)
}
