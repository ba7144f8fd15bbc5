package inbound

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/secret"
)

func TestParseTokenList(t *testing.T) {
	tests := []struct {
		name, src string
		want      Tokens
		wantErr   string
	}{
		{"pairs", "checkout=tok-1, payments=tok-2==", Tokens{"checkout": "tok-1", "payments": "tok-2=="}, ""},
		{"a bare token has no team", "tok-1", Tokens{"": "tok-1"}, ""},
		{"JSON", `{"checkout":"tok-1"}`, Tokens{"checkout": "tok-1"}, ""},
		// The JSON object takes every form of a tokens file.
		{"JSON, the reference form", `{"teams": [{"name": "checkout", "token": "tok-1"}], "token": "legacy-1"}`, Tokens{"checkout": "tok-1", "": "legacy-1"}, ""},
		{"JSON under auth", `{"auth": {"teams": [{"name": "checkout", "token": "tok-1"}]}}`, Tokens{"checkout": "tok-1"}, ""},
		{"JSON, a token not a string", `{"checkout": 12}`, nil, `the token of team "checkout" must be a string`},
		{"JSON, a team twice", `{"a": "x1", "b": "x3", "a": "x2"}`, nil, `key "a" given twice`},
		{"JSON, a key twice in a nested object", `{"teams": [{"name": "a", "token": "x1", "name": "b"}]}`, nil, `key "name" given twice`},
		{"JSON, the same key in two objects", `{"teams": [{"name": "a", "token": "x1"}, {"name": "b", "token": "x2"}]}`, Tokens{"a": "x1", "b": "x2"}, ""},
		{"JSON, not JSON", `{"a": `, nil, "parse tokens: unexpected end of JSON input"},
		{"JSON, text after", `{"a": "x1"} {}`, nil, "parse tokens: invalid character"},
		{"empty", "", Tokens{}, ""},
		{"repeated team", "a=x1,a=x2", nil, `team "a" is listed twice`},
		{"empty token", "a=", nil, `team "a" has an empty token`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTokenList(tt.src)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTokensTeam(t *testing.T) {
	tok := Tokens{"checkout": "tok-checkout-1", "": "legacy-token"}
	tests := []struct {
		bearer, team string
		ok           bool
	}{
		{"tok-checkout-1", "checkout", true},
		{"legacy-token", "", true},
		{"tok-checkout-2", "", false},
		{"tok-checkout", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		team, ok := tok.Team(tt.bearer)
		if team != tt.team || ok != tt.ok {
			t.Errorf("Team(%q) = %q %v, want %q %v", tt.bearer, team, ok, tt.team, tt.ok)
		}
	}
	if _, ok := (Tokens{}).Team("x"); ok {
		t.Error("empty tokens authenticate")
	}
}

func TestTokensExpand(t *testing.T) {
	env := map[string]string{"CHECKOUT_TOKEN": "s3cret-checkout"}
	r := secret.Env(func(k string) string { return env[k] })
	got, err := Tokens{"checkout": "${CHECKOUT_TOKEN}", "ops": "plain-ops"}.Expand(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if got["checkout"] != "s3cret-checkout" || got["ops"] != "plain-ops" {
		t.Errorf("got %v", got)
	}
	_, err = Tokens{"payments": "${PAYMENTS_TOKEN}"}.Expand(context.Background(), r)
	if err == nil || !strings.Contains(err.Error(), `"PAYMENTS_TOKEN" is not set`) {
		t.Errorf("error %v", err)
	}
}

func TestBearerToken(t *testing.T) {
	for in, want := range map[string]string{
		"Bearer abc":     "abc",
		"bearer  abc ":   "abc",
		"Basic dXNlcjpw": "",
		"abc":            "",
		"":               "",
	} {
		if got := BearerToken(in); got != want {
			t.Errorf("BearerToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTokensCheckTeams(t *testing.T) {
	tests := []struct {
		name    string
		tokens  Tokens
		wantErr string
	}{
		{"teams", Tokens{"checkout": "tok-1", "payments": "tok-2"}, ""},
		{"teams and the admin", Tokens{"checkout": "tok-1", AdminTeam: "tok-a"}, ""},
		{"the admin alone", Tokens{AdminTeam: "tok-a"}, ""},
		{"a team whose name contains admin", Tokens{"admins": "tok-1", "sysadmin": "tok-2"}, ""},
		{"no tokens", Tokens{}, ""},
		{"a token without a team", Tokens{"": "tok-legacy", "checkout": "tok-1"}, `a token has no team: name one (team=token), or call it "admin"`},
		{"a team of white space", Tokens{" ": "tok-1"}, "a token has no team"},
		{"Admin", Tokens{"Admin": "tok-a"}, `team "Admin" looks like the admin team but is not it: the admin team is spelled "admin"`},
		{"ADMIN beside admin", Tokens{"ADMIN": "tok-b", AdminTeam: "tok-a"}, `team "ADMIN" looks like the admin team`},
		{"admin with spaces", Tokens{" admin": "tok-a"}, `team " admin" looks like the admin team`},
		{"what Check refuses", Tokens{"checkout": "same", AdminTeam: "same"}, `teams "admin" and "checkout" share a token`},
		{"an empty token", Tokens{AdminTeam: ""}, `team "admin" has an empty token`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.tokens.CheckTeams()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestTokensTeamAdmin(t *testing.T) {
	tok := Tokens{"checkout": "tok-checkout-1", AdminTeam: "tok-admin-1"}
	tests := []struct {
		name, bearer, team string
		ok                 bool
	}{
		{"the admin token names the admin team", "tok-admin-1", AdminTeam, true},
		{"the admin's name is no token", AdminTeam, "", false},
		{"a prefix of the admin token", "tok-admin-", "", false},
		{"the admin token and more", "tok-admin-12", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			team, ok := tok.Team(tt.bearer)
			if team != tt.team || ok != tt.ok {
				t.Errorf("Team(%q) = %q %v, want %q %v", tt.bearer, team, ok, tt.team, tt.ok)
			}
		})
	}
}
