package inbound

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/secret"
)

// Tokens maps a team name to the bearer token its senders use. An empty
// team name is a token that authenticates without naming a team. An empty
// Tokens disables authentication.
type Tokens map[string]string

// Team returns the team whose token equals bearer. Every token is
// compared, in constant time over SHA-256 digests, so neither the length
// of a token nor which team matched shows in the time taken.
func (t Tokens) Team(bearer string) (team string, ok bool) {
	if bearer == "" {
		return "", false
	}
	hb := sha256.Sum256([]byte(bearer))
	var found []string
	for name, tok := range t {
		ht := sha256.Sum256([]byte(tok))
		if subtle.ConstantTimeCompare(hb[:], ht[:]) == 1 && tok != "" {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return "", false
	}
	slices.Sort(found)
	return found[0], true
}

// AdminTeam is the reserved team name of the admin token: on stepline
// serve its holder sees every team's runs and starts any pipeline. Runs it
// starts are recorded with this team. Elsewhere (the ingest function) it is
// a team like any other.
const AdminTeam = "admin"

// CheckTeams reports tokens that cannot tell whose runs a caller may see,
// beyond what Check reports: a token without a team (whose runs would it
// see: its own, or everyone's as the old single token did?), and a team
// name that differs from AdminTeam only in case or surrounding space
// ("Admin", " admin"), which reads as the admin token but would not be one.
// stepline serve requires it whenever tokens are configured.
func (t Tokens) CheckTeams() error {
	if err := t.Check(); err != nil {
		return err
	}
	for _, team := range slices.Sorted(maps.Keys(t)) {
		switch {
		case strings.TrimSpace(team) == "":
			return fmt.Errorf("a token has no team: name one (team=token), or call it %q to see and start everything", AdminTeam)
		case team != AdminTeam && strings.EqualFold(strings.TrimSpace(team), AdminTeam):
			return fmt.Errorf("team %q looks like the admin team but is not it: the admin team is spelled %q", team, AdminTeam)
		}
	}
	return nil
}

// Check reports tokens that cannot work: an empty token, one with spaces,
// and one token shared by two teams (which team would it name?).
func (t Tokens) Check() error {
	seen := make(map[string]string, len(t))
	for _, team := range slices.Sorted(maps.Keys(t)) {
		tok := t[team]
		switch {
		case tok == "":
			return fmt.Errorf("team %q has an empty token", team)
		case strings.ContainsAny(tok, " \t\r\n"):
			return fmt.Errorf("the token of team %q contains white space", team)
		}
		if other, dup := seen[tok]; dup {
			return fmt.Errorf("teams %q and %q share a token", other, team)
		}
		seen[tok] = team
	}
	return nil
}

// Expand resolves ${NAME} references in the tokens through r, so that a
// tokens file can name secrets (Secrets Manager on AWS, the environment
// locally) instead of holding them. The result is checked.
func (t Tokens) Expand(ctx context.Context, r secret.Resolver) (Tokens, error) {
	out := make(Tokens, len(t))
	for team, tok := range t {
		v, err := secret.Expand(ctx, r, tok)
		if err != nil {
			return nil, fmt.Errorf("token of team %q: %w", team, err)
		}
		out[team] = v
	}
	if err := out.Check(); err != nil {
		return nil, fmt.Errorf("expand tokens: %w", err)
	}
	return out, nil
}

// TokensOf reads team tokens out of a decoded tokens document, in the
// forms package intake's ParseTokens lists (a map team → token, teams:
// [{name, token}] with an optional token:, either under auth:).
func TokensOf(doc map[string]any) (Tokens, error) {
	if auth, ok := doc["auth"].(map[string]any); ok && len(doc) == 1 {
		doc = auth
	}
	t := Tokens{}
	_, hasTeams := doc["teams"]
	_, hasToken := doc["token"]
	if !hasTeams && !hasToken {
		for team, v := range doc {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("parse tokens: the token of team %q must be a string", team)
			}
			t[team] = s
		}
		return t, checked(t)
	}
	for key, v := range doc {
		switch key {
		case "token":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("parse tokens: token must be a string")
			}
			t[""] = s
		case "teams":
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("parse tokens: teams must be a list of {name, token}")
			}
			for i, e := range list {
				m, _ := e.(map[string]any)
				name, _ := m["name"].(string)
				tok, _ := m["token"].(string)
				if name == "" {
					return nil, fmt.Errorf("parse tokens: teams[%d] needs a name and a token", i)
				}
				if _, dup := t[name]; dup {
					return nil, fmt.Errorf("parse tokens: team %q is listed twice", name)
				}
				t[name] = tok
			}
		default:
			return nil, fmt.Errorf("parse tokens: unknown key %q (use teams and token)", key)
		}
	}
	return t, checked(t)
}

// ParseTokenList reads team tokens from an environment variable's value:
// "team=token" pairs separated by commas ("checkout=tok-1,payments=tok-2"),
// or, when the value starts with "{", a JSON object team → token (the
// shape of a Secrets Manager secret; any form of TokensOf, in JSON). A
// pair without "=" is a token without a team. A key given twice in the
// JSON is an error, as it is in a YAML tokens file.
func ParseTokenList(s string) (Tokens, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		return parseTokenJSON([]byte(s))
	}
	t := Tokens{}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		team, tok, ok := strings.Cut(pair, "=")
		if !ok {
			team, tok = "", pair
		}
		team = strings.TrimSpace(team)
		if _, dup := t[team]; dup {
			return nil, fmt.Errorf("parse tokens: team %q is listed twice", team)
		}
		t[team] = strings.TrimSpace(tok)
	}
	return t, checked(t)
}

func checked(t Tokens) error {
	if err := t.Check(); err != nil {
		return fmt.Errorf("parse tokens: %w", err)
	}
	return nil
}

// BearerToken returns the token of an Authorization header value
// ("Bearer <token>", the scheme in any case), or "" when there is none.
func BearerToken(header string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// parseTokenJSON reads a JSON tokens document with encoding/json (the
// function that reads tokens from a secret links no YAML parser).
func parseTokenJSON(data []byte) (Tokens, error) {
	if err := uniqueKeys(data); err != nil {
		return nil, fmt.Errorf("parse tokens: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse tokens: %w", err)
	}
	return TokensOf(doc)
}

// uniqueKeys reports the first key given twice in one object of the JSON
// in data (encoding/json would keep the last one silently).
func uniqueKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type object struct {
		keys      map[string]bool
		expectKey bool
	}
	var stack []*object // objects and arrays (nil) open
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil // json.Unmarshal says what is wrong
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.expectKey {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return fmt.Errorf("key %q given twice", k)
				}
				top.keys[k] = true
				top.expectKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &object{keys: map[string]bool{}, expectKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, nil)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the object around it expects a key next.
		if len(stack) > 0 && stack[len(stack)-1] != nil {
			stack[len(stack)-1].expectKey = true
		}
	}
}
