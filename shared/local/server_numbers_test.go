package local

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/store"
)

// TestServerEventNumberRange: an event holding a number no float64 holds
// (1e999) is refused with 400 naming where it is, and its run is closed
// failed, never left running without a step; the largest finite numbers
// and ones that round to zero start a run.
func TestServerEventNumberRange(t *testing.T) {
	base, srv := startServer(t, testTokens, HTTPLimits{})
	for _, tc := range []struct {
		name, number string
		want         int
		says         string
	}{
		{"the largest float64", "1.7976931348623157e308", http.StatusAccepted, ""},
		{"the most negative float64", "-1.7976931348623157e308", http.StatusAccepted, ""},
		{"rounds to zero", "1e-999", http.StatusAccepted, ""},
		{"just above the largest float64", "1.8e308", http.StatusBadRequest, "metadata.order.total: the number 1.8e308 is out of range"},
		{"1e999", "1e999", http.StatusBadRequest, "metadata.order.total: the number 1e999 is out of range"},
		{"-1e999 in a list", "[1, -1e999]", http.StatusBadRequest, "metadata.order.total[1]: the number -1e999 is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"event": "order.created", "summary": "order", "data": {"order": {"total": ` + tc.number + `}}}`
			req, _ := http.NewRequest("POST", base+"/webhook?source=generic", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tokPayments)
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(b), tc.says) {
				t.Fatalf("status %d %s; want %d saying %q", resp.StatusCode, b, tc.want, tc.says)
			}
			if tc.want != http.StatusBadRequest {
				return
			}
			var answer map[string]any
			if json.Unmarshal(b, &answer) != nil || answer["run_id"] != nil {
				t.Errorf("answer %s", b)
			}
			running, err := srv.runner.Store.ListRuns(context.Background(), store.RunFilter{Status: store.RunRunning})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range running {
				if strings.Contains(string(r.Trigger), tc.number) {
					t.Errorf("run %s is left running: %s", r.ID, r.Trigger)
				}
			}
		})
	}
}

// TestServerEventKeyLimits: an idempotency key the store cannot hold (over
// store.MaxIDBytes, a NUL byte) is the sender's mistake:
// 400 with what is wrong, not 500; one at the limit starts a run.
func TestServerEventKeyLimits(t *testing.T) {
	base, _ := startServer(t, testTokens, HTTPLimits{})
	for _, tc := range []struct {
		name, key string
		want      int
		says      string
	}{
		{"at the limit", strings.Repeat("k", store.MaxIDBytes), http.StatusAccepted, ""},
		{"above the limit", strings.Repeat("k", store.MaxIDBytes+1), http.StatusBadRequest, "fingerprint is 513 bytes, limit 512"},
		{"a NUL byte", "a\u0000b", http.StatusBadRequest, "fingerprint contains a NUL byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, _ := json.Marshal(tc.key)
			body := `{"event": "order.created", "summary": "order", "idempotency_key": ` + string(key) + `}`
			req, _ := http.NewRequest("POST", base+"/webhook?source=generic", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tokPayments)
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(b), tc.says) {
				t.Errorf("status %d %s; want %d saying %q", resp.StatusCode, b, tc.want, tc.says)
			}
		})
	}
}
