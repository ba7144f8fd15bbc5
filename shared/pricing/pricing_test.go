package pricing

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func mustTable(t *testing.T, src string) *Table {
	t.Helper()
	tab, err := Load("prices.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return tab
}

const testTable = `
- {provider: openai, model_prefix: gpt-4o, input_per_mtok: 2.5, output_per_mtok: 10}
- {provider: openai, model_prefix: gpt-4o-mini, input_per_mtok: 0.15, output_per_mtok: 0.6}
- {model_prefix: gpt-4o, input_per_mtok: 3, output_per_mtok: 12}
- {model_prefix: llama-3, input_per_mtok: 0.2, output_per_mtok: 0.2}
- {provider: bedrock, model_prefix: anthropic.claude-sonnet-4, input_per_mtok: 3, output_per_mtok: 15}
- {provider: ollama, input_per_mtok: 0, output_per_mtok: 0}
- {provider: Azure, model_prefix: GPT-4O, input_per_mtok: 2.75, output_per_mtok: 11}
`

func TestCost(t *testing.T) {
	tab := mustTable(t, testTable)
	u := Usage{InputTokens: 1_000_000, OutputTokens: 500_000}
	cases := []struct {
		name, provider, model string
		want                  float64
		ok                    bool
	}{
		{"longest prefix wins", "openai", "gpt-4o-mini-2024-07-18", 0.15 + 0.3, true},
		{"shorter prefix", "openai", "gpt-4o-2024-08-06", 2.5 + 5, true},
		{"provider entry beats provider-less entry of same prefix", "openai", "gpt-4o", 2.5 + 5, true},
		{"provider-less entry for other providers", "openrouter", "gpt-4o", 3 + 6, true},
		{"vendor/ prefix stripped", "openrouter", "meta-llama/llama-3.1-70b", 0.2 + 0.1, true},
		{"vendor/ prefix kept when it matches as written", "openai", "gpt-4o-mini", 0.15 + 0.3, true},
		{"provider-only fallback", "ollama", "qwen2.5:7b", 0, true},
		{"case-insensitive", "AZURE", "gpt-4o", 2.75 + 5.5, true},
		{"bedrock geography prefix", "bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0", 3 + 7.5, true},
		{"bedrock plain id", "bedrock", "anthropic.claude-sonnet-4-20250514-v1:0", 3 + 7.5, true},
		{"unknown model", "openai", "text-davinci-003", 0, false},
		{"unknown provider and model", "acme", "acme-1", 0, false},
		{"provider entry of another provider does not apply", "anthropic", "anthropic.claude-sonnet-4", 0, false},
		{"empty model", "openai", "", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := tab.Cost(c.provider, c.model, u)
			if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
				t.Errorf("Cost(%q, %q) = %v, %v; want %v, %v", c.provider, c.model, got, ok, c.want, c.ok)
			}
		})
	}
	var nilTable *Table
	if _, ok := nilTable.Cost("openai", "gpt-4o", u); ok {
		t.Error("a nil table priced a call")
	}
}

func TestCostArithmetic(t *testing.T) {
	tab := mustTable(t, `[{provider: p, model_prefix: m, input_per_mtok: 3, output_per_mtok: 15}]`)
	got, ok := tab.Cost("p", "m1", Usage{InputTokens: 1234, OutputTokens: 567})
	want := 1234*3/1e6 + 567*15/1e6
	if !ok || math.Abs(got-want) > 1e-12 {
		t.Errorf("Cost = %v, %v; want %v", got, ok, want)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"not a list", "provider: openai", "prices.yaml:1:1: want a list of price entries"},
		{"item not a mapping", "- 3", "prices.yaml:1:3: want a mapping"},
		{"unknown key", "- {provider: a, model: b, input_per_mtok: 1, output_per_mtok: 1}", `prices.yaml:1:17: unknown key "model"`},
		{"price not a number", "- provider: a\n  input_per_mtok: cheap\n  output_per_mtok: 1", "prices.yaml:2:19: input_per_mtok: want a number"},
		{"negative price", "- {provider: a, input_per_mtok: -1, output_per_mtok: 1}", "prices.yaml:1:3: input_per_mtok must be a finite, non-negative number"},
		{"infinite price", "- {provider: a, input_per_mtok: .inf, output_per_mtok: 1}", "must be a finite"},
		{"missing price", "- {provider: a, input_per_mtok: 1}", "prices.yaml:1:3: input_per_mtok and output_per_mtok are required"},
		{"matches everything", "- {input_per_mtok: 1, output_per_mtok: 1}", "needs a provider or a model_prefix"},
		{"duplicate", "- {provider: a, model_prefix: m, input_per_mtok: 1, output_per_mtok: 1}\n- {provider: A, model_prefix: M, input_per_mtok: 2, output_per_mtok: 2}", "entry 2: same provider and model_prefix as entry 1"},
		{"syntax", "- {provider: a", "prices.yaml: line 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load("prices.yaml", strings.NewReader(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestLoadJSONAndEmpty(t *testing.T) {
	tab := mustTable(t, `[{"provider":"openai","model_prefix":"gpt-4o","input_per_mtok":2.5,"output_per_mtok":10}]`)
	if got, ok := tab.Cost("openai", "gpt-4o", Usage{InputTokens: 2_000_000}); !ok || got != 5 {
		t.Errorf("JSON table: Cost = %v, %v", got, ok)
	}
	empty := mustTable(t, "")
	if _, ok := empty.Cost("openai", "gpt-4o", Usage{}); ok {
		t.Error("empty table priced a call")
	}
}

func TestDefaultTable(t *testing.T) {
	tab, err := Default()
	if err != nil {
		t.Fatalf("default.yaml: %v", err)
	}
	u := Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}
	cases := []struct {
		provider, model string
		want            float64
	}{
		{"openai", "gpt-4o-mini", 0.75},
		{"openai", "gpt-4o-2024-11-20", 12.5},
		{"anthropic", "claude-sonnet-4-5-20250929", 18},
		{"anthropic", "claude-opus-4-1-20250805", 90},
		{"anthropic", "claude-opus-4-5-20251101", 30},
		{"bedrock", "us.anthropic.claude-3-5-haiku-20241022-v1:0", 4.8},
		{"scripted", "scripted", 0},
	}
	for _, c := range cases {
		got, ok := tab.Cost(c.provider, c.model, u)
		if !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("default Cost(%q, %q) = %v, %v; want %v", c.provider, c.model, got, ok, c.want)
		}
	}
}

