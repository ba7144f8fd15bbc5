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
