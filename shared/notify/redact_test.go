package notify

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
)

// TestFireErrorScrubsEchoedSecret: a target that refuses a notification
// and echoes the credential it was sent near the end of the quoted part of
// its answer leaves no piece of the credential in the delivery error or
// the log (the quote is cut after scrubbing, not before).
func TestFireErrorScrubsEchoedSecret(t *testing.T) {
	const token = "tok-echo-0a1b2c3d4e5f6071"
	cases := []struct {
		name string
		pad  int // bytes of the answer before the echoed header
	}{
		{"echo at the start", 0},
		{"echo across the cut", 170},
		{"echo after the cut", 260},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, "%s you sent %s", strings.Repeat("x", c.pad), r.Header.Get("Authorization"))
			}))
			defer srv.Close()
			var logs bytes.Buffer
			d := &Dispatcher{Secrets: env(map[string]string{"OPS_TOKEN": token}), Logger: quietLogger(&logs)}
			n := pipeline.Notification{Channel: "webhook", Config: map[string]any{"url": srv.URL, "headers": map[string]any{"Authorization": "Bearer ${OPS_TOKEN}"}}}
			ds := d.Fire(context.Background(), triagePipeline(pipeline.StageProduction, n), "escalate", escalation())
			if len(ds) != 1 || ds[0].Err == nil {
				t.Fatalf("deliveries %+v", ds)
			}
			all := ds[0].Err.Error() + logs.String()
			for i := 0; i+8 <= len(token); i++ {
				if strings.Contains(all, token[i:i+8]) {
					t.Fatalf("%q, part of the token, leaked: %s", token[i:i+8], all)
				}
			}
		})
	}
}
