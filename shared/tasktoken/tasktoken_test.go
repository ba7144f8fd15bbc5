package tasktoken

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/task"
)

type sent struct{ token, output string }

type fakeSender struct {
	got []sent
	err error
}

func (f *fakeSender) SendTaskSuccess(_ context.Context, taskToken, output string) error {
	f.got = append(f.got, sent{taskToken, output})
	return f.err
}

func TestResume(t *testing.T) {
	f := &fakeSender{}
	err := Resume(f)(context.Background(), "token-1", task.Decision{Decision: task.Approve, By: "Alice"})
	if err != nil || len(f.got) != 1 {
		t.Fatalf("err %v, %d calls", err, len(f.got))
	}
	var d task.Decision
	if f.got[0].token != "token-1" || json.Unmarshal([]byte(f.got[0].output), &d) != nil || d.Decision != "approve" || d.By != "Alice" {
		t.Errorf("sent %q %q", f.got[0].token, f.got[0].output)
	}
	f.err = errors.New("TaskTimedOut")
	if err := Resume(f)(context.Background(), "token-2", task.Decision{Decision: task.Reject}); err == nil || !strings.Contains(err.Error(), "TaskTimedOut") {
		t.Errorf("err = %v", err)
	}
}
