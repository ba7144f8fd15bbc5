package secret

import (
	"context"
	"testing"
)

func BenchmarkExpand(b *testing.B) {
	r := Env(func(k string) string { return "value-of-" + k })
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Expand(ctx, r, "https://api.example.com/${PATH}?key=${KEY}&x=1"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExpandNoReference(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Expand(ctx, nil, "https://api.example.com/v1/chat/completions"); err != nil {
			b.Fatal(err)
		}
	}
}