func TestNewRejectsBadEntries(t *testing.T) {
	if _, err := New([]Entry{{Provider: "a", InputPerMTok: math.NaN()}}); err == nil || !strings.Contains(err.Error(), "entry 1: input_per_mtok") {
		t.Errorf("NaN price: err = %v", err)
	}
	tab, err := New([]Entry{{Provider: " OpenAI ", ModelPrefix: " GPT-4o ", InputPerMTok: 1, OutputPerMTok: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if e := tab.Entries()[0]; e.Provider != "openai" || e.ModelPrefix != "gpt-4o" {
		t.Errorf("entry not normalised: %+v", e)
	}
}

func TestLazy(t *testing.T) {
	u := Usage{InputTokens: 1_000_000}
	t.Run("loads once, on first use", func(t *testing.T) {
		var calls atomic.Int32
		tab := Lazy(func() (*Table, error) {
			calls.Add(1)
			return Load("prices.yaml", strings.NewReader(testTable))
		})
		if calls.Load() != 0 {
			t.Fatal("Lazy loaded the table before its first use")
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, ok := tab.Cost("openai", "gpt-4o-mini", u); !ok || math.Abs(got-0.15) > 1e-9 {
					t.Errorf("Cost = %v, %v; want 0.15, true", got, ok)
				}
			}()
		}
		wg.Wait()
		if n := len(tab.Entries()); n != 7 || tab.Err() != nil {
			t.Errorf("%d entries, Err %v; want 7, nil", n, tab.Err())
		}
		if calls.Load() != 1 {
			t.Errorf("loader called %d times, want 1", calls.Load())
		}
	})
	t.Run("failure prices nothing", func(t *testing.T) {
		var calls atomic.Int32
		tab := Lazy(func() (*Table, error) {
			calls.Add(1)
			return Load("prices.yaml", strings.NewReader("- {provider: x}"))
		})
		if _, ok := tab.Cost("x", "m", u); ok {
			t.Error("a table that failed to load prices a call")
		}
		if err := tab.Err(); err == nil || !strings.Contains(err.Error(), "prices.yaml:1:3: input_per_mtok and output_per_mtok are required") {
			t.Errorf("Err = %v", err)
		}
		if _, ok := tab.Match("x", "m"); ok || tab.Entries() != nil || calls.Load() != 1 {
			t.Errorf("after a failure: loader called %d times, entries %v", calls.Load(), tab.Entries())
		}
	})
	t.Run("nil table from the loader", func(t *testing.T) {
		tab := Lazy(func() (*Table, error) { return nil, nil })
		if _, ok := tab.Cost("openai", "gpt-4o", u); ok || tab.Err() == nil {
			t.Errorf("Err = %v, want an error", tab.Err())
		}
	})
	t.Run("lazy table from the loader", func(t *testing.T) {
		inner := Lazy(func() (*Table, error) { return nil, errors.New("no file") })
		tab := Lazy(func() (*Table, error) { return inner, nil })
		if err := tab.Err(); err == nil || err.Error() != "no file" {
			t.Errorf("Err = %v, want the inner loader's error", err)
		}
		ok := Lazy(func() (*Table, error) { return Lazy(Default), nil })
		if _, priced := ok.Cost("bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0", u); !priced {
			t.Error("a lazy table's lazy default table prices nothing")
		}
	})
	t.Run("eager tables have no error", func(t *testing.T) {
		var nilTable *Table
		if nilTable.Err() != nil || mustTable(t, testTable).Err() != nil {
			t.Error("Err of an eager table")
		}
	})
}
