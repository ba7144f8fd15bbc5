package pricing_test

import (
	"fmt"
	"strings"

	"github.com/stepline/stepline/shared/pricing"
)

func ExampleTable_Cost() {
	table, err := pricing.Load("prices.yaml", strings.NewReader(`
- {provider: openai, model_prefix: gpt-4o, input_per_mtok: 2.50, output_per_mtok: 10.00}
- {provider: openai, model_prefix: gpt-4o-mini, input_per_mtok: 0.15, output_per_mtok: 0.60}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	usd, ok := table.Cost("openai", "gpt-4o-mini-2024-07-18", pricing.Usage{InputTokens: 10_000, OutputTokens: 2_000})
	fmt.Printf("%.4f %v\n", usd, ok)
	_, ok = table.Cost("openai", "o1-preview", pricing.Usage{InputTokens: 10_000})
	fmt.Println(ok)
	// Output:
	// 0.0027 true
	// false
}

func ExampleLazy() {
	loads := 0
	table := pricing.Lazy(func() (*pricing.Table, error) {
		loads++
		return pricing.Default()
	})
	fmt.Println("loads before use:", loads)
	_, ok := table.Cost("bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0", pricing.Usage{InputTokens: 1000})
	table.Cost("openai", "gpt-4o", pricing.Usage{InputTokens: 1000})
	fmt.Println("priced:", ok, "loads:", loads)
	// Output:
	// loads before use: 0
	// priced: true loads: 1
}
