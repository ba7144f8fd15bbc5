package pricing

import "testing"

func BenchmarkCostDefaultTable(b *testing.B) {
	t, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	u := Usage{InputTokens: 1200, OutputTokens: 300}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, ok := t.Cost("bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0", u); !ok {
			b.Fatal("no price")
		}
	}
}

// BenchmarkDefault loads the table shipped in default.yaml, as the first
// priced call of each process does.
func BenchmarkDefault(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Default(); err != nil {
			b.Fatal(err)
		}
	}
}
