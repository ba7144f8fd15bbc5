package main

import (
	"net/http"
	"strings"
)

// maxRequestBody bounds the body of a request handed to the HTTP handler
// (the approval form is a few hundred bytes).
const maxRequestBody = 64 << 10

// routes serves the chat routes (POST /telegram/{bot}, POST /slack/{app})
// with chat and everything else (the approval links) with links.
func routes(links, chat http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/telegram/") || strings.HasPrefix(r.URL.Path, "/slack/") {
			chat.ServeHTTP(w, r)
			return
		}
		links.ServeHTTP(w, r)
	})
}
