package steprun

import (
	"context"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
)

func TestRenderURL(t *testing.T) {
	r := newRenderer("n0nce")
	b := map[string]any{
		"base": "https://hooks.example.com/v1", "id": "../admin?x=1#f", "plain": "T-42",
		"dots": "..", "dollar": "${AUTOMATION_TOKEN}", "space": "a b", "utf": "é/",
	}
	for _, tc := range []struct {
		src, want, err string
	}{
		{src: "https://hooks.example.com/static", want: "https://hooks.example.com/static"},
		{src: "https://hooks.example.com/t/{{ plain }}", want: "https://hooks.example.com/t/T-42"},
		{src: "https://hooks.example.com/t/{{ id }}?k=${KEY}", want: "https://hooks.example.com/t/..%2Fadmin%3Fx%3D1%23f?k=${KEY}"},
		{src: "https://hooks.example.com/s?q={{ space }}&u={{ utf }}", want: "https://hooks.example.com/s?q=a%20b&u=%C3%A9%2F"},
		// A value brings no reference: its "$" is encoded, the pipeline's resolves.
		{src: "https://hooks.example.com/t/{{ dollar }}/${KEY}", want: "https://hooks.example.com/t/%24%7BAUTOMATION_TOKEN%7D/${KEY}"},
		// The scheme and host part: pasted as written.
		{src: "{{ base }}/t/{{ plain }}", want: "https://hooks.example.com/v1/t/T-42"},
		{src: "https://{{ plain }}.example.com/{{ plain }}", want: "https://T-42.example.com/T-42"},
		{src: "https://hooks.example.com?q={{ space }}", want: "https://hooks.example.com?q=a%20b"},
		{src: "https://hooks.example.com#{{ space }}", want: "https://hooks.example.com#a%20b"},
		// Dot segments.
		{src: "https://hooks.example.com/t/{{ dots }}/x", err: `step "s": executor_config.url: a rendered value makes the path segment ".."`},
		{src: "https://hooks.example.com/t/{{ dots }}", err: `a rendered value makes the path segment ".."`},
		{src: "https://hooks.example.com/t/{{ dots }}.json", want: "https://hooks.example.com/t/...json"},
		{src: "https://hooks.example.com/t?q={{ dots }}", want: "https://hooks.example.com/t?q=.."},
		// A filter works on the value, inside its markers.
		{src: "https://hooks.example.com/t/{{ id | truncate: 3 }}", want: "https://hooks.example.com/t/..."},
	} {
		got, err := r.renderURL(context.Background(), "s", "executor_config.url", tc.src, b)
		switch {
		case tc.err != "":
			if err == nil || fault.Name(err) != "TemplateError" || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want a TemplateError with %q", tc.src, got, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("%s:\n got %q, %v\nwant %q", tc.src, got, err, tc.want)
		}
	}
}
