package secret

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/fault"
)

// mapResolver resolves from a map and counts lookups.
type mapResolver struct {
	values map[string]string
	calls  int
}

func (m *mapResolver) Resolve(_ context.Context, name string) (string, error) {
	m.calls++
	if v, ok := m.values[name]; ok {
		return v, nil
	}
	return "", Missing(name)
}

func TestExpand(t *testing.T) {
	r := &mapResolver{values: map[string]string{"TOKEN": "tok-123", "HOST": "api.example.com", "_x1": "u"}}
	cases := []struct {
		name, in, want string
		wantErr        string
	}{
		{name: "whole value", in: "${TOKEN}", want: "tok-123"},
		{name: "embedded", in: "Bearer ${TOKEN}", want: "Bearer tok-123"},
		{name: "several", in: "https://${HOST}/v1?k=${TOKEN}&u=${_x1}", want: "https://api.example.com/v1?k=tok-123&u=u"},
		{name: "adjacent", in: "${TOKEN}${TOKEN}", want: "tok-123tok-123"},
		{name: "no reference", in: "plain $ text {x}", want: "plain $ text {x}"},
		{name: "escaped", in: "literal $${TOKEN}", want: "literal ${TOKEN}"},
		{name: "escape then reference", in: "$${TOKEN}=${TOKEN}", want: "${TOKEN}=tok-123"},
		{name: "digit first is not a name", in: "${1A}", want: "${1A}"},
		{name: "hyphen is not a name", in: "${MY-KEY}", want: "${MY-KEY}"},
		{name: "unterminated", in: "x ${TOKEN", want: "x ${TOKEN"},
		{name: "empty braces", in: "${}", want: "${}"},
		{name: "dollar at end", in: "cost $", want: "cost $"},
		{name: "double dollar is one", in: "cost $$5", want: "cost $5"},
		{name: "escaped dollar before a reference", in: "cost $$${TOKEN}", want: "cost $tok-123"},
		{name: "triple dollar then brace", in: "$$$${TOKEN}", want: "$${TOKEN}"},
		{name: "missing", in: "Bearer ${NOPE}", wantErr: `secret "NOPE" is not set`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Expand(context.Background(), r, c.in)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if fault.Name(err) != fault.NameConfigError {
					t.Errorf("fault = %q, want ConfigError", fault.Name(err))
				}
				return
			}
			if err != nil {
				t.Fatalf("Expand(%q): %v", c.in, err)
			}
			if got != c.want {
				t.Errorf("Expand(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestExpandDoesNotResolveWithoutReferences(t *testing.T) {
	r := &mapResolver{}
	if _, err := Expand(context.Background(), r, "no refs at all"); err != nil {
		t.Fatal(err)
	}
	if _, err := Expand(context.Background(), nil, "${A-B}"); err != nil {
		t.Fatal(err)
	}
	if r.calls != 0 {
		t.Errorf("resolver called %d times", r.calls)
	}
	if _, err := Expand(context.Background(), nil, "${A}"); fault.Name(err) != fault.NameConfigError {
		t.Errorf("nil resolver: err = %v", err)
	}
}

// TestEscapeRoundTrip checks Expand(Escape(s)) == s on random strings made
// of the characters that matter to the scanner.
func TestEscapeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte("${}A_9-x")
	r := &mapResolver{values: map[string]string{}}
	for i := 0; i < 5000; i++ {
		b := make([]byte, rng.Intn(12))
		for j := range b {
			b[j] = alphabet[rng.Intn(len(alphabet))]
		}
		s := string(b)
		got, err := Expand(context.Background(), r, Escape(s))
		if err != nil || got != s {
			t.Fatalf("Expand(Escape(%q)) = %q, %v", s, got, err)
		}
	}
	if r.calls != 0 {
		t.Errorf("escaped text resolved %d references", r.calls)
	}
}

func TestExpandAll(t *testing.T) {
	r := &mapResolver{values: map[string]string{"K": "key-1"}}
	in := map[string]any{
		"url":     "https://x/${K}",
		"n":       3,
		"headers": map[string]string{"Authorization": "Bearer ${K}"},
		"payload": map[string]any{"list": []any{"a", "${K}", true}, "tags": []string{"${K}"}},
	}
	got, err := ExpandAll(context.Background(), r, in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"url":     "https://x/key-1",
		"n":       3,
		"headers": map[string]string{"Authorization": "Bearer key-1"},
		"payload": map[string]any{"list": []any{"a", "key-1", true}, "tags": []string{"key-1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ExpandAll = %#v\nwant %#v", got, want)
	}
	if in["url"] != "https://x/${K}" || in["payload"].(map[string]any)["list"].([]any)[1] != "${K}" {
		t.Error("ExpandAll changed its input")
	}

	_, err = ExpandAll(context.Background(), r, map[string]any{"payload": map[string]any{"items": []any{"ok", "${GONE}"}}})
	if err == nil || err.Error() != `payload.items[1]: secret "GONE" is not set` {
		t.Errorf("err = %v", err)
	}
	if fault.Name(err) != fault.NameConfigError {
		t.Errorf("fault = %q", fault.Name(err))
	}
}

func TestNames(t *testing.T) {
	got := Names("${A} and ${B}, $${C}, ${A}, ${bad-name}")
	if want := []string{"A", "B"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	if Names("nothing") != nil {
		t.Error("Names of plain text must be nil")
	}
}

func TestEnv(t *testing.T) {
	env := map[string]string{"SET": "v1", "EMPTY": ""}
	r := Env(func(k string) string { return env[k] })
	if v, err := r.Resolve(context.Background(), "SET"); err != nil || v != "v1" {
		t.Errorf("SET = %q, %v", v, err)
	}
	for _, name := range []string{"EMPTY", "UNSET"} {
		_, err := r.Resolve(context.Background(), name)
		if fault.Name(err) != fault.NameConfigError || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := Env(nil).Resolve(context.Background(), "X"); fault.Name(err) != fault.NameConfigError {
		t.Errorf("nil getenv: %v", err)
	}
}

func TestRedactor(t *testing.T) {
	const val = "s3cr3t/with space&amp"
	red := NewRedactor(&mapResolver{values: map[string]string{"TOKEN": val, "SHORT": "ab"}})
	ctx := context.Background()
	u, err := Expand(ctx, red, "https://h/${TOKEN}?k=${TOKEN}&s=${SHORT}")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(u, val) {
		t.Fatal("expansion lost the value")
	}

	t.Run("plain and escaped forms", func(t *testing.T) {
		msg := fmt.Sprintf("POST %s failed; q=%s p=%s j=%s short=ab", val, "s3cr3t%2Fwith+space%26amp", "s3cr3t%2Fwith%20space&amp", `s3cr3t\/with space\u0026amp`)
		got := red.Redact(msg)
		for _, leak := range []string{val, "s3cr3t%2Fwith+space%26amp", "s3cr3t%2Fwith%20space"} {
			if strings.Contains(got, leak) {
				t.Errorf("Redact left %q in %q", leak, got)
			}
		}
		if !strings.Contains(got, "short=ab") {
			t.Errorf("a value shorter than MinRedactLen was scrubbed: %q", got)
		}
	})

	t.Run("fault keeps its type", func(t *testing.T) {
		in := fmt.Errorf("gateway: %w", &fault.RateLimited{Msg: "429 from https://h/" + val, RetryAfter: 3 * time.Second})
		err := red.Error(in)
		var rl *fault.RateLimited
		if !errors.As(err, &rl) || rl.RetryAfter != 3*time.Second {
			t.Fatalf("Error() = %T %v", err, err)
		}
		if strings.Contains(err.Error(), val) || !strings.Contains(err.Error(), Redacted) {
			t.Errorf("message = %q", err.Error())
		}
	})

	t.Run("plain error keeps its chain", func(t *testing.T) {
		err := red.Error(fmt.Errorf("call %s: %w", val, context.Canceled))
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), val) {
			t.Errorf("Error() = %v", err)
		}
		clean := errors.New("nothing to hide")
		if red.Error(clean) != clean {
			t.Error("an error without secrets must pass through")
		}
	})

	t.Run("json stays json", func(t *testing.T) {
		numeric := NewRedactor(nil)
		numeric.Add("987654321")
		got := numeric.RedactJSON([]byte(`{"pin":987654321,"s":"x"}`))
		if strings.Contains(string(got), "987654321") || !strings.HasPrefix(string(got), `"`) {
			t.Errorf("RedactJSON = %s", got)
		}
		got = red.RedactJSON([]byte(`{"echo":"` + `s3cr3t\/with space\u0026amp` + `"}`))
		if string(got) != `{"echo":"[REDACTED]"}` {
			t.Errorf("RedactJSON = %s", got)
		}
	})

	t.Run("resolve failure is a fault", func(t *testing.T) {
		_, err := red.Resolve(ctx, "MISSING")
		if fault.Name(err) != fault.NameConfigError {
			t.Errorf("err = %v", err)
		}
	})
}

// TestEscapeKeepsReferences: untrusted text escaped on either side of a
// reference the pipeline wrote never switches it off or on, whatever the
// text ends or starts with.
func TestEscapeKeepsReferences(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	alphabet := []byte("${}K_x")
	r := &mapResolver{values: map[string]string{"K": "val"}}
	word := func() string {
		b := make([]byte, rng.Intn(6))
		for j := range b {
			b[j] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	for i := 0; i < 5000; i++ {
		before, after := word(), word()
		got, err := Expand(context.Background(), r, Escape(before)+"${K}"+Escape(after))
		if want := before + "val" + after; err != nil || got != want {
			t.Fatalf("Expand(Escape(%q)+${K}+Escape(%q)) = %q, %v; want %q", before, after, got, err, want)
		}
	}
	for _, c := range []struct{ before, after string }{{"cost $", ""}, {"$", "$"}, {"$$", "{K}"}, {"", "{K}"}} {
		got, _ := Expand(context.Background(), r, Escape(c.before)+"${K}"+Escape(c.after))
		if want := c.before + "val" + c.after; got != want {
			t.Errorf("%q ${K} %q: got %q, want %q", c.before, c.after, got, want)
		}
	}
}

func TestMapRefs(t *testing.T) {
	got := MapRefs("a ${K} $${L} $$ ${bad-} $", func(n string) string { return "<" + n + ">" })
	if want := "a <K> ${L} $ ${bad-} $"; got != want {
		t.Errorf("MapRefs = %q, want %q", got, want)
	}
}

// TestRefSyntax: what the compiler and the project reader accept as a
// reference (IsRef) and refuse as a mistyped one (CheckRefs), as Expand
// reads references.
func TestRefSyntax(t *testing.T) {
	for s, want := range map[string]bool{
		"${A}": true, "${_x9}": true, "${TOKEN_2}": true,
		"": false, "${}": false, "${9A}": false, "${A-B}": false, "${A}x": false, "x${A}": false,
		"${A}${B}": false, "$${A}": false, "${A": false, "{A}": false, "$A": false,
	} {
		if got := IsRef(s); got != want {
			t.Errorf("IsRef(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]string{
		"":                   "",
		"plain text":         "",
		"cost $5":            "",
		"${A} and ${B_2}":    "",
		"$${not a ref":       "", // an escaped ${
		"$$${A}":             "", // an escaped $, then a reference
		"ends with $":        "",
		"${A":                `placeholder "${A" is not closed with }`,
		"x ${A} then ${B":    `placeholder "${B" is not closed with }`,
		"${A-B}":             `placeholder "${A-B}": a secret name holds letters, digits and _`,
		"${}":                `placeholder "${}": a secret name holds letters, digits and _`,
		"${9}":               `placeholder "${9}": a secret name holds letters, digits and _`,
		"$${ok} ${bad name}": `placeholder "${bad name}": a secret name holds letters, digits and _`,
	} {
		err := CheckRefs(s)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("CheckRefs(%q) = %q, want %q", s, got, want)
		}
		// What CheckRefs accepts without escapes, Expand reads as text
		// and references: no ${ is left as text.
		if want == "" && !strings.Contains(s, "$$") && strings.Contains(MapRefs(s, func(string) string { return "X" }), "${") {
			t.Errorf("CheckRefs(%q) accepted a ${ that Expand keeps as text", s)
		}
	}
}
