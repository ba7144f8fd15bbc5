package tasktoken

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/shared/task"
)

type fakeSender struct {
	got []*sfn.SendTaskSuccessInput
	err error
}

func (f *fakeSender) SendTaskSuccess(_ context.Context, in *sfn.SendTaskSuccessInput, _ ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	f.got = append(f.got, in)
	return &sfn.SendTaskSuccessOutput{}, f.err
}

func TestResume(t *testing.T) {
	f := &fakeSender{}
	err := Resume(f)(context.Background(), "token-1", task.Decision{Decision: task.Approve, By: "Alice"})
	if err != nil || len(f.got) != 1 {
		t.Fatalf("err %v, %d calls", err, len(f.got))
	}
	var d task.Decision
	if aws.ToString(f.got[0].TaskToken) != "token-1" || json.Unmarshal([]byte(aws.ToString(f.got[0].Output)), &d) != nil || d.Decision != "approve" || d.By != "Alice" {
		t.Errorf("sent %q %q", aws.ToString(f.got[0].TaskToken), aws.ToString(f.got[0].Output))
	}
	f.err = errors.New("TaskTimedOut")
	if err := Resume(f)(context.Background(), "token-2", task.Decision{Decision: task.Reject}); err == nil || !strings.Contains(err.Error(), "TaskTimedOut") {
		t.Errorf("err = %v", err)
	}
}
