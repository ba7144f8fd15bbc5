package sqlite

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenWaitsForWALConversion opens a file in rollback mode while
// another connection holds a write transaction on it (as another process
// does while it creates the schema). Turning the file to WAL mode needs a
// read transaction upgraded to a write, which SQLite refuses at once with
// SQLITE_BUSY rather than wait: Open must wait and retry until the other
// writer is done, below BusyTimeout, and not fail.
func TestOpenWaitsForWALConversion(t *testing.T) {
	for _, hold := range []time.Duration{0, 50 * time.Millisecond, 400 * time.Millisecond} {
		t.Run(hold.String(), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "rollback.db")
			abs, _ := filepath.Abs(path)
			other, err := connect("file:"+(&url.URL{Path: abs}).EscapedPath(), url.Values{"_journal_mode": {"DELETE"}})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			conn, err := other.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range []string{"CREATE TABLE other (a)", "BEGIN IMMEDIATE", "INSERT INTO other VALUES (1)"} {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			released := make(chan time.Time, 1)
			go func() {
				time.Sleep(hold)
				// The other writer has no busy timeout: its COMMIT fails
				// with SQLITE_BUSY while Open's connection holds a read
				// lock for a moment, and is tried again, as a writer with
				// a busy handler would (an ignored failure kept the lock
				// forever and timed Open out on a loaded machine).
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					if _, err := conn.ExecContext(ctx, "COMMIT"); err == nil || time.Now().After(deadline) {
						break
					}
				}
				released <- time.Now()
			}()
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatalf("open while another connection writes: %v", err)
			}
			defer s.Close()
			if at := <-released; time.Now().Before(at) {
				t.Fatal("open returned before the other writer was done")
			}
			var mode string
			if err := s.r.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
				t.Fatalf("journal mode %q (%v), want wal", mode, err)
			}
		})
	}
}

// TestRetryBusy: busy errors are retried until the limit, other errors and
// success end the retries at once.
func TestRetryBusy(t *testing.T) {
	tests := []struct {
		name      string
		failures  int // busy answers before success
		other     bool
		limit     time.Duration
		wantCalls int
		wantErr   bool
	}{
		{"success at once", 0, false, time.Second, 1, false},
		{"busy, then success within the limit", 3, false, time.Second, 4, false},
		{"other error is not retried", 0, true, time.Second, 1, true},
		{"busy past the limit", 1000, false, 30 * time.Millisecond, -1, true},
		{"zero limit: one try", 1000, false, 0, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			start := time.Now()
			err := retryBusy(context.Background(), func(context.Context) error {
				calls++
				switch {
				case tt.other:
					return errors.New("no such table")
				case calls <= tt.failures:
					return errBusyForTest
				}
				return nil
			}, tt.limit)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if tt.wantCalls >= 0 && calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", calls, tt.wantCalls)
			}
			if took := time.Since(start); took > tt.limit+200*time.Millisecond {
				t.Errorf("took %v, limit %v", took, tt.limit)
			}
			if tt.wantErr && !tt.other && !isBusy(err) {
				t.Errorf("error %v is not the busy error", err)
			}
		})
	}
}

// codedError is an error with an SQLite result code, as the driver's.
type codedError int

func (e codedError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e codedError) Code() int     { return int(e) }

// errBusyForTest is SQLITE_BUSY_SNAPSHOT (517), an extended busy code.
var errBusyForTest error = fmt.Errorf("begin: %w", codedError(517))
