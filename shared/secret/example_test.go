package secret_test

import (
	"context"
	"fmt"

	"github.com/stepline/stepline/shared/secret"
)

func ExampleExpand() {
	env := map[string]string{"TOKEN": "tok-123"}
	r := secret.Env(func(k string) string { return env[k] })
	ctx := context.Background()

	s, _ := secret.Expand(ctx, r, "Bearer ${TOKEN}; literal $${TOKEN}")
	fmt.Println(s)

	_, err := secret.Expand(ctx, r, "${MISSING}")
	fmt.Println(err)
	// Output:
	// Bearer tok-123; literal ${TOKEN}
	// secret "MISSING" is not set
}

func ExampleRedactor() {
	env := map[string]string{"API_KEY": "sk-live-abcdef"}
	red := secret.NewRedactor(secret.Env(func(k string) string { return env[k] }))
	url, _ := secret.Expand(context.Background(), red, "https://api.example.com/v1?key=${API_KEY}")
	fmt.Println(red.Redact("GET " + url + ": connection reset"))
	// Output:
	// GET https://api.example.com/v1?key=[REDACTED]: connection reset
}
