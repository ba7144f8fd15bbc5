package executor

import (
	"context"
	"testing"
)

// BenchmarkGatewayComplete measures one gateway call against a local
// server: secret resolution, request encoding, HTTP round trip over
// loopback, reply parsing and redaction.
func BenchmarkGatewayComplete(b *testing.B) {
	srv := newServer(b, answer(200, okChat))
	reg := NewRegistry(Deps{HTTP: srv.Client(), Secrets: testSecrets()})
	p, err := reg.Provider(Call{Executor: Gateway, Step: "s", Config: map[string]any{
		"base_url": srv.URL + "/v1", "model": "gpt-4o", "api_key": "${API_KEY}", "provider": "openai",
	}})
	if err != nil {
		b.Fatal(err)
	}
	req := request()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScriptedComplete measures an offline (scripted) call.
func BenchmarkScriptedComplete(b *testing.B) {
	replies, err := ParseResponses("r.yaml", []byte(`s: ['{"confidence":1,"summary":"s","next_step_context":""}']`))
	if err != nil {
		b.Fatal(err)
	}
	reg := NewRegistry(Deps{Responses: replies})
	p, err := reg.Provider(Call{Executor: Gateway, Step: "s", Config: map[string]any{"base_url": "http://h", "model": "m"}})
	if err != nil {
		b.Fatal(err)
	}
	req := request()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		replies.Restore(nil)
		if _, err := p.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
